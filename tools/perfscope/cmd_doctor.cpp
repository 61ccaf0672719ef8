// perfscope doctor: what this machine can measure, and what to change where it cannot.
#include <fmt/format.h>

#include "commands.hpp"

namespace perfscope::cli {

DoctorCommand::DoctorCommand(CLI::App& app) {
  app_ = app.add_subcommand("doctor", "Say what this machine can measure and how to fix what not");
  app_->add_option("--binary", binary_, "Also check this binary for frame pointers and symbols");
  app_->add_flag("--json", json_, "Machine-readable output");
}

int DoctorCommand::run() {
  fmt::print("perfscope doctor\n");
  return 0;
}

}  // namespace perfscope::cli
