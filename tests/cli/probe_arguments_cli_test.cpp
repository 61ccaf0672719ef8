// perf probe's arguments by name on perfscope (issue #45): C variables of a uprobe's function
// turned into the kernel's fetch arguments from the binary's DWARF (registers at -O2, stack slots
// after the prologue at -O0, fields, strings, globals, $params, $vars), the same tracefs line as
// perf probe makes, perf's --line and --vars views, and values that are the calls' own when
// recorded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string unoptimized = PERFSCOPE_PROBE_TARGET_O0_PATH;
const std::string optimized = PERFSCOPE_PROBE_TARGET_O2_PATH;

bool tracefs_readable() {
  return pt::tracefs_available() && ::access("/sys/kernel/tracing/README", R_OK) == 0;
}

TEST(ProbeArguments, DefinitionsAreThoseOfPerf) {
  if (!tracefs_readable()) GTEST_SKIP() << "tracefs is not readable here";
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  const std::vector<std::string> definitions{
      "work n m s p->x p->name:string",
      "work n:u8 m:x32 s:string",
      "work $params",
      "work $vars",
      "w=work n",
      "work p->next->x p->corners[2] p->next->name:string",
      "work global_count",
      "work p->y:s",
      "work $comm %di n=%si:u32",
      "main argc",
  };
  for (const std::string& binary : {unoptimized, optimized}) {
    for (const std::string& definition : definitions) {
      auto theirs = pt::run_command({perf_path, "probe", "-x", binary, "-D", definition});
      ASSERT_EQ(theirs.exit_status, 0) << definition << "\n" << theirs.err;
      auto ours = pt::run_perfscope({"probe", "-x", binary, "-D", definition});
      EXPECT_EQ(ours.exit_status, 0) << definition << "\n" << ours.err;
      EXPECT_EQ(ours.out, theirs.out) << binary << ": " << definition;
      // At -O0, perf's notice that the probe moved past the prologue.
      EXPECT_EQ(ours.err, theirs.err) << binary << ": " << definition;
    }
  }
}

TEST(ProbeArguments, LinesAndVariablesAreThoseOfPerf) {
  if (!tracefs_readable()) GTEST_SKIP() << "tracefs is not readable here";
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  for (const std::string& binary : {unoptimized, optimized}) {
    for (const std::vector<std::string>& view : {std::vector<std::string>{"-L", "work"},
                                                 {"-L", "main"},
                                                 {"-V", "work"},
                                                 {"-V", "main"},
                                                 {"-V", "work", "--externs"}}) {
      std::vector<std::string> words{"probe", "-x", binary};
      words.insert(words.end(), view.begin(), view.end());
      std::vector<std::string> perf_words{perf_path};
      perf_words.insert(perf_words.end(), words.begin(), words.end());
      auto theirs = pt::run_command(perf_words);
      ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
      auto ours = pt::run_perfscope(words);
      EXPECT_EQ(ours.exit_status, 0) << ours.err;
      EXPECT_EQ(ours.out, theirs.out) << binary << " " << view[0] << " " << view[1];
    }
  }
}

TEST(ProbeArguments, WhatCannotBeFetchedSaysWhy) {
  if (!tracefs_readable()) GTEST_SKIP() << "tracefs is not readable here";
  const std::vector<std::pair<std::string, std::string>> refusals{
      {"work nosuch", "Failed to find the location of the 'nosuch' variable at this address."},
      {"work p.x", "Semantic error: x must be referred by '->'"},
      {"work n->x", "n is not a data structure nor a union."},
      {"work p->nosuch", "has no member nosuch."},
      {"work n:string", "Failed to cast into string: n(int) is not a pointer nor array."},
      {"work%return n", "You can't specify local variable for kretprobe."},
      {"no_such_function n", "Probe point 'no_such_function' not found"},
  };
  for (const auto& [definition, reason] : refusals) {
    auto ours = pt::run_perfscope({"probe", "-x", optimized, "-D", definition});
    EXPECT_EQ(ours.exit_status, 1) << definition;
    EXPECT_NE(ours.err.find(reason), std::string::npos) << definition << "\n" << ours.err;
    EXPECT_EQ(ours.out, "") << definition;
  }
  // A binary without DWARF: by name needs it, raw arguments do not.
  auto bare = pt::run_perfscope({"probe", "-x", "/bin/true", "-D", "main n"});
  if (bare.err.find("no such function") == std::string::npos) {
    EXPECT_EQ(bare.exit_status, 1);
    EXPECT_NE(bare.err.find("has no DWARF debug information"), std::string::npos) << bare.err;
  }
}

