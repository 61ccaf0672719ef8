// `perfscope trace` end to end on a static helper that makes exactly 1000 getpid, 10 openat of a
// missing file (ENOENT) and 5 writes per thread: exact counts and errors, the calls of a second
// thread and of a child, one decoded line per call, the summary against perf trace -s and
// strace -c -f, an unknown name, and an attached process that exits while traced.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string workload = PERFSCOPE_SYSCALL_WORKLOAD_PATH;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

// Skips unless this machine can trace system calls (doctor's check says why not).
bool can_trace(std::string& why) {
  if (!pt::tracefs_available()) {
    why = "tracefs is not available";
    return false;
  }
  auto result = pt::run_perfscope({"trace", "-s", "--", "true"});
  if (result.exit_status != 0) {
    why = "perfscope trace does not work here: " + result.err;
    return false;
  }
  return true;
}

#define SKIP_UNLESS_TRACING()                 \
  do {                                        \
    std::string why;                          \
    if (!can_trace(why)) GTEST_SKIP() << why; \
  } while (0)

// Runs perfscope trace with `arguments` on the workload; returns what it wrote to -o.
std::string trace(const std::vector<std::string>& arguments,
                  const std::vector<std::string>& workload_arguments = {}) {
  std::string output = pt::temp_path("trace_out");
  std::vector<std::string> words{"trace", "-o", output};
  words.insert(words.end(), arguments.begin(), arguments.end());
  words.push_back("--");
  words.push_back(workload);
  words.insert(words.end(), workload_arguments.begin(), workload_arguments.end());
  auto result = pt::run_perfscope(words);
  pt::expect_no_crash(result);
  EXPECT_EQ(result.exit_status, 0) << result.err;
  // 5 one-byte writes from the main thread, and as many from --thread and --child.
  std::size_t writers = 1;
  for (const auto& word : workload_arguments) writers += word == "--thread" || word == "--child";
  EXPECT_EQ(result.out, std::string(5 * writers, 'x'));
  std::string text = read_file(output);
  std::filesystem::remove(output);
  return text;
}

TEST(TraceCli, CountsErrorsThreadsAndChildrenExactly) {
  SKIP_UNLESS_TRACING();
  std::string output = pt::temp_path("trace_summary");
  auto result = pt::run_perfscope(
      {"trace", "-s", "--json", "-o", output, "--", workload, "--thread", "--child"});
  pt::expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out, std::string(15, 'x'));  // 5 writes from each of the three threads
  auto rows = json_lines(read_file(output));
  std::filesystem::remove(output);
  std::map<long, std::map<std::string, nlohmann::json>> by_thread;
  std::set<long> pids;
  std::map<std::string, nlohmann::json> totals;
  for (const auto& row : rows) {
    if (row["type"] == "total") {
      totals[row["syscall"].get<std::string>()] = row;
      continue;
    }
    ASSERT_EQ(row["type"], "summary");
    by_thread[row["tid"].get<long>()][row["syscall"].get<std::string>()] = row;
    pids.insert(row["pid"].get<long>());
  }
  // The main thread, the second thread (same process) and the child (another process).
  ASSERT_EQ(by_thread.size(), 3u) << read_file(output);
  EXPECT_EQ(pids.size(), 2u);
  for (const auto& [tid, calls] : by_thread) {
    SCOPED_TRACE(fmt::format("thread {}", tid));
    ASSERT_TRUE(calls.count("getpid"));
    EXPECT_EQ(calls.at("getpid")["calls"], 1000);
    EXPECT_EQ(calls.at("getpid")["errors"], 0);
    ASSERT_TRUE(calls.count("openat"));
    EXPECT_EQ(calls.at("openat")["calls"], 10);
    EXPECT_EQ(calls.at("openat")["errors"], 10);
    EXPECT_EQ(calls.at("openat")["errnos"]["ENOENT"], 10);
    ASSERT_TRUE(calls.count("write"));
    EXPECT_EQ(calls.at("write")["calls"], 5);
    EXPECT_EQ(calls.at("write")["errors"], 0);
    const auto& getpid = calls.at("getpid");
    EXPECT_GT(getpid["total_ms"].get<double>(), 0.0);
    EXPECT_LE(getpid["min_ms"].get<double>(), getpid["avg_ms"].get<double>());
    EXPECT_LE(getpid["avg_ms"].get<double>(), getpid["max_ms"].get<double>());
    EXPECT_NEAR(getpid["total_ms"].get<double>(), 1000 * getpid["avg_ms"].get<double>(), 1e-6);
  }
  // The three threads together.
  EXPECT_EQ(totals["getpid"]["calls"], 3000);
  EXPECT_EQ(totals["openat"]["calls"], 30);
  EXPECT_EQ(totals["openat"]["errnos"]["ENOENT"], 30);
  EXPECT_EQ(totals["write"]["calls"], 15);
}

