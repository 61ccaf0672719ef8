// Pairing enter/exit events per thread into calls, and perf trace -s's statistics over them.
#include "perfscope/analysis/trace/syscall_calls.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

using perfscope::SyscallCall;
using perfscope::SyscallPairer;
using perfscope::SyscallStats;
using perfscope::SyscallSummary;

struct Collect : perfscope::SyscallCallSink {
  void call(const SyscallCall& call) override { calls.push_back(call); }
  std::vector<SyscallCall> calls;
};

constexpr std::array<std::uint64_t, 6> args{1, 2, 3, 4, 5, 6};

TEST(SyscallPairer, PairsEachThreadsEnterWithItsExitWhenThreadsInterleave) {
  SyscallPairer pairer;
  Collect out;
  pairer.enter(10, 10, 1000, 0, args, out);   // read in thread 10
  pairer.enter(10, 11, 1100, 39, args, out);  // getpid in thread 11
  EXPECT_TRUE(out.calls.empty());
  EXPECT_EQ(pairer.open_calls(), 2u);
  pairer.exit(10, 11, 1150, 39, 10, out);
  pairer.exit(10, 10, 5000, 0, -11, out);  // read fails with EAGAIN
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[0].tid, 11);
  EXPECT_EQ(out.calls[0].number, 39);
  EXPECT_EQ(out.calls[0].duration_ns(), 50u);
  EXPECT_EQ(out.calls[0].ret, 10);
  EXPECT_FALSE(out.calls[0].failed());
  EXPECT_EQ(out.calls[1].tid, 10);
  EXPECT_EQ(out.calls[1].duration_ns(), 4000u);
  EXPECT_TRUE(out.calls[1].failed());
  EXPECT_EQ(out.calls[1].error_number(), 11);
  EXPECT_EQ(out.calls[1].args, args);
  EXPECT_EQ(pairer.open_calls(), 0u);
}

TEST(SyscallPairer, AnExitWithoutItsEnterIsACallWithoutDuration) {
  SyscallPairer pairer;
  Collect out;
  pairer.exit(7, 7, 2000, 59, 0, out);  // execve: enabled at exec, its enter was never seen
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_FALSE(out.calls[0].entered);
  EXPECT_TRUE(out.calls[0].exited);
  EXPECT_FALSE(out.calls[0].has_duration());
  EXPECT_EQ(out.calls[0].time(), 2000u);
}

TEST(SyscallPairer, AnExitWithoutNumberEndsTheOpenCall) {
  // rt_sigreturn restores the interrupted registers: its exit event reports call -1.
  SyscallPairer pairer;
  Collect out;
  pairer.enter(4, 4, 100, 15, args, out);
  pairer.exit(4, 4, 130, -1, 61, out);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].number, 15);
  EXPECT_EQ(out.calls[0].duration_ns(), 30u);
  EXPECT_EQ(out.calls[0].ret, 61);
}

TEST(SyscallPairer, CallsThatNeverReturnAreHandedOutUnfinished) {
  SyscallPairer pairer;
  Collect out;
  pairer.enter(5, 5, 100, 231, args, out);  // exit_group
  pairer.enter(5, 6, 90, 202, args, out);   // futex, still waiting when tracing stops
  pairer.thread_exited(5, out);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].number, 231);
  EXPECT_FALSE(out.calls[0].exited);
  pairer.finish(out);
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[1].number, 202);
  EXPECT_EQ(pairer.open_calls(), 0u);
}

