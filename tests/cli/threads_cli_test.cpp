// --threads: report, script, annotate, diff and the exports give the same bytes on 1, 3 and 8
// threads, for our recordings and perf's (frame pointers, DWARF, off-CPU, two events, pipe mode,
// compressed). Each recording is large enough that every one of 8 workers has chunks of it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string offcpu_workload = PERFSCOPE_OFFCPU_WORKLOAD_PATH;
const std::string perf_path = "/usr/bin/perf";
// The sanitizer pass runs each output once more, on 8 threads (the most chunk boundaries): its
// job is the memory errors of the parallel path (173 s of its 973 s with every export). The
// release pass compares 3 threads (uneven shares) and 8 with one.
const std::vector<std::string> thread_counts =
    pt::sanitized_build ? std::vector<std::string>{"8"} : std::vector<std::string>{"3", "8"};

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class ThreadCounts : public ::testing::Test {
 protected:
  // Records into the test's directory; the file must hold at least a MiB of data (every
  // worker of 8 then has chunks: a chunk is at most a sixteenth of a worker's share, at least
  // 64 KiB).
  std::string record(const std::string& name, std::vector<std::string> options,
                     std::vector<std::string> command) {
    std::string path = dir_.path() + "/" + name + ".data";
    std::vector<std::string> argv{"record", "-q", "-o", path};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    auto result = pt::run_perfscope(argv);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    EXPECT_GE(std::filesystem::file_size(path), 1u << 20) << name;
    return path;
  }
  std::string record_with_perf(const std::string& name, std::vector<std::string> options) {
    std::string path = dir_.path() + "/" + name + ".data";
    std::vector<std::string> argv{perf_path, "record", "-q", "-o", path};
    argv.insert(argv.end(), options.begin(), options.end());
    for (const char* word : {"--", work_helper.c_str(), "getpid", "1500000"}) argv.push_back(word);
    auto result = pt::run_command(argv);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return path;
  }

  // `arguments` with --threads 1, then 2, 3 and 8: the same stdout (or, with `output`, the same
  // bytes in that file) each time. The one-thread output must contain `expected`.
  void expect_same_output(std::vector<std::string> arguments, const std::string& expected,
                          const std::string& output = "") {
    auto run = [&](const std::string& threads) {
      std::vector<std::string> argv = arguments;
      argv.push_back("--threads");
      argv.push_back(threads);
      auto result = pt::run_perfscope(argv);
      EXPECT_EQ(result.exit_status, 0) << threads << " threads: " << result.err;
      return output.empty() ? result.out : file_bytes(output);
    };
    std::string one = run("1");
    std::string described = arguments.front() + " " + arguments.back();
    EXPECT_NE(one.find(expected), std::string::npos) << described << "\n" << one.substr(0, 2000);
    for (const std::string& threads : thread_counts) {
      std::string other = run(threads);
      EXPECT_TRUE(other == one) << described << ": " << threads << " threads gave " << other.size()
                                << " bytes, one thread " << one.size();
    }
  }

  // Every subcommand's outputs that build a profile or print the samples.
  void expect_every_output_the_same(const std::string& file, const std::string& symbol) {
    expect_same_output({"report", "--stdio", "-i", file}, symbol);
    expect_same_output(
        {"report", "--stdio", "--children", "-g", "caller", "--sort", "comm,dso,sym", "-i", file},
        symbol);
    expect_same_output({"script", "-i", file}, symbol);
  }
  // The exports write a profile that the threads built: the same code after that on any count.
  // The release pass compares their bytes; the sanitizer pass's parallel path is report's.
  void expect_exports_the_same(const std::string& file, const std::string& symbol) {
    if (pt::sanitized_build) return;
    std::string out = dir_.path() + "/export.out";
    for (const char* format : {"json", "gecko", "speedscope"}) {
      expect_same_output({"report", "--format", format, "-o", out, "-i", file}, symbol, out);
    }
    expect_same_output({"report", "--format", "pprof", "-o", out, "-i", file}, "", out);
    expect_same_output({"report", "--format", "html", "-o", out, "-i", file}, symbol, out);
    expect_same_output({"annotate", "--stdio", "-i", file}, "Percent");
  }

  pt::TempDir dir_;
};

TEST_F(ThreadCounts, FramePointerRecordingReportsScriptExportsAnnotateAndDiff) {
  std::string file =
      record("fp", {"-g", "-e", "cpu-clock", "-c", "20000"}, {work_helper, "getpid", "1000000"});
  expect_every_output_the_same(file, "getpid");
  expect_exports_the_same(file, "getpid");
  std::string other = record("fp_other", {"-g", "-e", "cpu-clock", "-c", "20000"},
                             {work_helper, "getpid", "800000"});
  expect_same_output({"diff", file, other}, "getpid");
}

TEST_F(ThreadCounts, DwarfRecording) {
  std::string file =
      record("dwarf", {"--call-graph", "dwarf,2048", "-e", "cpu-clock", "-c", "20000"},
             {work_helper, "getpid", "1000000"});
  expect_every_output_the_same(file, "getpid");
  expect_exports_the_same(file, "getpid");
}

TEST_F(ThreadCounts, TwoEventsInPipeMode) {
  std::string file = dir_.path() + "/pipe.data";
  auto recorded = pt::run_command({"/bin/sh", "-c",
                                   std::string(PERFSCOPE_CLI_PATH) +
                                       " record -q -g -e cpu-clock,task-clock -c 40000 -o - -- " +
                                       work_helper + " getpid 1000000 > " + file});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_GE(std::filesystem::file_size(file), 1u << 20);
  expect_every_output_the_same(file, "task-clock");
}

TEST_F(ThreadCounts, OffCpuRecording) {
  if (!pt::running_as_root() || !pt::tracefs_available()) {
    GTEST_SKIP() << "off-CPU stacks need root and tracefs (sched:sched_switch)";
  }
  // Phases of work and sleep, and the getpid loop's cpu-clock samples for the size.
  std::string file = record(
      "offcpu", {"--off-cpu", "-g", "-e", "cpu-clock", "-c", "20000"},
      {"/bin/sh", "-c", offcpu_workload + " phases 20 && " + work_helper + " getpid 800000"});
  expect_every_output_the_same(file, "offcpu-time");
  expect_exports_the_same(file, "getpid");
}

TEST_F(ThreadCounts, PerfsRecordingsCompressedAndDwarf) {
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  std::string compressed =
      record_with_perf("perf_z", {"-z", "-g", "-e", "cpu-clock", "-c", "20000"});
  expect_every_output_the_same(compressed, "getpid");
  std::string dwarf = record_with_perf(
      "perf_dwarf", {"--call-graph", "dwarf,1024", "-e", "cpu-clock", "-c", "100000"});
  EXPECT_GE(std::filesystem::file_size(dwarf), 1u << 20);
  expect_every_output_the_same(dwarf, "getpid");
}

}  // namespace