TEST(TraceCli, PrintsOneDecodedLinePerCall) {
  SKIP_UNLESS_TRACING();
  std::string text = trace({"-e", "openat"});
  static const std::regex line(
      R"(^ +[0-9]+\.[0-9]{3} \( *[0-9]+\.[0-9]{3} ms\): \S+/([0-9]+) openat\(dfd: AT_FDCWD, filename: 0x[0-9a-f]+, flags: 0x0, mode: 0\) = -1 ENOENT \(No such file or directory\)$)");
  std::istringstream in(text);
  int lines = 0, matching = 0;
  for (std::string l; std::getline(in, l);) {
    ++lines;
    matching += std::regex_match(l, line);
  }
  EXPECT_EQ(lines, 10) << text;
  EXPECT_EQ(matching, 10) << text;

  auto calls = json_lines(trace({"-e", "getpid,write", "--json"}));
  std::map<std::string, int> counts;
  for (const auto& call : calls) {
    ASSERT_EQ(call["type"], "call");
    ++counts[call["syscall"].get<std::string>()];
    if (call["syscall"] == "write") {
      EXPECT_EQ(call["args"]["fd"], "1");
      EXPECT_EQ(call["args"]["count"], "1");
      EXPECT_EQ(call["return"], 1);
      EXPECT_GE(call["duration_ms"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(counts, (std::map<std::string, int>{{"getpid", 1000}, {"write", 5}}));

  // '!': every call but these.
  std::map<std::string, int> others;
  for (const auto& call : json_lines(trace({"-e", "!getpid,write", "--json"}))) {
    ++others[call["syscall"].get<std::string>()];
  }
  EXPECT_EQ(others.count("getpid"), 0u);
  EXPECT_EQ(others.count("write"), 0u);
  EXPECT_EQ(others["openat"], 10);
}

TEST(TraceCli, FailureShowsOnlyFailedCalls) {
  SKIP_UNLESS_TRACING();
  auto calls = json_lines(trace({"--failure", "--json"}));
  int openat = 0;
  for (const auto& call : calls) {
    EXPECT_LT(call["return"].get<long>(), 0) << call.dump();
    openat += call["syscall"] == "openat";
  }
  EXPECT_EQ(openat, 10);
}

TEST(TraceCli, LossesAreReportedNeverSilent) {
  SKIP_UNLESS_TRACING();
  // One page per buffer holds about 24 calls: the reader can hardly keep up with the loop.
  std::string output = pt::temp_path("trace_lossy");
  auto result =
      pt::run_perfscope({"trace", "-s", "--json", "-m", "1", "-o", output, "--", workload});
  pt::expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  long getpid = 0, lost = -1;
  for (const auto& row : json_lines(read_file(output))) {
    if (row["type"] == "lost")
      lost = row["lost_records"].get<long>() + row["lost_samples"].get<long>();
    if (row["type"] == "summary" && row["syscall"] == "getpid") getpid = row["calls"].get<long>();
  }
  std::filesystem::remove(output);
  bool warned = result.err.find("events lost") != std::string::npos;
  if (lost < 0) {
    // Nothing lost: then nothing is missing either.
    EXPECT_FALSE(warned) << result.err;
    EXPECT_EQ(getpid, 1000);
  } else {
    EXPECT_TRUE(warned) << result.err;
    EXPECT_GT(lost, 0);
    // Every getpid is either counted or among the lost records (two per call at most).
    EXPECT_LE(getpid, 1000);
    EXPECT_GE(getpid + lost, 1000);
  }
}

TEST(TraceCli, DurationShowsOnlyLongerCalls) {
  SKIP_UNLESS_TRACING();
  // The workload sleeps 300 ms first: the one call that takes longer than 100 ms.
  // (A loaded host may hold another call past 100 ms now and then: it is shown too, and only
  // the sleep lasts 300 ms.)
  auto calls = json_lines(trace({"--duration", "100", "--json"}, {"--linger", "300"}));
  ASSERT_GE(calls.size(), 1u);
  std::size_t sleeps = 0;
  for (const auto& call : calls) {
    EXPECT_GE(call["duration_ms"].get<double>(), 100.0) << call.dump();
    if (call["duration_ms"].get<double>() < 300.0) continue;
    ++sleeps;
    EXPECT_TRUE(call["syscall"] == "clock_nanosleep" || call["syscall"] == "nanosleep")
        << call.dump();
  }
  EXPECT_EQ(sleeps, 1u);
}

// "name calls errors" of each row of each thread's table in perf trace -s's layout.
using SummaryTable = std::vector<std::map<std::string, std::pair<long, long>>>;
SummaryTable summary_rows(const std::string& text) {
  static const std::regex row(R"(^   (\w+) +([0-9]+) +([0-9]+) +[0-9.]+ .*%$)");
  static const std::regex thread(R"(^ .+ \([0-9]+\), [0-9]+ events, [0-9.]+%$)");
  SummaryTable tables;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, thread)) {
      tables.emplace_back();
    } else if (std::regex_match(line, m, row) && !tables.empty()) {
      tables.back()[m[1]] = {std::stol(m[2]), std::stol(m[3])};
    }
  }
  return tables;
}

TEST(TraceCli, SummaryEqualsPerfTrace) {
  SKIP_UNLESS_TRACING();
  if (::access("/usr/bin/perf", X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  SummaryTable ours = summary_rows(trace({"-s"}));
  ASSERT_EQ(ours.size(), 1u);
  // perf trace now and then misses a call without saying so (999 of 1000 getpid in 1 run of 6
  // here; 9 of 10 failed openat in one CI run, its header then saying 99.8 % of the events): of
  // up to five perf runs, the first that has every call is the one compared with.
  pt::CommandResult perf;
  SummaryTable theirs;
  for (int attempt = 0; attempt < 5; ++attempt) {
    perf = pt::run_command({"/usr/bin/perf", "trace", "-s", "--", workload});
    if (perf.exit_status != 0 || perf.err.find("Summary of events") == std::string::npos) {
      GTEST_SKIP() << "perf trace does not work here: " << perf.err;
    }
    theirs = summary_rows(perf.err);
    if (theirs == ours) break;
  }
  ASSERT_EQ(theirs.size(), 1u) << perf.err;
  // Every call of the single-threaded static workload, with its count and errors.
  EXPECT_EQ(ours, theirs) << perf.err;
  EXPECT_EQ(ours[0]["getpid"], std::make_pair(1000L, 0L));
  EXPECT_EQ(ours[0]["openat"], std::make_pair(10L, 10L));
  EXPECT_EQ(ours[0]["write"], std::make_pair(5L, 0L));
}

TEST(TraceCli, SummaryCountsEqualStraceCounts) {
  SKIP_UNLESS_TRACING();
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "strace is not installed";
  std::string strace_out = pt::temp_path("strace_c");
  auto strace = pt::run_command(
      {"/usr/bin/strace", "-c", "-f", "-o", strace_out, workload, "--thread", "--child"});
  if (strace.exit_status != 0) GTEST_SKIP() << "strace does not work here: " << strace.err;
  // "% time seconds usecs/call calls errors syscall", errors empty when none.
  std::map<std::string, std::pair<long, long>> theirs;
  std::istringstream in(read_file(strace_out));
  std::filesystem::remove(strace_out);
  static const std::regex row(R"(^ *[0-9.]+ +[0-9.]+ +[0-9]+ +([0-9]+) +(?:([0-9]+) +)?(\w+)$)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row)) {
      theirs[m[3]] = {std::stol(m[1]), m[2].matched ? std::stol(m[2]) : 0};
    }
  }
  auto rows = json_lines(trace({"-s", "--json"}, {"--thread", "--child"}));
  std::map<std::string, std::pair<long, long>> ours;
  for (const auto& r : rows) {
    if (r["type"] != "total") continue;
    ours[r["syscall"].get<std::string>()] = {r["calls"].get<long>(), r["errors"].get<long>()};
  }
  for (const char* name : {"getpid", "openat", "write"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(ours[name], theirs[name]);
  }
  EXPECT_EQ(ours["getpid"], std::make_pair(3000L, 0L));
  EXPECT_EQ(ours["openat"], std::make_pair(30L, 30L));
}

TEST(TraceCli, UnknownSystemCallIsAnOptionErrorWithASuggestion) {
  auto result = pt::run_perfscope({"trace", "-e", "getpidd", "--", "true"});
  pt::expect_no_crash(result);
  EXPECT_EQ(result.exit_status, 129);
  EXPECT_NE(result.err.find("'getpidd' is not a system call"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("did you mean getpid"), std::string::npos) << result.err;
  // A bare `trace` traces the whole system (PerfHabits.TraceWithoutATargetTracesTheWholeSystem).
}

TEST(TraceCli, BadOptionsAreOptionErrorsAndHelpShowsThreeExamples) {
  const std::string hint = "run 'perfscope trace --help' for the options\n";
  for (const std::vector<std::string>& words : {std::vector<std::string>{"trace", "--bogus-option"},
                                                {"trace", "-e"},
                                                {"trace", "--duration", "lots", "true"},
                                                {"trace", "-p", "abc"}}) {
    auto result = pt::run_perfscope(words);
    pt::expect_no_crash(result);
    EXPECT_EQ(result.exit_status, 129) << words.back();
    EXPECT_EQ(result.err.rfind("perfscope trace: ", 0), 0u) << result.err;
    ASSERT_GE(result.err.size(), hint.size());
    EXPECT_EQ(result.err.substr(result.err.size() - hint.size()), hint) << result.err;
  }
  auto help = pt::run_perfscope({"trace", "--help"});
  EXPECT_EQ(help.exit_status, 0);
  auto at = help.out.find("Examples:\n");
  ASSERT_NE(at, std::string::npos) << help.out;
  std::size_t examples = 0;
  for (auto p = help.out.find("\n  perfscope trace ", at); p != std::string::npos;
       p = help.out.find("\n  perfscope trace ", p + 1)) {
    ++examples;
  }
  EXPECT_EQ(examples, 3u) << help.out;
}

TEST(TraceCli, AnotherUserIsToldWhyNotAndTheFix) {
  if (!pt::running_as_root()) GTEST_SKIP() << "becoming another user needs root";
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "util-linux setpriv is missing";
  auto result =
      pt::run_command({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                       "--inh-caps=-all", PERFSCOPE_CLI_PATH, "trace", "-s", "--", "/bin/true"});
  if (result.exit_status == 126 || result.exit_status == 127) {
    GTEST_SKIP() << "user 65534 cannot run " << PERFSCOPE_CLI_PATH << ": " << result.err;
  }
  pt::expect_no_crash(result);
  if (result.exit_status == 0) return;  // tracefs readable and paranoid <= 1: tracing works
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_NE(result.err.find("cannot trace system calls"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("Fix: "), std::string::npos) << result.err;
}

// perf_event fds a process holds (perfscope has attached once they appear).
int perf_event_fds(pid_t pid) {
  int count = 0;
  std::error_code error;
  for (std::filesystem::directory_iterator it(fmt::format("/proc/{}/fd", pid), error), end;
       !error && it != end; it.increment(error)) {
    std::error_code link_error;
    auto target = std::filesystem::read_symlink(it->path(), link_error);
    if (!link_error && target.string().find("perf_event") != std::string::npos) ++count;
  }
  return count;
}

TEST(TraceCli, AttachedProcessThatExitsEndsTheTraceWithItsSummary) {
  SKIP_UNLESS_TRACING();
  pt::BackgroundCommand target({workload, "--wait-stdin"}, /*stdin_pipe=*/true);
  ASSERT_TRUE(target.started());
  std::string output = pt::temp_path("trace_attached");
  pt::BackgroundCommand tracer({PERFSCOPE_CLI_PATH, "-v", "trace", "-s", "--json", "-o", output,
                                "-p", std::to_string(target.pid())});
  ASSERT_TRUE(tracer.started());
  // -v says when the events are enabled (after they open and the process's names are read).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (tracer.err().find("perfscope: tracing the system calls of") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(tracer.err().find("perfscope: tracing the system calls of"), std::string::npos)
      << tracer.err();
  ASSERT_GE(perf_event_fds(tracer.pid()), 2) << tracer.err();
  target.write_stdin("g");
  auto target_result = target.wait(20000);
  EXPECT_EQ(target_result.exit_status, 0);
  // The target's exit ends the trace: no signal is sent to perfscope.
  auto result = tracer.wait(20000);
  EXPECT_FALSE(tracer.timed_out());
  pt::expect_no_crash(result);
  EXPECT_EQ(result.exit_status, 0) << result.err;
  std::map<std::string, long> calls;
  for (const auto& row : json_lines(read_file(output))) {
    if (row["type"] != "summary") continue;
    EXPECT_EQ(row["tid"], target.pid());
    calls[row["syscall"].get<std::string>()] = row["calls"].get<long>();
  }
  std::filesystem::remove(output);
  EXPECT_EQ(calls["getpid"], 1000);
  EXPECT_EQ(calls["openat"], 10);
  EXPECT_EQ(calls["write"], 5);
  EXPECT_EQ(calls["read"], 1);  // the read it was blocked in when tracing began
}

}  // namespace

namespace {

TEST(TraceCli, DoctorSaysWhetherTraceWorksHere) {
  auto result = pt::run_perfscope({"doctor", "--json"});
  pt::expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  auto report = nlohmann::json::parse(result.out);
  const nlohmann::json* check = nullptr;
  for (const auto& candidate : report["checks"]) {
    if (candidate["id"] == "syscall_tracing") check = &candidate;
  }
  ASSERT_NE(check, nullptr) << result.out;
  std::string why;
  bool works = can_trace(why);
  // The check and a real trace agree: ok (or warn without argument formats) exactly when tracing
  // works, fail with a fix otherwise.
  if (works) {
    EXPECT_NE((*check)["status"], "fail") << check->dump();
    EXPECT_NE((*check)["value"].get<std::string>().find("raw_syscalls:sys_enter/sys_exit sample"),
              std::string::npos);
  } else {
    EXPECT_EQ((*check)["status"], "fail") << check->dump();
    EXPECT_FALSE((*check)["fix"].get<std::string>().empty());
  }
}

}  // namespace

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

double monotonic_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

// perf trace's --no-comm, -T, --max-events and --errno-summary (issue #44).
TEST(TraceCli, PerfsDisplayOptions) {
  SKIP_UNLESS_TRACING();
  // --no-comm: the thread id alone.
  static const std::regex bare(
      R"(^ +[0-9]+\.[0-9]{3} \( *[0-9]+\.[0-9]{3} ms\): ([0-9]+) openat\(.*)");
  std::vector<std::string> lines = lines_of(trace({"-e", "openat", "--no-comm"}));
  ASSERT_EQ(lines.size(), 10u);
  for (const auto& line : lines) EXPECT_TRUE(std::regex_match(line, bare)) << line;

  // -T: the clock's milliseconds (perf's clock, CLOCK_MONOTONIC here), not since the first call.
  double before = monotonic_ms();
  lines = lines_of(trace({"-e", "openat", "-T"}));
  double after = monotonic_ms();
  ASSERT_EQ(lines.size(), 10u);
  for (const auto& line : lines) {
    double time = std::stod(line);
    EXPECT_GE(time, before - 1000) << line;
    EXPECT_LE(time, after + 1000) << line;
  }

  // --max-events: the first five calls, then the command runs on untraced (its five writes).
  lines = lines_of(trace({"-e", "getpid", "--max-events", "5"}));
  EXPECT_EQ(lines.size(), 5u);
  for (const auto& line : lines) EXPECT_NE(line.find(" getpid()"), std::string::npos) << line;

  // --errno-summary: each errno's count under its call's row, as perf prints it.
  std::string summary = trace({"-s", "--errno-summary", "-e", "openat,getpid"});
  static const std::regex openat_row(R"(\n   openat +10 +10 [^\n]*\n\t\t\t\tENOENT: 10\n)");
  EXPECT_TRUE(std::regex_search(summary, openat_row)) << summary;
  EXPECT_EQ(summary.find("\t\t\t\t"), summary.rfind("\t\t\t\t")) << summary;  // getpid: none
  EXPECT_EQ(trace({"-s", "-e", "openat"}).find("ENOENT"), std::string::npos);
}

// --delay: 500 calls, a pause of 600 ms, 1000 calls; traced from 300 ms on: the 1000, as perf.
TEST(TraceCli, DelayTracesOnlyWhatFollowsIt) {
  SKIP_UNLESS_TRACING();
  auto traced =
      pt::run_perfscope({"trace", "-s", "--json", "-e", "getpid", "--delay", "300", "--",
                         PERFSCOPE_WORK_HELPER_PATH, "getpid-delay-getpid", "500", "600", "1000"});
  ASSERT_EQ(traced.exit_status, 0) << traced.err;
  long calls = -1;
  for (const auto& row : json_lines(traced.err)) {
    if (row["type"] == "total" && row["syscall"] == "getpid") calls = row["calls"];
  }
  EXPECT_EQ(calls, 1000) << traced.err;
}

// --filter-pids: the kernel's filter live (a pid that is not there leaves every call), the
// reader's on a recording (the child's calls left out, the others' kept).
TEST(TraceCli, FilterPidsLeavesOutThoseThreads) {
  SKIP_UNLESS_TRACING();
  // 4194304: pid_max's largest value, never a process id.
  std::string live = trace({"-s", "--json", "--filter-pids", "4194304"});
  auto bad = pt::run_perfscope({"trace", "--filter-pids", "12,x", "--", "true"});
  EXPECT_EQ(bad.exit_status, 129) << bad.err;
  EXPECT_NE(bad.err.find("'x' is not a process id"), std::string::npos) << bad.err;
  std::size_t getpid_calls = 0;
  for (const auto& row : json_lines(live)) {
    if (row["type"] == "total" && row["syscall"] == "getpid") getpid_calls = row["calls"];
  }
  EXPECT_EQ(getpid_calls, 1000u) << live;

  pt::TempDir dir;
  std::string data = dir.path() + "/trace.data";
  auto recorded =
      pt::run_perfscope({"trace", "record", "-q", "-o", data, "--", workload, "--child"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto threads = [&](const std::vector<std::string>& options) {
    std::vector<std::string> words{"trace", "-s", "--json", "-i", data};
    words.insert(words.end(), options.begin(), options.end());
    auto replayed = pt::run_perfscope(words);
    EXPECT_EQ(replayed.exit_status, 0) << replayed.err;
    std::map<long, long> getpid_by_tid;
    for (const auto& row : json_lines(replayed.out + replayed.err)) {
      if (row["type"] == "summary" && row["syscall"] == "getpid") {
        getpid_by_tid[row["tid"].get<long>()] = row["calls"].get<long>();
      }
    }
    return getpid_by_tid;
  };
  std::map<long, long> all = threads({});
  ASSERT_EQ(all.size(), 2u);
  long child = all.rbegin()->first;
  std::map<long, long> kept = threads({"--filter-pids", std::to_string(child)});
  all.erase(child);
  EXPECT_EQ(kept, all);
  EXPECT_EQ(kept.begin()->second, 1000);
}

}  // namespace