TEST(SyscallPairer, AnExitOfAnotherCallEndsTheOpenOneUnfinished) {
  // The open call's exit and the next call's enter were lost (a full buffer).
  SyscallPairer pairer;
  Collect out;
  pairer.enter(3, 3, 100, 0, args, out);
  pairer.exit(3, 3, 300, 1, 8, out);
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[0].number, 0);
  EXPECT_FALSE(out.calls[0].exited);
  EXPECT_EQ(out.calls[1].number, 1);
  EXPECT_FALSE(out.calls[1].entered);
  // A second enter while one is open: the first is handed out unfinished.
  pairer.enter(3, 3, 400, 0, args, out);
  pairer.enter(3, 3, 500, 1, args, out);
  ASSERT_EQ(out.calls.size(), 3u);
  EXPECT_EQ(out.calls[2].enter_time, 400u);
  EXPECT_FALSE(out.calls[2].exited);
}

TEST(SyscallStats, MatchesPerfTraceStatistics) {
  // Durations 1, 2, 3, 4 ms: mean 2.5, sample variance 5/3, variance of the mean 5/12.
  SyscallStats stats;
  for (std::uint64_t ms : {1, 2, 3, 4}) stats.add(ms * 1000000, ms == 4 ? 2 : 0);
  EXPECT_EQ(stats.calls, 4u);
  EXPECT_EQ(stats.errors, 1u);
  EXPECT_EQ(stats.errnos.at(2), 1u);
  EXPECT_DOUBLE_EQ(stats.mean_ms(), 2.5);
  EXPECT_DOUBLE_EQ(stats.total_ms(), 10.0);
  EXPECT_DOUBLE_EQ(stats.min_ms(), 1.0);
  EXPECT_DOUBLE_EQ(stats.max_ms(), 4.0);
  EXPECT_NEAR(stats.stddev_percent(), 100.0 * std::sqrt(5.0 / 12.0) / 2.5, 1e-9);
  SyscallStats one;
  one.add(5, 0);
  EXPECT_EQ(one.stddev_percent(), 0.0);  // perf: no deviation from one value
}

TEST(SyscallSummary, CountsExitedCallsPerThreadAndAddsThemUp) {
  SyscallSummary summary;
  auto call = [](pid_t tid, long number, std::uint64_t enter, std::uint64_t exit,
                 std::int64_t ret) {
    SyscallCall c;
    c.pid = 1;
    c.tid = tid;
    c.number = number;
    c.enter_time = enter;
    c.exit_time = exit;
    c.entered = enter != 0;
    c.exited = exit != 0;
    c.ret = ret;
    return c;
  };
  summary.add(call(1, 39, 100, 200, 1));
  summary.add(call(1, 39, 300, 600, 1));
  summary.add(call(2, 39, 100, 1100, 1));
  summary.add(call(2, 257, 100, 150, -2));
  summary.add(call(2, 231, 100, 0, 0));  // never returned: not counted (perf trace -s)
  summary.add(call(2, 59, 0, 50, 0));    // enter not seen: counted with duration 0
  for (int i = 0; i < 3; ++i) summary.count_event(1, 2);
  summary.count_event(1, 1);
  auto threads = summary.threads();
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0]->tid, 2);  // more events first
  EXPECT_EQ(threads[0]->syscalls.count(231), 0u);
  EXPECT_EQ(threads[0]->syscalls.at(59).calls, 1u);
  EXPECT_EQ(threads[0]->syscalls.at(59).max, 0u);
  EXPECT_EQ(threads[0]->syscalls.at(257).errors, 1u);
  auto rows = threads[0]->by_total();
  EXPECT_EQ(rows.front().first, 39);  // the longest total first
  auto totals = summary.totals();
  const SyscallStats& getpid = totals.at(39);
  EXPECT_EQ(getpid.calls, 3u);
  EXPECT_DOUBLE_EQ(getpid.mean, 1400.0 / 3.0);
  EXPECT_EQ(getpid.min, 100u);
  EXPECT_EQ(getpid.max, 1000u);
  // The merged accumulator equals one fed every value.
  SyscallStats direct;
  for (std::uint64_t d : {100, 300, 1000}) direct.add(d, 0);
  EXPECT_NEAR(getpid.m2, direct.m2, 1e-6);
  EXPECT_EQ(summary.events(), 4u);
}

}  // namespace
