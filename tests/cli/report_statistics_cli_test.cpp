// report --stats, --tasks and --mmaps (issue #44): each record type's count and the tree of
// tasks with their mappings, the same bytes as perf report on the same file: perf's recordings
// (plain, compressed with -z, in pipe mode, system-wide) and perfscope's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";

class ReportStatisticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  }
  // A shell that forks ls and sleep, recorded by `recorder` with `options`.
  std::string record(const std::string& recorder, const std::vector<std::string>& options) {
    std::string file = dir_.path() + "/" + recorder + std::to_string(++files_) + ".data";
    std::vector<std::string> command{"record", "-q"};
    command.insert(command.end(), options.begin(), options.end());
    for (const char* word : {"--", "/bin/sh", "-c", "ls / >/dev/null; sleep 0.01"}) {
      command.push_back(word);
    }
    bool to_stdout = std::find(options.begin(), options.end(), "-") != options.end();
    if (!to_stdout) command.insert(command.begin() + 2, {"-o", file});
    auto result = pt::run_perf_or_perfscope(recorder, command);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    if (to_stdout) std::ofstream(file, std::ios::binary) << result.out;
    return file;
  }
  // perf report and perfscope report with `option`: the same bytes on stdout.
  std::string expect_as_perfs(const std::string& file, const std::string& option) {
    auto perf = pt::run_command({perf_path, "report", "-i", file, option});
    auto ours = pt::run_perfscope({"report", "-i", file, option});
    EXPECT_EQ(perf.exit_status, 0) << perf.err;
    EXPECT_EQ(ours.exit_status, 0) << ours.err;
    EXPECT_EQ(ours.out.size(), perf.out.size()) << file << " " << option;
    // The first line that differs, not the whole listing (a system's tasks are thousands).
    std::istringstream perf_lines(perf.out), our_lines(ours.out);
    std::string perf_line, our_line;
    for (int line = 1; std::getline(perf_lines, perf_line); ++line) {
      std::getline(our_lines, our_line);
      if (our_line == perf_line) continue;
      ADD_FAILURE() << file << " " << option << ", line " << line << ":\nperf: " << perf_line
                    << "\nours: " << our_line;
      break;
    }
    return ours.out;
  }
  pt::TempDir dir_;
  int files_ = 0;
};

TEST_F(ReportStatisticsTest, RecordCountsAsPerfs) {
  for (const std::string recorder : {"perf", "perfscope"}) {
    std::string file = record(recorder, {});
    std::string stats = expect_as_perfs(file, "--stats");
    EXPECT_NE(stats.find("Aggregated stats:\n           TOTAL events: "), std::string::npos);
    EXPECT_NE(stats.find("            FORK events:          2  ("), std::string::npos) << stats;
    EXPECT_NE(stats.find(" stats:\n          SAMPLE events: "), std::string::npos) << stats;
  }
  // perf's compressed records (-z) count once each, with what they carried; pipe mode's
  // ATTR and FEATURE records count too.
  std::string compressed = record("perf", {"-z"});
  EXPECT_NE(expect_as_perfs(compressed, "--stats").find("      COMPRESSED events: "),
            std::string::npos);
  // --no-skip-empty: every type perf 6.1 names, counted or not.
  std::string every_type =
      pt::run_command({perf_path, "report", "-i", compressed, "--stats", "--no-skip-empty"}).out;
  EXPECT_EQ(pt::run_perfscope({"report", "-i", compressed, "--stats", "--no-skip-empty"}).out,
            every_type);
  EXPECT_NE(every_type.find("        THROTTLE events:          0  ( 0.0%)\n"), std::string::npos)
      << every_type;
  std::string piped = record("perf", {"-o", "-"});
  EXPECT_NE(expect_as_perfs(piped, "--stats").find("         FEATURE events: "), std::string::npos);
}

TEST_F(ReportStatisticsTest, TaskTreeAsPerfs) {
  for (const std::string recorder : {"perf", "perfscope"}) {
    std::string file = record(recorder, {});
    std::string tasks = expect_as_perfs(file, "--tasks");
    // The idle task, the shell, and its two children one level in.
    EXPECT_EQ(
        tasks.find("#      pid      tid     ppid  comm\n         0        0       -1 |swapper\n"),
        0u)
        << tasks;
    EXPECT_NE(tasks.find("|sh\n"), std::string::npos) << tasks;
    EXPECT_NE(tasks.find("| ls\n"), std::string::npos) << tasks;
    EXPECT_NE(tasks.find("| sleep\n"), std::string::npos) << tasks;
  }
  std::string compressed = record("perf", {"-z"});
  expect_as_perfs(compressed, "--tasks");
}

TEST_F(ReportStatisticsTest, TaskMapsAsPerfs) {
  // --mmaps: each task's process's mappings under it, the shell's children's copied at the fork
  // and replaced at the exec where the new ones overlap; data mappings (-d) too.
  for (const std::string recorder : {"perf", "perfscope"}) {
    for (const std::vector<std::string>& options : {std::vector<std::string>{}, {"-d"}}) {
      std::string file = record(recorder, options);
      std::string maps = expect_as_perfs(file, "--mmaps");
      EXPECT_NE(maps.find(" r-xp "), std::string::npos) << maps;
      EXPECT_NE(maps.find("/ls\n"), std::string::npos) << maps;
    }
  }
}

TEST_F(ReportStatisticsTest, EveryTaskOfTheMachineAsPerfs) {
  if (!pt::running_as_root()) GTEST_SKIP() << "a system-wide recording needs root at paranoid 2";
  // Every process on the machine, synthesized with its parent (kernel threads under kthreadd),
  // in perf's order of its thread table.
  std::string file = dir_.path() + "/system.data";
  auto recorded =
      pt::run_command({perf_path, "record", "-q", "-a", "-o", file, "--", "sleep", "0.1"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  std::string tasks = expect_as_perfs(file, "--tasks");
  EXPECT_GE(std::count(tasks.begin(), tasks.end(), '\n'), 20) << tasks;
  expect_as_perfs(file, "--stats");
  std::string ours = dir_.path() + "/system-ours.data";
  recorded = pt::run_perfscope({"record", "-q", "-a", "-o", ours, "--", "sleep", "0.1"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  expect_as_perfs(ours, "--tasks");
  expect_as_perfs(ours, "--stats");
  expect_as_perfs(file, "--mmaps");
  expect_as_perfs(ours, "--mmaps");
}

}  // namespace
