// script's --show-*-events (issue #44): the side-band records of a recording (tasks, mappings,
// context switches, losses, namespaces, cgroups, rounds) printed as perf script prints them, on
// perf's recordings and on perfscope's, compared line for line with perf on the same file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;

// The lines of `script` output that are not a sample's (a sample's line names its event; with -g
// its frames follow on lines of their own, which these recordings do not have).
std::vector<std::string> side_band_lines(const std::string& text) {
  std::istringstream lines(text);
  std::vector<std::string> kept;
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" cpu-clock") != std::string::npos) continue;
    if (line.find(" syscalls:sys_enter_getpid:") != std::string::npos) continue;
    kept.push_back(line);
  }
  return kept;
}

// perf script and perfscope script with `options` on `file`: the same side-band lines, in the same
// places among the samples (as many lines before each). Returns how many side-band lines there
// were.
std::size_t expect_side_band_as_perfs(const std::string& file,
                                      const std::vector<std::string>& options) {
  std::vector<std::string> perf_command{perf_path, "script", "-i", file};
  std::vector<std::string> our_command{"script", "-i", file};
  perf_command.insert(perf_command.end(), options.begin(), options.end());
  our_command.insert(our_command.end(), options.begin(), options.end());
  auto perf = pt::run_command(perf_command);
  auto ours = pt::run_perfscope(our_command);
  EXPECT_EQ(perf.exit_status, 0) << perf.err;
  EXPECT_EQ(ours.exit_status, 0) << ours.err;
  auto perfs = side_band_lines(perf.out), our_lines = side_band_lines(ours.out);
  EXPECT_EQ(our_lines, perfs) << file;
  EXPECT_EQ(std::count(ours.out.begin(), ours.out.end(), '\n'),
            std::count(perf.out.begin(), perf.out.end(), '\n'))
      << file;
  return perfs.size();
}

bool perf_records() {
  if (::access(perf_path.c_str(), X_OK) != 0) return false;
  return pt::run_command({perf_path, "record", "-q", "-o", "/dev/null", "--", "true"})
             .exit_status == 0;
}

// A shell that runs two programs, recorded by perf and by perfscope with context switches.
class SideBandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!perf_records()) GTEST_SKIP() << "Linux perf is not installed or cannot record here";
  }
  std::string record(const std::string& recorder, const std::vector<std::string>& options) {
    std::string file = dir_.path() + "/" + recorder + std::to_string(++files_) + ".data";
    std::vector<std::string> command{"record", "-q", "-o", file};
    command.insert(command.end(), options.begin(), options.end());
    for (const char* word : {"--", "/bin/sh", "-c", "ls / >/dev/null; sleep 0.01"}) {
      command.push_back(word);
    }
    auto result = pt::run_perf_or_perfscope(recorder, command);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return file;
  }
  pt::TempDir dir_;
  int files_ = 0;
};

TEST_F(SideBandTest, TasksMappingsAndSwitchesAsPerfPrintsThem) {
  for (const std::string recorder : {"perf", "perfscope"}) {
    std::string file = record(recorder, {"--switch-events"});
    // Every COMM, FORK, EXIT, MMAP and MMAP2 of the shell, ls and sleep, and their switches.
    std::size_t lines = expect_side_band_as_perfs(
        file, {"--show-task-events", "--show-mmap-events", "--show-switch-events"});
    EXPECT_GE(lines, 20u) << recorder;
    EXPECT_GE(expect_side_band_as_perfs(file, {"--show-task-events"}), 8u) << recorder;
    EXPECT_GE(expect_side_band_as_perfs(file, {"--show-mmap-events", "-F", "comm,pid,tid,time"}),
              6u)
        << recorder;
    // File order with the rounds that order perf's reading.
    EXPECT_GE(expect_side_band_as_perfs(file, {"--show-round-events", "--show-task-events"}), 9u)
        << recorder;
    // A call-graph recording: the comm column loses its padding, on every line.
    std::string with_stacks = record(recorder, {"-g"});
    expect_side_band_as_perfs(with_stacks, {"--show-task-events", "--show-mmap-events", "-G"});
  }
}

TEST_F(SideBandTest, LostRecordsAsPerfPrintsThem) {
  if (!pt::tracefs_available()) GTEST_SKIP() << "tracefs is not mounted (tracepoints need it)";
  if (!pt::running_as_root()) GTEST_SKIP() << "tracepoint samples need root at paranoid 2";
  // One page of ring buffer for 300 000 getpid calls: the kernel drops most of them.
  for (const std::string recorder : {"perf", "perfscope"}) {
    std::string file = dir_.path() + "/lost-" + recorder + ".data";
    std::vector<std::string> command{"record", "-q",    "-e", "syscalls:sys_enter_getpid",
                                     "-c",     "1",     "-m", "1",
                                     "-o",     file,    "--", work_helper,
                                     "getpid", "300000"};
    auto result = pt::run_perf_or_perfscope(recorder, command);
    ASSERT_EQ(result.exit_status, 0) << result.err;
    auto ours = pt::run_perfscope({"script", "-i", file, "--show-lost-events"});
    EXPECT_NE(ours.out.find("PERF_RECORD_LOST lost "), std::string::npos) << recorder;
    EXPECT_GE(expect_side_band_as_perfs(file, {"--show-lost-events", "--show-task-events"}), 2u)
        << recorder;
  }
}

TEST_F(SideBandTest, NamespacesAndCgroupsAsPerfPrintsThem) {
  if (!pt::running_as_root()) GTEST_SKIP() << "a system-wide recording needs root at paranoid 2";
  std::string file = dir_.path() + "/namespaces.data";
  auto result = pt::run_command({perf_path, "record", "-q", "-a", "--namespaces", "--all-cgroups",
                                 "-o", file, "--", "sleep", "0.1"});
  if (result.exit_status != 0) GTEST_SKIP() << "perf cannot record namespaces here: " << result.err;
  // Every process's namespaces (seven, over two lines each) and the cgroups.
  EXPECT_GE(expect_side_band_as_perfs(file, {"--show-namespace-events", "--show-cgroup-events",
                                             "--show-task-events", "-F", "comm,tid,cpu,time"}),
            3 * 10u);
}

}  // namespace
