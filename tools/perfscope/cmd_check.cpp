// perfscope check feature NAME[,NAME...]: whether this build has each feature, one line each in
// perf's layout; exit 0 when every one is on (perf 6.12's perf check).
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "build_features.hpp"
#include "commands.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

CheckCommand::CheckCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "check");
  app_->require_subcommand(1);
  app_->add_flag("-q,--quiet", quiet_, "Print nothing: the exit status answers");
  feature_ = app_->add_subcommand(
      "feature", "Whether this build has the features (names or HAVE_ macros, comma-separated)");
  feature_->add_option("features", feature_lists_, "Feature names, as version --build-options")
      ->required()
      ->expected(1);
  feature_->add_flag("-q,--quiet", quiet_, "Print nothing: the exit status answers");
  app_->footer(
      "Examples:\n"
      "  perfscope check feature libpython && perfscope script -s stackcollapse.py\n"
      "  perfscope check -q feature dwarf-unwind,libtraceevent");
}

int CheckCommand::run() {
  bool all_on = true;
  std::string_view list = feature_lists_.front();
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (name.empty()) continue;
    auto feature = find_build_feature(name);
    if (!feature) {
      all_on = false;
      if (!quiet_) {
        std::fflush(stdout);
        fmt::print(stderr,
                   "Unknown feature '{}', please use 'perfscope version --build-options' to see "
                   "which ones are available.\n",
                   name);
      }
      continue;
    }
    all_on = all_on && feature->on;
    if (!quiet_) {
      std::string line = build_feature_line(*feature);
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
  }
  return all_on ? 0 : 1;
}

}  // namespace perfscope::cli
