// perf stat record and stat report on perfscope (issue #45): perfscope's stat record file is one
// perf stat report reads, with the counts perfscope printed while recording; perfscope's stat
// report prints perf's stat record files as perf stat report does, intervals included.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;

// Each "VALUE   EVENT" line's value, in order ("1111      page-faults" gives 1111).
std::vector<std::string> values_of(const std::string& text, const std::string& event) {
  std::vector<std::string> values;
  std::regex line("(^|\\n) *(?:[0-9.]+ +)?([0-9.,]+|<not counted>) +(msec +)?" + event + "\\b");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator();
       ++it) {
    values.push_back((*it)[2]);
  }
  return values;
}

class StatRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  }
  pt::CommandResult perf(const std::vector<std::string>& words) {
    std::vector<std::string> argv{perf_path};
    argv.insert(argv.end(), words.begin(), words.end());
    return pt::run_command(argv);
  }
  pt::TempDir dir_;
};

TEST_F(StatRecordTest, PerfStatReportReadsOursWithTheCountsPrinted) {
  std::string data = dir_.path() + "/ours.data";
  auto recorded = pt::run_perfscope({"stat", "record", "-o", data, "-e", "task-clock,page-faults",
                                     "--", work_helper, "faults", "2000"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto printed = values_of(recorded.err, "page-faults");
  ASSERT_EQ(printed.size(), 1u) << recorded.err;
  auto theirs = perf({"stat", "report", "-i", data});
  ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
  EXPECT_EQ(values_of(theirs.err, "page-faults"), printed) << theirs.err;
  EXPECT_EQ(values_of(theirs.err, "task-clock"), values_of(recorded.err, "task-clock"));
  auto ours = pt::run_perfscope({"stat", "report", "-i", data});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_EQ(values_of(ours.err, "page-faults"), printed) << ours.err;
  // At least the 2000 pages the helper touched.
  EXPECT_GE(std::stoul(printed[0]), 2000u);
}

TEST_F(StatRecordTest, OurStatReportPrintsPerfsRecordAsPerf) {
  std::string data = dir_.path() + "/perfs.data";
  auto recorded = perf({"stat", "record", "-o", data, "-e", "task-clock,page-faults", "--",
                        work_helper, "faults", "2000"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto theirs = perf({"stat", "report", "-i", data});
  auto ours = pt::run_perfscope({"stat", "report", "-i", data});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  for (const char* event : {"page-faults", "task-clock"}) {
    auto values = values_of(ours.err, event);
    EXPECT_EQ(values.size(), 1u) << ours.err;
    EXPECT_EQ(values, values_of(theirs.err, event)) << ours.err << "\nperf's:\n" << theirs.err;
  }
  auto header = std::string(" Performance counter stats for '") + perf_path + " stat record";
  EXPECT_NE(ours.err.find(header), std::string::npos) << ours.err;
  std::regex elapsed(" ([0-9.]+) seconds time elapsed");
  std::smatch a, b;
  ASSERT_TRUE(std::regex_search(ours.err, a, elapsed)) << ours.err;
  ASSERT_TRUE(std::regex_search(theirs.err, b, elapsed)) << theirs.err;
  EXPECT_EQ(a[1], b[1]);
}

TEST_F(StatRecordTest, IntervalsOfPerfsRecordAtPerfsTimes) {
  std::string data = dir_.path() + "/interval.data";
  auto recorded = perf({"stat", "record", "-o", data, "-I", "100", "-e", "page-faults", "--",
                        work_helper, "delay-getpid", "350", "10"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto theirs = perf({"stat", "report", "-i", data});
  auto ours = pt::run_perfscope({"stat", "report", "-i", data});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  std::regex stamp("(^|\\n) +([0-9]+\\.[0-9]{9}) ");
  std::vector<std::string> our_times, their_times;
  for (auto it = std::sregex_iterator(ours.err.begin(), ours.err.end(), stamp);
       it != std::sregex_iterator(); ++it) {
    our_times.push_back((*it)[2]);
  }
  for (auto it = std::sregex_iterator(theirs.err.begin(), theirs.err.end(), stamp);
       it != std::sregex_iterator(); ++it) {
    their_times.push_back((*it)[2]);
  }
  EXPECT_GE(our_times.size(), 3u) << ours.err;
  EXPECT_EQ(our_times, their_times) << ours.err << "\nperf's:\n" << theirs.err;
  // And perfscope's own interval recording reads back in perf stat report at its times.
  std::string own = dir_.path() + "/own_interval.data";
  auto own_recorded =
      pt::run_perfscope({"stat", "record", "-o", own, "-I", "100", "-e", "page-faults", "--",
                         work_helper, "delay-getpid", "350", "10"});
  ASSERT_EQ(own_recorded.exit_status, 0) << own_recorded.err;
  auto perf_of_own = perf({"stat", "report", "-i", own});
  auto ours_of_own = pt::run_perfscope({"stat", "report", "-i", own});
  EXPECT_EQ(values_of(perf_of_own.err, "page-faults").size(),
            values_of(ours_of_own.err, "page-faults").size())
      << perf_of_own.err << ours_of_own.err;
  EXPECT_GE(values_of(perf_of_own.err, "page-faults").size(), 3u) << perf_of_own.err;
}

TEST_F(StatRecordTest, ASamplingRecordingIsNoStatFile) {
  std::string data = dir_.path() + "/samples.data";
  ASSERT_EQ(pt::run_perfscope({"record", "-q", "-o", data, "--", work_helper, "getpid", "10"})
                .exit_status,
            0);
  auto report = pt::run_perfscope({"stat", "report", "-i", data});
  EXPECT_EQ(report.exit_status, 1);
  EXPECT_NE(report.err.find("no stat record counts"), std::string::npos) << report.err;
  auto repeated =
      pt::run_perfscope({"stat", "record", "-o", dir_.path() + "/r.data", "-r", "2", "--", "true"});
  EXPECT_NE(repeated.exit_status, 0);
  EXPECT_NE(repeated.err.find("-r"), std::string::npos) << repeated.err;
}

}  // namespace
