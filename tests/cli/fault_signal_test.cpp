// Signals at the tools while they wait: SIGINT ending `stat -I` (the final totals still print and
// the intervals add up to them), and storms of signals the tools ignore or handle while they sit
// in poll, epoll_wait, waitpid and write (SIGCHLD, SIGWINCH, SIGURG, SIGCONT, an ignored SIGUSR1,
// SIGSTOP/SIGCONT pairs, and SIGINT where it must not stop the count). Counts of an exact
// workload (getpid calls, through the syscalls:sys_enter_getpid tracepoint) must come out exact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
using perfscope::testing::expect_no_crash;
using perfscope::testing::temp_path;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string thread_churn = PERFSCOPE_THREAD_CHURN_PATH;

// perfscope with SIGUSR1 ignored (an ignored disposition survives exec), as a service manager or
// a shell with `trap '' USR1` would start it.
std::vector<std::string> with_usr1_ignored(std::vector<std::string> args) {
  std::vector<std::string> argv{"/bin/sh", "-c", "trap '' USR1; exec \"$0\" \"$@\"",
                                PERFSCOPE_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Sends signals to `pid` until destroyed: the ones the tools ignore, stop/continue pairs, and
// (with `with_sigint`) SIGINT, which a stat of a command must take without stopping its count.
class SignalStorm {
 public:
  SignalStorm(pid_t pid, bool with_sigint) : pid_(pid) {
    thread_ = std::thread([this, with_sigint] {
      std::vector<int> signals{SIGCHLD, SIGWINCH, SIGURG, SIGCONT, SIGUSR1};
      if (with_sigint) signals.push_back(SIGINT);
      for (unsigned round = 0; !stop_.load(); ++round) {
        for (int signal_number : signals) ::kill(pid_, signal_number);
        if (round % 8 == 0) {
          ::kill(pid_, SIGSTOP);
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          ::kill(pid_, SIGCONT);
        }
        sent_ += signals.size();
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    });
  }
  ~SignalStorm() { stop(); }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  std::size_t sent() const { return sent_; }

 private:
  pid_t pid_;
  std::atomic<bool> stop_{false};
  std::size_t sent_ = 0;
  std::thread thread_;
};

// The sh of with_usr1_ignored() would die of the storm's SIGINT: wait for the exec first.
bool wait_for_exec(pid_t pid) {
  for (int i = 0; i < 12000; ++i) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name == "perfscope") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// True once `pid` catches SIGINT (/proc/PID/status SigCgt): before that, a SIGINT ends it the
// default way, as it would end any program still starting up.
bool wait_for_sigint_handler(pid_t pid) {
  for (int i = 0; i < 5000; ++i) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("SigCgt:", 0) != 0) continue;
      unsigned long long caught = std::strtoull(line.c_str() + 7, nullptr, 16);
      if (caught & (1ULL << (SIGINT - 1))) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// stat -x: "event,value,unit,..." a line.
double csv_count(const std::string& csv, const std::string& event) {
  std::istringstream lines(csv);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(event + ",", 0) == 0)
      return std::strtod(line.c_str() + event.size() + 1, nullptr);
  }
  return -1;
}

void skip_without_tracepoints() {
  if (!pt::tracefs_available()) GTEST_SKIP() << "tracefs is not mounted (tracepoints need it)";
  if (!pt::running_as_root()) GTEST_SKIP() << "tracepoint counts need root at paranoid 2";
}

// SIGINT ends a `stat -I 100` of a process: the last partial interval and the totals print, and
// the intervals add up to the totals.
TEST(InterruptedIntervals, SigintPrintsTheFinalTotals) {
  pt::BackgroundCommand busy({thread_churn, "--live", "4", "--churn-until-signal"});
  ASSERT_TRUE(busy.wait_for_output("ready", 10000));
  pt::BackgroundCommand stat({PERFSCOPE_CLI_PATH, "stat", "-I", "100", "-e", "task-clock", "-p",
                              std::to_string(busy.pid())});
  // The first interval printed says stat counts (a loaded machine starts it late); 450 ms more
  // make four more intervals.
  bool counting = false;
  for (int i = 0; i < 12000 && !counting; ++i) {
    counting = stat.err().find("task-clock") != std::string::npos;
    if (!counting) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(counting) << stat.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  stat.signal(SIGINT);
  auto result = stat.wait(10000);
  busy.signal(SIGUSR1);
  EXPECT_FALSE(stat.timed_out());
  // As perf stat: an open-ended measurement ended by SIGINT prints its totals and exits 130.
  expect_no_crash(result, 130);
  ASSERT_EQ(result.exit_status, 130) << result.err;
  ASSERT_THAT(result.err, HasSubstr("Performance counter stats for"));

  double intervals_ms = 0, total_ms = -1;
  int interval_lines = 0;
  bool in_totals = false;
  std::istringstream lines(result.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("Performance counter stats") != std::string::npos) in_totals = true;
    if (line.find("task-clock") == std::string::npos || line[0] == '#') continue;
    std::istringstream words(line);
    std::string first, second;
    words >> first >> second;
    if (in_totals) {
      total_ms = std::strtod(first.c_str(), nullptr);
    } else {
      intervals_ms += std::strtod(second.c_str(), nullptr);
      ++interval_lines;
    }
  }
  EXPECT_GE(interval_lines, 4) << result.err;  // 100, 200, 300, 400, 500 ms, then the partial one
  EXPECT_GT(total_ms, 0) << result.err;
  // Each printed value is rounded to 0.01 ms. And a thread the churn creates while stat disables
  // the counters can inherit a counter still enabled (the kernel walks the children it has at
  // the ioctl): it counts on until the thread exits, into the totals read after the last
  // interval. A loaded make test once saw 0.15 ms of 73.73 so; 0.5 % of the total is allowed.
  EXPECT_NEAR(intervals_ms, total_ms, std::max(0.01 * (interval_lines + 1), 0.005 * total_ms))
      << result.err;
}

// stat of a command under a storm (SIGINT included: with a command, stat waits for it and the
// count goes on): poll and waitpid see EINTR again and again; the count is exact.
TEST(SignalStorm, StatOfACommandCountsExactly) {
  skip_without_tracepoints();
  constexpr long calls = 300000;
  pt::BackgroundCommand stat(
      with_usr1_ignored({"stat", "--csv", "-e", "syscalls:sys_enter_getpid", "--", work_helper,
                         "delay-getpid", "300", std::to_string(calls)}));
  ASSERT_TRUE(wait_for_exec(stat.pid()));
  ASSERT_TRUE(wait_for_sigint_handler(stat.pid()));
  SignalStorm storm(stat.pid(), /*with_sigint=*/true);
  auto result = stat.wait(60000);
  storm.stop();
  EXPECT_FALSE(stat.timed_out());
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_GT(storm.sent(), 100u);
  EXPECT_EQ(csv_count(result.err, "syscalls:sys_enter_getpid"), static_cast<double>(calls))
      << result.err;
}

// stat -p under a storm of ignored signals and stop/continue pairs: it neither stops early nor
// misses a call; it ends when the process does.
TEST(SignalStorm, StatOfAProcessCountsExactly) {
  skip_without_tracepoints();
  constexpr long calls = 200000;
  pt::BackgroundCommand target({work_helper, "wait-getpid", std::to_string(calls)}, true);
  ASSERT_TRUE(target.started());
  pt::BackgroundCommand stat(
      with_usr1_ignored({"-v", "stat", "--csv", "-e", "syscalls:sys_enter_getpid", "-p",
                         std::to_string(target.pid())}));
  bool attached = false;
  for (int i = 0; i < 12000 && !attached; ++i) {
    attached = stat.err().find("event fds on") != std::string::npos;
    if (!attached) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(attached) << stat.err();
  SignalStorm storm(stat.pid(), /*with_sigint=*/false);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(stat.running()) << "stat stopped before its process did: " << stat.err();
  target.write_stdin("x");
  EXPECT_EQ(target.wait(30000).exit_status, 0);
  auto result = stat.wait(10000);
  storm.stop();
  EXPECT_FALSE(stat.timed_out());
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(csv_count(result.err, "syscalls:sys_enter_getpid"), static_cast<double>(calls))
      << result.err;
}

// record of a command under the storm (no SIGINT: that ends a recording by design): epoll_wait
// and the file writes see EINTR; every call is a sample in the file or a counted loss.
TEST(SignalStorm, RecordLosesNothingUnaccounted) {
  skip_without_tracepoints();
  constexpr long calls = 200000;
  std::string path = temp_path("record");
  pt::BackgroundCommand record(
      with_usr1_ignored({"record", "-e", "syscalls:sys_enter_getpid", "-c", "1", "-o", path, "--",
                         work_helper, "delay-getpid", "300", std::to_string(calls)}));
  ASSERT_TRUE(wait_for_exec(record.pid()));
  SignalStorm storm(record.pid(), /*with_sigint=*/false);
  auto result = record.wait(60000);
  storm.stop();
  EXPECT_FALSE(record.timed_out());
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;

  std::uint64_t samples = 0, lost = 0;
  auto reader = perfscope::PerfDataReader::open(path);
  EXPECT_TRUE(reader.notes().empty());
  auto error = reader.for_each_record([&](const perfscope::PerfDataRecord& record_in_file) {
    auto type = static_cast<perfscope::abi::RecordType>(record_in_file.view.type());
    if (type == perfscope::abi::RecordType::sample) ++samples;
    if (type == perfscope::abi::RecordType::lost && record_in_file.view.bytes.size() >= 24) {
      std::uint64_t value = 0;
      std::memcpy(&value, record_in_file.view.bytes.data() + 16, sizeof value);
      lost += value;
    }
  });
  EXPECT_FALSE(error) << error->what();
  EXPECT_THAT(result.err, HasSubstr("[ perfscope record: " + std::to_string(samples) + " samples"));
  EXPECT_GE(samples + lost, static_cast<std::uint64_t>(calls)) << result.err;
  EXPECT_LE(samples + lost, static_cast<std::uint64_t>(calls) + 64) << result.err;
  std::filesystem::remove(path);
}

}  // namespace
