// perf stat's run control (issue #44): --interval-count, --timeout, --all-user and --all-kernel,
// -q, -o with --append, --log-fd, --pre, --post and --sync, with perf's meaning.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;

// The count of `event` in perf's CSV (-x,): "COUNT,UNIT,EVENT,...".
long long csv_count(const std::string& text, const std::string& event) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, ',');) fields.push_back(field);
    if (fields.size() > 2 && fields[2] == event) return std::stoll(fields[0]);
  }
  return -1;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

// --interval-count N: N intervals, then the run ends (its command too) without a partial one.
TEST(StatRunControl, IntervalCountStopsAfterThatManyIntervals) {
  auto start = std::chrono::steady_clock::now();
  auto result = pt::run_perfscope({"stat", "-I", "50", "--interval-count", "3", "-x", ",", "-e",
                                   "task-clock", "--", "sleep", "5"});
  pt::expect_no_crash(result);
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_LT(seconds_since(start), 3.0) << "the command was not ended";
  std::istringstream lines(result.err);
  int intervals = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("task-clock") != std::string::npos) ++intervals;
  }
  EXPECT_EQ(intervals, 3) << result.err;
  auto without_interval = pt::run_perfscope({"stat", "--interval-count", "3", "--", "true"});
  EXPECT_EQ(without_interval.exit_status, 129) << without_interval.err;
}

// --timeout MS: the counts of that long, printed, and the command ended.
TEST(StatRunControl, TimeoutEndsTheRunAndPrintsTheCounts) {
  auto start = std::chrono::steady_clock::now();
  auto result = pt::run_perfscope(
      {"stat", "--timeout", "200", "-x", ",", "-e", "task-clock", "--", "sleep", "5"});
  pt::expect_no_crash(result);
  EXPECT_EQ(result.exit_status, 0) << result.err;
  double took = seconds_since(start);
  EXPECT_GE(took, 0.2);
  EXPECT_LT(took, 3.0) << "the command was not ended";
  EXPECT_NE(result.err.find("task-clock"), std::string::npos) << result.err;
}

// --all-user and --all-kernel: every event counts one mode. Faults on 2000 fresh pages that the
// helper touches in user space are user-mode faults.
TEST(StatRunControl, AllUserAndAllKernelCountOneModeOfEveryEvent) {
  auto user = pt::run_perfscope(
      {"stat", "--all-user", "-x", ",", "-e", "page-faults", "--", work_helper, "faults", "2000"});
  auto kernel = pt::run_perfscope({"stat", "--all-kernel", "-x", ",", "-e", "page-faults", "--",
                                   work_helper, "faults", "2000"});
  ASSERT_EQ(user.exit_status, 0) << user.err;
  ASSERT_EQ(kernel.exit_status, 0) << kernel.err;
  EXPECT_GE(csv_count(user.err, "page-faults"), 2000) << user.err;
  EXPECT_GE(csv_count(kernel.err, "page-faults"), 0) << kernel.err;
  EXPECT_LT(csv_count(kernel.err, "page-faults"), 1000) << kernel.err;
  auto both = pt::run_perfscope({"stat", "--all-user", "--all-kernel", "--", "true"});
  EXPECT_EQ(both.exit_status, 129) << both.err;
}

