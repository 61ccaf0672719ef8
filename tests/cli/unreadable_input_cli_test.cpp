// Inputs that are no recording, for every subcommand that reads one: a directory and an endless
// device. Each is refused within seconds with a sentence that says what is wrong, never with a
// library's exception text (vector::_M_default_append, std::bad_alloc) or an endless read.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::vector<std::vector<std::string>> readers{
    {"report", "--stdio"}, {"script"}, {"annotate"}, {"archive"}, {"sched", "timehist"}};

pt::CommandResult run_with_input(const std::vector<std::string>& command,
                                 const std::string& input) {
  std::vector<std::string> argv{"/usr/bin/timeout", "5", PERFSCOPE_CLI_PATH};
  argv.insert(argv.end(), command.begin(), command.end());
  argv.insert(argv.end(), {"-i", input});
  return pt::run_command(argv);
}

TEST(UnreadableInput, DirectoryIsRefusedByName) {
  pt::TempDir dir;
  for (const auto& command : readers) {
    SCOPED_TRACE(command.front());
    pt::CommandResult result = run_with_input(command, dir.path());
    EXPECT_EQ(result.exit_status, 1) << result.err;
    EXPECT_NE(result.err.find("cannot read " + dir.path() + ": it is a directory"),
              std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("-i " + dir.path() + "/perf.data"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("vector::"), std::string::npos) << result.err;
  }
}

TEST(UnreadableInput, EndlessDeviceIsRefusedAtItsFirstBytes) {
  for (const auto& command : readers) {
    SCOPED_TRACE(command.front());
    auto start = std::chrono::steady_clock::now();
    pt::CommandResult result = run_with_input(command, "/dev/zero");
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(result.exit_status, 1) << result.err;  // 124 would be timeout's
    EXPECT_LT(seconds, 5.0);
    EXPECT_NE(result.err.find("not a perf.data file"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("bad_alloc"), std::string::npos) << result.err;
  }
}

}  // namespace