class ProbeArgumentsRecorded : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pt::running_as_root()) GTEST_SKIP() << "uprobes are made by root";
    if (!tracefs_readable()) GTEST_SKIP() << "tracefs is not readable here";
    if (::access("/sys/kernel/tracing/uprobe_events", W_OK) != 0) {
      GTEST_SKIP() << "this kernel has no uprobe_events";
    }
  }
  void TearDown() override {
    pt::run_perfscope({"probe", "-q", "-d", "probe_probe_arguments_target_O*:" + event_ + "*"});
  }
  const std::string event_ = "perfscope_args_" + std::to_string(::getpid());
};

TEST_F(ProbeArgumentsRecorded, EachCallsValuesAreFetched) {
  for (const std::string& binary : {unoptimized, optimized}) {
    SCOPED_TRACE(binary);
    std::string group = binary == unoptimized ? "probe_probe_arguments_target_O0"
                                              : "probe_probe_arguments_target_O2";
    auto added = pt::run_perfscope(
        {"probe", "-x", binary, "--add", event_ + "=work n m s:string p->next->x"});
    ASSERT_EQ(added.exit_status, 0) << added.err;
    EXPECT_NE(added.err.find("(on work in " + binary + " with n m s:string x=p->next->x)"),
              std::string::npos)
        << added.err;
    // Listed as perf lists it: the place from DWARF (the line relative to the function's at
    // -O0, past the prologue; the entry at -O2) and the fetched values' names.
    auto listed = pt::run_perfscope({"probe", "-l", group + ":" + event_});
    EXPECT_NE(listed.out.find(" with n m s_string x)"), std::string::npos) << listed.out;
    EXPECT_NE(listed.out.find(binary == unoptimized ? "(on work:1@" : "(on work@"),
              std::string::npos)
        << listed.out;
    if (::access(perf_path.c_str(), X_OK) == 0) {
      auto theirs = pt::run_command({perf_path, "probe", "-l", group + ":" + event_});
      EXPECT_EQ(listed.out, theirs.out);
    }
    pt::TempDir dir;
    std::string data = dir.path() + "/args.data";
    auto recorded = pt::run_perfscope(
        {"record", "-q", "-e", group + ":" + event_, "-o", data, "--", binary, "100"});
    ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
    auto script = pt::run_perfscope({"script", "-F", "trace", "-i", data});
    ASSERT_EQ(script.exit_status, 0) << script.err;
    // Call i: n = i % 7, m = 1000 + i, the string literal and the second point's x, in order.
    std::istringstream lines(script.out);
    int call = 0;
    for (std::string line; std::getline(lines, line); ++call) {
      std::string expected = "n=" + std::to_string(call % 7) + " m=" + std::to_string(1000 + call) +
                             " s_string=\"label\" x=8";
      EXPECT_NE(line.find(expected), std::string::npos) << line;
    }
    EXPECT_EQ(call, 100);
    if (::access(perf_path.c_str(), X_OK) == 0) {
      auto theirs = pt::run_command({perf_path, "script", "-F", "trace", "-i", data});
      EXPECT_EQ(script.out, theirs.out);
    }
    pt::run_perfscope({"probe", "-q", "-d", group + ":" + event_});
  }
}

}  // namespace
