// perf's command names on perfscope (issue #45): every one is a perfscope command or answers with
// what perf does there and what perfscope offers; `version --build-options` and `check feature`
// in perf's layout, with perf 6.1's own lines where the two builds agree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// perf 6.1's commands (perf --list-cmds) and the newer perf's check.
std::set<std::string> perf_command_names() {
  std::set<std::string> names{
      "annotate", "archive",   "bench",  "buildid-cache", "buildid-list", "c2c",    "check",
      "config",   "daemon",    "data",   "diff",          "evlist",       "ftrace", "inject",
      "iostat",   "kallsyms",  "kmem",   "kvm",           "kwork",        "list",   "lock",
      "mem",      "probe",     "record", "report",        "sched",        "script", "stat",
      "test",     "timechart", "top",    "trace",         "version"};
  if (::access(perf_path.c_str(), X_OK) == 0) {
    auto listed = pt::run_command({perf_path, "--list-cmds"});
    std::istringstream words(listed.out);  // one line, blank-separated
    for (std::string name; words >> name;) {
      if (name != "help") names.insert(name);
    }
  }
  return names;
}

TEST(PerfCommands, EveryPerfCommandNameIsOneOrSaysWhatPerfscopeOffers) {
  for (const std::string& name : perf_command_names()) {
    auto result = pt::run_perfscope({name, "--help"});
    EXPECT_EQ(result.err.find("is not a perfscope command"), std::string::npos)
        << name << ": " << result.err;
    if (result.exit_status == 0) {
      EXPECT_NE(result.out.find(name), std::string::npos) << name << ": " << result.out;
    } else {
      EXPECT_EQ(result.exit_status, 1) << name;
      // One sentence: what perf does there, then what perfscope offers.
      EXPECT_EQ(result.err.rfind("perfscope: perf " + name + " ", 0), 0u) << result.err;
      EXPECT_NE(result.err.find("; perfscope "), std::string::npos) << result.err;
      EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
    }
  }
  // A name perf does not have still gets the command list's answer.
  auto unknown = pt::run_perfscope({"flamegrap"});
  EXPECT_EQ(unknown.exit_status, 1);
  EXPECT_NE(unknown.err.find("is not a perfscope command"), std::string::npos) << unknown.err;
}