// -q prints nothing; -o --append adds to the file; --log-fd writes to that descriptor.
TEST(StatRunControl, QuietAppendAndLogFd) {
  auto quiet = pt::run_perfscope({"stat", "-q", "-e", "task-clock", "--", "true"});
  EXPECT_EQ(quiet.exit_status, 0);
  EXPECT_EQ(quiet.err, "");
  pt::TempDir dir;
  std::string file = dir.path() + "/counts.csv";
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> words{"stat", "-o", file, "-x", ",", "-e", "task-clock"};
    if (i == 1) words.push_back("--append");
    words.insert(words.end(), {"--", "true"});
    ASSERT_EQ(pt::run_perfscope(words).exit_status, 0);
  }
  std::ifstream written(file);
  std::string text((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  std::size_t rows = 0;
  for (std::size_t at = text.find("task-clock"); at != std::string::npos;
       at = text.find("task-clock", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 2u) << text;
  // --log-fd 1: the counts on stdout, none on stderr.
  auto logged =
      pt::run_perfscope({"stat", "--log-fd", "1", "-x", ",", "-e", "task-clock", "--", "true"});
  EXPECT_EQ(logged.exit_status, 0) << logged.err;
  EXPECT_NE(logged.out.find("task-clock"), std::string::npos) << logged.out;
  EXPECT_EQ(logged.err.find("task-clock"), std::string::npos) << logged.err;
}

// --pre and --post run around each of -r's runs, in order; a failing --pre stops the runs.
TEST(StatRunControl, PreAndPostRunAroundEachRun) {
  pt::TempDir dir;
  std::string log = dir.path() + "/order";
  auto result =
      pt::run_perfscope({"stat", "-r", "2", "--sync", "--pre", "echo pre >> " + log, "--post",
                         "echo post >> " + log, "-x", ",", "-e", "task-clock", "--", "true"});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  std::ifstream order(log);
  std::string text((std::istreambuf_iterator<char>(order)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "pre\npost\npre\npost\n");
  auto failing = pt::run_perfscope({"stat", "--pre", "false", "--", "true"});
  EXPECT_EQ(failing.exit_status, 1) << failing.err;
  EXPECT_NE(failing.err.find("--pre 'false' failed"), std::string::npos) << failing.err;
}

namespace {

// A text report with its numbers as N and runs of blanks as one: what must equal perf's.
std::string layout_of(const std::string& text) {
  static const std::regex number(R"([0-9]+(\.[0-9]+)?)");
  static const std::regex blanks(R"( +)");
  static const std::regex trailing(R"( +\n)");
  // An event's noise is left out when it is 0 (counts equal in every run): its presence depends
  // on the runs, not on the layout.
  static const std::regex event_noise(R"(( # [^\n(]*) \( \+- N% \))");
  std::string shape = std::regex_replace(text, number, "N");
  shape = std::regex_replace(shape, blanks, " ");
  shape = std::regex_replace(shape, event_noise, "$1");
  return std::regex_replace(shape, trailing, "\n");
}

}  // namespace

// perf's text layout for --null, -r (the mean +- its error, noise after each event's metric, no
// user and system time), -g and CPU-wide targets: the same lines as perf's, numbers aside.
TEST(StatRunControl, NullRunsRepeatsAndGroupsInPerfsLayout) {
  if (::access("/usr/bin/perf", X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  const std::vector<std::vector<std::string>> runs{
      {"--null", "--", "sleep", "0.02"},
      {"-n", "-r", "3", "--", "sleep", "0.01"},
      {"-r", "3", "-e", "task-clock,page-faults", "--", work_helper, "getpid", "1000"},
      {"--no-scale", "-e", "task-clock,page-faults", "--", work_helper, "getpid", "10"},
      {"-g", "-e", "task-clock,page-faults", "--", work_helper, "getpid", "10"},
      {"-a", "-e", "task-clock", "--", "sleep", "0.01"},
      {"-C", "0", "-e", "task-clock", "--", "sleep", "0.01"},
      // -D: "Events disabled" and "Events enabled" around the delay; -1: never enabled, perf's
      // "<not counted>" lines with their units.
      {"-D", "100", "-e", "task-clock,page-faults", "--", "sleep", "0.3"},
      {"-D", "-1", "-e", "task-clock,page-faults", "--", "sleep", "0.05"},
  };
  for (const auto& arguments : runs) {
    std::vector<std::string> command{"stat"};
    command.insert(command.end(), arguments.begin(), arguments.end());
    auto perf = pt::run_perf_or_perfscope("perf", command);
    auto ours = pt::run_perfscope(command);
    if (perf.exit_status != 0) continue;  // -a and -C need root at paranoid 2
    ASSERT_EQ(ours.exit_status, 0) << ours.err;
    EXPECT_EQ(layout_of(ours.err), layout_of(perf.err))
        << ::testing::PrintToString(arguments) << "\nperf:\n"
        << perf.err << "perfscope:\n"
        << ours.err;
  }
}

// --interval-clear: the screen cleared before each interval, and each interval under its own
// header (perf clears on stdout; perfscope where the counts go, stderr).
TEST(StatRunControl, IntervalClearStartsEachIntervalOnAClearScreen) {
  auto result = pt::run_perfscope({"stat", "-I", "100", "--interval-count", "3", "--interval-clear",
                                   "-e", "task-clock", "--", "sleep", "5"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const std::string clear = "\033[H\033[2J";
  std::size_t clears = 0, headers = 0;
  std::istringstream lines(result.err);
  for (std::string line; std::getline(lines, line);) {
    if (line == clear) ++clears;
    if (line.starts_with("#") && line.find("time") != std::string::npos) {
      EXPECT_EQ(headers, clears - 1) << "a header without a clear before it:\n" << result.err;
      ++headers;
    }
  }
  EXPECT_EQ(clears, 3u) << result.err;
  EXPECT_EQ(headers, 3u) << result.err;
}

// --table: one line per run, the bars perf draws (one '#', one more per 5 % from the mean).
TEST(StatRunControl, TableListsEveryRunAroundTheMean) {
  auto result = pt::run_perfscope(
      {"stat", "-r", "5", "--table", "-e", "task-clock", "--", work_helper, "getpid", "10000"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  std::istringstream lines(result.err);
  static const std::regex row(R"(^ +([0-9.]+) \(([+-][0-9.]+)\) (#+)$)");
  std::smatch match;
  std::size_t rows = 0;
  bool table = false, final_result = false;
  double sum = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.ends_with("# Table of individual measurements:")) table = true;
    if (line.ends_with("# Final result:")) final_result = true;
    if (!table || final_result || !std::regex_match(line, match, row)) continue;
    ++rows;
    sum += std::stod(match[2]);
    // perf's 1 + |(int)(100 * off / run) / 5|, of the printed values: they are rounded to five
    // decimals, so a run at a 5 % boundary may draw either count.
    double run = std::stod(match[1]), off = std::stod(match[2]);
    auto bars = [](double a_run, double an_off) {
      return 1 + static_cast<std::size_t>(std::abs(static_cast<int>(100.0 * an_off / a_run) / 5));
    };
    std::size_t fewest = bars(run + 5e-6, off - std::copysign(5e-6, off));
    std::size_t most = bars(run - 5e-6, off + std::copysign(5e-6, off));
    EXPECT_GE(match[3].length(), fewest) << line;
    EXPECT_LE(match[3].length(), most) << line;
  }
  EXPECT_EQ(rows, 5u) << result.err;
  EXPECT_TRUE(final_result) << result.err;
  // perf's indent: each heading starts where the final result's number does.
  std::size_t elapsed = result.err.find(" seconds time elapsed");
  ASSERT_NE(elapsed, std::string::npos) << result.err;
  std::size_t line = result.err.rfind('\n', elapsed) + 1;
  std::size_t number = result.err.find_first_not_of(' ', line) - line;
  for (const char* heading : {"# Table of individual measurements:", "# Final result:"}) {
    std::size_t at = result.err.find(heading);
    ASSERT_NE(at, std::string::npos) << result.err;
    EXPECT_EQ(at - result.err.rfind('\n', at) - 1, number) << heading << "\n" << result.err;
  }
  EXPECT_NEAR(sum, 0.0, 0.001) << "the distances from the mean add up to 0";
}

// -D MS: what the command does before the delay is not counted, what it does after is, exactly.
TEST(StatRunControl, DelayCountsOnlyWhatFollowsIt) {
  if (!pt::tracefs_available() || !pt::running_as_root()) {
    GTEST_SKIP() << "the getpid tracepoint needs tracefs and root here";
  }
  // 500 calls at once, a pause of 600 ms, then 1000 calls; the counting starts after 200 ms.
  std::vector<std::string> command{"stat", "-x", ",", "-e", "syscalls:sys_enter_getpid"};
  std::vector<std::string> workload{"--", work_helper, "getpid-delay-getpid", "500", "600", "1000"};
  auto whole = command;
  whole.insert(whole.end(), workload.begin(), workload.end());
  auto delayed = command;
  delayed.insert(delayed.end(), {"-D", "200"});
  delayed.insert(delayed.end(), workload.begin(), workload.end());
  auto all = pt::run_perfscope(whole);
  auto later = pt::run_perfscope(delayed);
  ASSERT_EQ(all.exit_status, 0) << all.err;
  ASSERT_EQ(later.exit_status, 0) << later.err;
  EXPECT_EQ(csv_count(all.err, "syscalls:sys_enter_getpid"), 1500) << all.err;
  EXPECT_EQ(csv_count(later.err, "syscalls:sys_enter_getpid"), 1000) << later.err;
  EXPECT_EQ(later.err.rfind("Events disabled\nEvents enabled\n", 0), 0u) << later.err;
  auto bad = pt::run_perfscope({"stat", "-D", "-2", "--", "true"});
  EXPECT_EQ(bad.exit_status, 129) << bad.err;
}

// --control with -D -1: the counters wait for 'enable' from the FIFO (each command answered "ack"
// on the other), then count the 500 getpid calls after it and none of the 300 before, as perf.
TEST(StatRunControl, ControlFifoEnablesTheCounters) {
  if (!pt::tracefs_available() || !pt::running_as_root()) {
    GTEST_SKIP() << "the getpid tracepoint needs tracefs and root here";
  }
  pt::TempDir dir;
  const std::string control = dir.path() + "/ctl", ack = dir.path() + "/ack";
  ASSERT_EQ(::mkfifo(control.c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(ack.c_str(), 0600), 0);
  pt::BackgroundCommand stat({PERFSCOPE_CLI_PATH, "stat", "-D", "-1", "--control",
                              "fifo:" + control + "," + ack, "-x", ",", "-e",
                              "syscalls:sys_enter_getpid", "--", work_helper, "getpid-delay-getpid",
                              "300", "1500", "500"});
  auto counted = pt::run_enabled_by_control(stat, control, ack);
  EXPECT_EQ(counted.exit_status, 0) << counted.err;
  EXPECT_EQ(csv_count(counted.err, "syscalls:sys_enter_getpid"), 500) << counted.err;
  EXPECT_EQ(counted.err.rfind("Events disabled\nEvents enabled\n", 0), 0u) << counted.err;
  auto bad = pt::run_perfscope({"stat", "--control", "fd:", "--", "true"});
  EXPECT_EQ(bad.exit_status, 129) << bad.err;
}

// --summary after -I in perf's CSV: the totals, each row led by perf's right-aligned "summary"
// field (--no-csv-summary: without it), and the totals are the intervals added up.
TEST(StatRunControl, SummaryAfterIntervalsInPerfsCsv) {
  auto run = pt::run_perfscope({"stat", "-I", "100", "--summary", "-x", ",", "-e", "page-faults",
                                "--", work_helper, "delay-getpid", "250", "10"});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  std::istringstream lines(run.err);
  long long intervals = 0, summary = -1;
  std::size_t interval_rows = 0;
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, ',');) fields.push_back(field);
    if (fields.size() < 4 || fields[3] != "page-faults") continue;
    if (fields[0] == "         summary") {
      summary = std::stoll(fields[1]);
    } else if (fields[1] != "<not counted>") {
      intervals += std::stoll(fields[1]);
      ++interval_rows;
    }
  }
  EXPECT_GE(interval_rows, 2u) << run.err;
  EXPECT_EQ(summary, intervals) << run.err;
  auto bare =
      pt::run_perfscope({"stat", "-I", "100", "--summary", "--no-csv-summary", "-x", ",", "-e",
                         "page-faults", "--", work_helper, "delay-getpid", "150", "10"});
  ASSERT_EQ(bare.exit_status, 0) << bare.err;
  EXPECT_EQ(bare.err.find("summary"), std::string::npos) << bare.err;
  EXPECT_GT(csv_count(bare.err, "page-faults"), 0) << bare.err;  // the totals' row, unlabelled
}

namespace {

// --filter: the kernel counts the tracepoint hits it keeps, on the -e before it only: exactly the
// helper's 1000 getpid calls of every system call it makes, as perf stat counts them.
TEST(StatRunControl, FilterCountsTheHitsItKeeps) {
  if (!pt::tracefs_available() || !pt::running_as_root()) {
    GTEST_SKIP() << "the raw_syscalls tracepoints need tracefs and root here";
  }
#if defined(__x86_64__)
  const std::string getpid_filter = "id == 39";
#elif defined(__aarch64__)
  const std::string getpid_filter = "id == 172";
#else
  GTEST_SKIP() << "getpid's number is known for x86-64 and arm64 only";
#endif
  std::vector<std::string> words{"stat",
                                 "-x",
                                 ",",
                                 "-e",
                                 "raw_syscalls:sys_enter",
                                 "--filter",
                                 getpid_filter,
                                 "-e",
                                 "raw_syscalls:sys_exit",
                                 "--",
                                 work_helper,
                                 "getpid",
                                 "1000"};
  auto ours = pt::run_perfscope(words);
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_EQ(csv_count(ours.err, "raw_syscalls:sys_enter"), 1000) << ours.err;
  long long every_call = csv_count(ours.err, "raw_syscalls:sys_exit");
  EXPECT_GT(every_call, 1010) << ours.err;  // the loader's and libc's calls too
  if (::access("/usr/bin/perf", X_OK) == 0) {
    words.front() = "stat";
    words.insert(words.begin(), "/usr/bin/perf");
    auto perf = pt::run_command(words);
    ASSERT_EQ(perf.exit_status, 0) << perf.err;
    EXPECT_EQ(csv_count(perf.err, "raw_syscalls:sys_enter"), 1000) << perf.err;
    EXPECT_GT(csv_count(perf.err, "raw_syscalls:sys_exit"), 1010) << perf.err;
  }
  auto not_a_tracepoint =
      pt::run_perfscope({"stat", "-e", "task-clock", "--filter", "id == 39", "--", "true"});
  EXPECT_EQ(not_a_tracepoint.exit_status, 129) << not_a_tracepoint.err;
  EXPECT_NE(not_a_tracepoint.err.find("is not a tracepoint"), std::string::npos)
      << not_a_tracepoint.err;
}

}  // namespace
