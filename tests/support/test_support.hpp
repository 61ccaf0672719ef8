// Helpers shared by the tests: conditions to skip on, and running the perfscope CLI.
#pragma once

#include <string>
#include <vector>

namespace perfscope::testing {

bool running_as_root();
// True when a hardware instructions counter opens for this process (real PMU present).
bool hardware_counters_available();
// True when tracefs is mounted with events (tracepoint tests need it).
bool tracefs_available();

struct CommandResult {
  int exit_status = -1;  // shell-style: exit code, or 128 + signal
  std::string out;       // stdout
  std::string err;       // stderr
};
// Runs argv (no shell), capturing stdout and stderr.
CommandResult run_command(const std::vector<std::string>& argv);
// Runs the built perfscope CLI with these arguments.
CommandResult run_perfscope(const std::vector<std::string>& arguments);

}  // namespace perfscope::testing