TEST(PerfCommands, BuildOptionsInPerfsLayoutWithPerfsLinesWhereTheBuildsAgree) {
  auto ours = pt::run_perfscope({"version", "--build-options"});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  auto lines = lines_of(ours.out);
  ASSERT_GT(lines.size(), 20u) << ours.out;
  EXPECT_EQ(lines.front().rfind("perfscope ", 0), 0u) << lines.front();
  static const std::regex layout(R"( *([A-Za-z0-9_-]+): \[ (on |OFF) \]  # (HAVE_[A-Z0-9_]+))");
  std::set<std::string> names;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(lines[i], match, layout)) << lines[i];
    EXPECT_EQ(lines[i].find(':'), 22u) << lines[i];  // names right-aligned in 22 columns
    names.insert(match[1]);
  }
  for (const char* name : {"dwarf", "dwarf-unwind", "libelf", "libpython", "libtraceevent", "zlib",
                           "zstd", "lzma", "libLLVM", "bpf", "libunwind", "aio"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
  // What perfscope has and perf 6.1 here has too prints perf's very line (6.1 names some
  // macros as its time did: those lines are left out).
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  auto perf = pt::run_command({perf_path, "version", "--build-options"});
  std::set<std::string> ours_lines(lines.begin() + 1, lines.end());
  std::size_t shared = 0;
  for (const std::string& line : lines_of(perf.out)) {
    for (const char* name : {"libelf", "libpython", "zlib", "lzma", "zstd"}) {
      if (line.find(std::string(" ") + name + ": [ on  ]") != std::string::npos) {
        EXPECT_TRUE(ours_lines.count(line)) << "perf's line missing: " << line;
        ++shared;
      }
    }
  }
  EXPECT_GE(shared, 4u) << perf.out;
}

TEST(PerfCommands, CheckFeatureAnswersWithItsExitStatus) {
  auto on = pt::run_perfscope({"check", "feature", "libpython,dwarf-unwind"});
  EXPECT_EQ(on.exit_status, 0) << on.err;
  EXPECT_EQ(on.out,
            "             libpython: [ on  ]  # HAVE_LIBPYTHON_SUPPORT\n"
            "          dwarf-unwind: [ on  ]  # HAVE_DWARF_UNWIND_SUPPORT\n");
  // Any case, by macro too; one feature off makes the list off.
  auto mixed = pt::run_perfscope({"check", "feature", "have_libtraceevent,BPF"});
  EXPECT_EQ(mixed.exit_status, 1);
  EXPECT_EQ(mixed.out,
            "         libtraceevent: [ on  ]  # HAVE_LIBTRACEEVENT\n"
            "                   bpf: [ OFF ]  # HAVE_LIBBPF_SUPPORT\n");
  auto quiet = pt::run_perfscope({"check", "-q", "feature", "zstd"});
  EXPECT_EQ(quiet.exit_status, 0);
  EXPECT_EQ(quiet.out + quiet.err, "");
  auto unknown = pt::run_perfscope({"check", "feature", "teleport"});
  EXPECT_EQ(unknown.exit_status, 1);
  EXPECT_NE(unknown.err.find("Unknown feature 'teleport'"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("version --build-options"), std::string::npos) << unknown.err;
  auto bare = pt::run_perfscope({"check"});
  EXPECT_NE(bare.exit_status, 0);
  EXPECT_NE(bare.err.find("feature"), std::string::npos) << bare.err;
}

// perf sched script is perf script; so is perfscope's, on the scheduler recording.
TEST(PerfCommands, SchedScriptIsScript) {
  pt::TempDir dir;
  std::string data = dir.path() + "/sched.data";
  auto recorded = pt::run_perfscope({"sched", "record", "-o", data, "--", "sleep", "0.05"});
  if (recorded.exit_status != 0) GTEST_SKIP() << "sched record fails here: " << recorded.err;
  auto sched_script = pt::run_perfscope({"sched", "script", "-i", data});
  auto script = pt::run_perfscope({"script", "-i", data});
  ASSERT_EQ(sched_script.exit_status, 0) << sched_script.err;
  EXPECT_NE(sched_script.out.find("sched:sched_switch: prev_comm="), std::string::npos)
      << sched_script.out.substr(0, 800);
  EXPECT_EQ(sched_script.out, script.out);
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  EXPECT_EQ(sched_script.out, pt::run_command({perf_path, "sched", "script", "-i", data}).out);
}

// perf trace record is a recording of every call's enter and exit: perf trace -i and perfscope
// trace -i replay perfscope's alike, the helper's 1000 getpid calls exactly.
TEST(PerfCommands, TraceRecordIsWhatPerfTraceReplays) {
  if (!pt::tracefs_available() || !pt::running_as_root()) GTEST_SKIP() << "tracefs as root";
  pt::TempDir dir;
  std::string data = dir.path() + "/trace.data";
  auto recorded = pt::run_perfscope(
      {"trace", "record", "-q", "-o", data, "--", PERFSCOPE_WORK_HELPER_PATH, "getpid", "1000"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto events = pt::run_perfscope({"evlist", "-i", data});
  EXPECT_EQ(events.out.rfind("raw_syscalls:sys_enter\nraw_syscalls:sys_exit\n", 0), 0u)
      << events.out;
  // trace -i replays it: every getpid, and a summary of the whole recording.
  auto ours = pt::run_perfscope({"trace", "-s", "-i", data});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  auto lines = pt::run_perfscope({"trace", "-i", data, "-e", "getpid"});
  std::size_t calls = 0;
  for (std::size_t at = 0; (at = lines.err.find(" getpid() = ", at)) != std::string::npos; ++at) {
    ++calls;
  }
  EXPECT_EQ(calls, 1000u) << lines.err.substr(0, 600);
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  auto replayed = pt::run_command({perf_path, "trace", "-s", "-i", data});
  // perf's summary table, line for line.
  EXPECT_EQ(ours.err, replayed.err);
  std::regex getpid_row(R"(\n +getpid +([0-9]+) +0 )");
  std::smatch row;
  ASSERT_TRUE(std::regex_search(replayed.err, row, getpid_row)) << replayed.err << replayed.out;
  EXPECT_EQ(row[1], "1000");
}

}  // namespace
