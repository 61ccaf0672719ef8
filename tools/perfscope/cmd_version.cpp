// perfscope version [--build-options]: the version, and what this build can do under perf's
// feature names (perf version --build-options).
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "build_features.hpp"
#include "commands.hpp"
#include "perfscope/version.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

VersionCommand::VersionCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "version");
  app_->add_flag("--build-options", build_options_,
                 "Also list the features this build has, as perf version --build-options does");
}

int VersionCommand::run() {
  std::string out = fmt::format("{}\n", version_banner);
  if (build_options_) {
    for (const BuildFeature& feature : build_features()) out += build_feature_line(feature);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace perfscope::cli
