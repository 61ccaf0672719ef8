// The scheduler analyses on a scripted sequence of events with known times: timehist's rows
// (perf 6.1's rules, its text), latency's table (waits from sched_waking only with --waking) and
// each thread's time by state. One CPU, two threads (100 and 200) and the idle task:
//
//   1 ms  100 -> 200  (100 sleeps: S)       5 ms  100 -> 200  (100 preempted: 0x100)
//   2 ms  sched_waking 100                  9 ms  200 -> 100  (200 blocks: D)
//   4 ms  200 -> 100  (200 runnable: 0)    10 ms  100 -> idle (100 sleeps: S)
//                                          12 ms  idle -> 200
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "perfscope/analysis/sched/sched_events.hpp"
#include "perfscope/analysis/sched/sched_latency.hpp"
#include "perfscope/analysis/sched/thread_states.hpp"
#include "perfscope/analysis/sched/timehist.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"

namespace {

using namespace perfscope;

constexpr std::uint64_t ms = 1000000;
constexpr std::uint64_t us = 1000;

SchedSwitchEvent switch_event(std::uint64_t time, std::int32_t prev, std::int64_t state,
                              std::int32_t next) {
  SchedSwitchEvent event;
  event.time = time;
  event.cpu = 0;
  event.pid = event.tid = static_cast<std::uint32_t>(prev);
  event.prev_pid = prev;
  event.next_pid = next;
  event.prev_state = state;
  event.prev_comm = prev == 0 ? "swapper/0" : prev == 100 ? "a" : "b";
  event.next_comm = next == 0 ? "swapper/0" : next == 100 ? "a" : "b";
  return event;
}

SchedWakeupEvent waking(std::uint64_t time, std::int32_t target) {
  SchedWakeupEvent event;
  event.time = time;
  event.kind = SchedWakeupKind::waking;
  event.target = target;
  event.target_comm = target == 100 ? "a" : "b";
  return event;
}

void play(SchedEventHandler& handler) {
  handler.on_switch(switch_event(1 * ms, 100, 1, 200));
  handler.on_wakeup(waking(2 * ms, 100));
  handler.on_switch(switch_event(4 * ms, 200, 0, 100));
  SchedRuntimeEvent ran;
  ran.time = 4 * ms;
  ran.target = 200;
  ran.runtime = 3 * ms;
  handler.on_runtime(ran);
  handler.on_switch(switch_event(5 * ms, 100, 0x100, 200));
  handler.on_switch(switch_event(9 * ms, 200, 2, 100));
  handler.on_switch(switch_event(10 * ms, 100, 1, 0));
  handler.on_switch(switch_event(12 * ms, 0, 0, 200));
}

TEST(SchedTimehist, RowsFollowPerfRules) {
  TaskMaps tasks;
  std::vector<TimehistRow> rows;
  std::vector<std::string> names;
  TimehistAnalyzer analyzer(tasks, 1, [&](const TimehistRow& row) {
    rows.push_back(row);
    names.emplace_back(row.comm);
  });
  play(analyzer);
  ASSERT_EQ(rows.size(), 6u);
  // The first switch on a CPU: nothing says when its task came in.
  EXPECT_EQ(rows[0].tid, 100u);
  EXPECT_EQ(names[0], "");  // no COMM record named it: perf prints ":100"
  EXPECT_EQ(rows[0].run, 0u);
  EXPECT_EQ(rows[0].wait(), 0u);
  // 200 ran from 1 to 4 ms.
  EXPECT_EQ(rows[1].tid, 200u);
  EXPECT_EQ(rows[1].run, 3 * ms);
  EXPECT_EQ(rows[1].wait(), 0u);
  // 100 slept 1-4 ms (woken at 2: 2 ms of delay), ran 4-5.
  EXPECT_EQ(rows[2].tid, 100u);
  EXPECT_EQ(rows[2].sleep, 3 * ms);
  EXPECT_EQ(rows[2].delay, 2 * ms);
  EXPECT_EQ(rows[2].run, 1 * ms);
  // 200 left runnable (state 0) at 4, back at 5: perf's "preempt", no delay (no wake-up).
  EXPECT_EQ(rows[3].tid, 200u);
  EXPECT_EQ(rows[3].preempt, 1 * ms);
  EXPECT_EQ(rows[3].delay, 0u);
  EXPECT_EQ(rows[3].run, 4 * ms);
  // 100 was preempted (0x100) at 5, back at 9: perf 6.1 counts it as sleep, without delay.
  EXPECT_EQ(rows[4].tid, 100u);
  EXPECT_EQ(rows[4].sleep, 4 * ms);
  EXPECT_EQ(rows[4].preempt, 0u);
  EXPECT_EQ(rows[4].delay, 0u);
  EXPECT_EQ(rows[4].run, 1 * ms);
  // The idle task: its own row, named <idle>.
  EXPECT_TRUE(rows[5].idle);
  EXPECT_EQ(names[5], "<idle>");
  EXPECT_EQ(rows[5].run, 2 * ms);

  EXPECT_EQ(perf_task_state_letter(1, false), 'S');
  EXPECT_EQ(perf_task_state_letter(2, false), 'D');
  EXPECT_EQ(perf_task_state_letter(0, false), 'R');
  EXPECT_EQ(perf_task_state_letter(0x100, false), 'W');
  EXPECT_EQ(perf_task_state_letter(0x80, false), 'K');
  EXPECT_EQ(perf_task_state_letter(0x1000, false), '?');
  EXPECT_EQ(perf_task_state_letter(1, true), 'I');
}

TEST(SchedTimehist, TextIsPerfs) {
  TimehistRow row;
  row.time = 389 * 1000 * ms + 831180 * 1000 + 999;  // 389.831180999 s
  row.cpu = 1;
  row.pid = 13146;
  row.tid = 13150;
  row.comm = "sched-pipe";
  row.sleep = 12 * ms + 345678;
  row.delay = 7000;
  row.run = 1234 * ms;
  row.prev_state = 1;
  TimehistText text(true);
  std::string out;
  text.header(out);
  text.row(out, row);
  const std::string name = "sched-pipe[13150/13146]";
  EXPECT_EQ(out,
            "           time    cpu  task name                       wait time  sch delay   run "
            "time  state\n"
            "                        [tid/pid]                          (msec)     (msec)     "
            "(msec)       \n"
            "--------------- ------  ------------------------------  ---------  ---------  "
            "---------  -----\n"
            "     389.831180 [0001]  " +
                name + std::string(30 - name.size(), ' ') +
                "     12.345      0.007   1234.000      S \n");
  // A name longer than the column widens it for the rows after it; perf cuts names at 31.
  row.comm = "a-rather-long-thread-name";
  out.clear();
  text.row(out, row);
  EXPECT_NE(out.find("a-rather-long-thread-name[13150 "), std::string::npos) << out;
  // A task the kernel could not name (exiting: tid -1) and no COMM record named: as perf.
  row.comm = "";
  row.tid = 0xffffffff;
  out.clear();
  text.row(out, row);
  EXPECT_NE(out.find("  :-1[-1/13146]  "), std::string::npos) << out;
  row.tid = 13150;
  // Control bytes from a recorded name never reach the terminal.
  row.comm = "evil\x1b[2J";
  out.clear();
  text.row(out, row);
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  EXPECT_NE(out.find("evil\\x1b[2J"), std::string::npos) << out;
}

TEST(SchedLatency, PerfRulesAndWaking) {
  TaskMaps tasks;
  LatencyAnalyzer perf_rules(tasks, LatencyOptions{}, true);
  play(perf_rules);
  LatencyReport report = perf_rules.finish(LatencyOptions{}, SchedWalkStats{});
  // 100 never waited measurably (its wake-up was sched_waking; its preemption has state
  // 0x100); the idle task is left out.
  ASSERT_EQ(report.rows.size(), 1u);
  const LatencyRow& b = report.rows[0];
  EXPECT_EQ(b.comm, ":200");
  EXPECT_EQ(b.tid, 200u);
  EXPECT_EQ(b.runtime, 3 * ms);
  EXPECT_EQ(b.switches, 2u);  // in at 1 ms (first seen: no wait), and 4 -> 5 ms
  EXPECT_EQ(b.max_delay, 1 * ms);
  EXPECT_EQ(b.max_delay_start, 4 * ms);
  EXPECT_EQ(b.max_delay_end, 5 * ms);
  EXPECT_EQ(b.average_delay(), ms / 2);
  EXPECT_EQ(report.total_switches, 2u);
  std::string text = render_latency(report);
  EXPECT_NE(text.find("  :200:200              |      3.000 ms |        2 | avg:   0.500 ms | "
                      "max:   1.000 ms | max start:     0.004000 s | max end:     0.005000 s\n"),
            std::string::npos)
      << text;

  LatencyOptions with_waking;
  with_waking.count_waking = true;
  LatencyAnalyzer newer(tasks, with_waking, true);
  play(newer);
  report = newer.finish(with_waking, SchedWalkStats{});
  ASSERT_EQ(report.rows.size(), 2u);
  // 100: woken at 2 ms, in at 4 ms. Sorted by average delay, largest first.
  EXPECT_EQ(report.rows[0].tid, 100u);
  EXPECT_EQ(report.rows[0].switches, 1u);
  EXPECT_EQ(report.rows[0].max_delay, 2 * ms);
  EXPECT_EQ(report.rows[1].tid, 200u);
}

TEST(SchedLatency, SortKeys) {
  EXPECT_EQ(parse_latency_sort_keys("max, switch"), (std::vector<std::string>{"max", "switch"}));
  EXPECT_EQ(parse_latency_sort_keys("runtime,pid"), (std::vector<std::string>{"runtime", "pid"}));
  EXPECT_THROW(parse_latency_sort_keys("avg,wait"), std::invalid_argument);
  EXPECT_THROW(parse_latency_sort_keys(" , "), std::invalid_argument);
}

TEST(SchedStates, TimeAddsUpByState) {
  TaskMaps tasks;
  ThreadStateAnalyzer analyzer(tasks);
  play(analyzer);
  auto rows = analyzer.finish();
  ASSERT_EQ(rows.size(), 2u);  // the idle task is left out
  // By running time: 200 first.
  const ThreadStateRow& b = rows[0];
  EXPECT_EQ(b.tid, 200u);
  EXPECT_EQ(b.comm, "b");
  EXPECT_EQ(b.running, 7 * ms);   // 1-4, 5-9
  EXPECT_EQ(b.runnable, 1 * ms);  // 4-5
  EXPECT_EQ(b.blocked, 3 * ms);   // 9-12 (D)
  EXPECT_EQ(b.sleeping, 0u);
  EXPECT_EQ(b.wall(), 11 * ms);
  const ThreadStateRow& a = rows[1];
  EXPECT_EQ(a.tid, 100u);
  EXPECT_EQ(a.running, 2 * ms);   // 4-5, 9-10 (running before 1 ms: from the recording's start)
  EXPECT_EQ(a.runnable, 6 * ms);  // woken 2-4, preempted 5-9
  EXPECT_EQ(a.sleeping, 3 * ms);  // 1-2, 10-12
  EXPECT_EQ(a.blocked, 0u);
  EXPECT_EQ(a.first, 1 * ms);
  EXPECT_EQ(a.last, 12 * ms);
  EXPECT_EQ(state_after_switch(0x100), SchedState::runnable);  // preempted (TASK_REPORT_MAX)
  EXPECT_EQ(state_after_switch(0), SchedState::runnable);
  EXPECT_EQ(state_after_switch(0x2), SchedState::blocked);
  EXPECT_EQ(state_after_switch(0x80), SchedState::sleeping);  // idle kernel thread
  EXPECT_EQ(state_after_switch(0x1), SchedState::sleeping);
  std::string text = render_thread_states(rows);
  EXPECT_NE(text.find("b[200]                              11.000        7.000  63.6%        "
                      "1.000   9.1%        0.000   0.0%        3.000  27.3%\n"),
            std::string::npos)
      << text;
}

// As kernel 6.18 under KVM records it: 100 is reported switched out for 200 but goes on
// running, and is switched out again with no switch to it between. That time is unknown.
TEST(SchedStates, MissingSwitchInIsUnknownTime) {
  TaskMaps tasks;
  ThreadStateAnalyzer analyzer(tasks);
  analyzer.on_switch(switch_event(1 * ms, 0, 0, 100));
  analyzer.on_switch(switch_event(3 * ms, 100, 0, 200));    // preempted: runnable from 3 ms
  analyzer.on_switch(switch_event(4 * ms, 100, 1, 0));      // again, with no switch-in between
  analyzer.on_switch(switch_event(9 * ms, 0, 0, 100));      // woken 4-9 (no wake-up seen: sleeping)
  analyzer.on_switch(switch_event(10 * ms, 100, 0x10, 0));  // exits
  auto rows = analyzer.finish();
  auto found = std::find_if(rows.begin(), rows.end(),
                            [](const ThreadStateRow& row) { return row.tid == 100; });
  ASSERT_NE(found, rows.end());
  EXPECT_EQ(found->running, 3 * ms);  // 1-3, 9-10
  EXPECT_EQ(found->unknown, 1 * ms);  // 3-4
  EXPECT_EQ(found->runnable, 0u);
  EXPECT_EQ(found->sleeping, 5 * ms);
  EXPECT_EQ(found->unplaced_switch_ins, 1u);
  EXPECT_EQ(found->missing_switches(), 1u);
  EXPECT_EQ(found->switches, 3u);
  EXPECT_EQ(found->wall(), 9 * ms);
  EXPECT_TRUE(found->exited);
  std::string text = render_thread_states(rows);
  EXPECT_NE(text.find("unknown"), std::string::npos) << text;
  EXPECT_NE(text.find("        1.000  11.1%  (exited)  (1 switch missing)\n"), std::string::npos)
      << text;
  // Without unknown time the column is left out.
  EXPECT_EQ(render_thread_states({}).find("unknown"), std::string::npos);
}

SchedRuntimeEvent runtime_event(std::uint64_t time, std::int32_t target, std::uint64_t ran) {
  SchedRuntimeEvent event;
  event.time = time;
  event.target = target;
  event.runtime = ran;
  return event;
}

// The same recording with 100's sched_stat_runtime events: the first after its missing switch-in
// says it ran 0.5 ms by 3.7 ms, so it went back on the CPU at 3.2 ms. A switch to 100 while it
// is on a CPU (its switch-out missing) leaves the time after its last runtime event unknown.
TEST(SchedStates, RuntimeEventsPlaceAMissingSwitchIn) {
  TaskMaps tasks;
  ThreadStateAnalyzer analyzer(tasks);
  analyzer.on_switch(switch_event(1 * ms, 0, 0, 100));
  analyzer.on_runtime(runtime_event(2 * ms, 100, 1 * ms));    // on the CPU: changes nothing
  analyzer.on_switch(switch_event(3 * ms, 100, 0x100, 200));  // preempted: runnable from 3 ms
  analyzer.on_runtime(runtime_event(3700 * us, 100, 500 * us));
  analyzer.on_runtime(runtime_event(3800 * us, 100, 100 * us));
  analyzer.on_switch(switch_event(4 * ms, 100, 1, 0));  // sleeps 4-6
  analyzer.on_switch(switch_event(6 * ms, 0, 0, 100));
  analyzer.on_runtime(runtime_event(7 * ms, 100, 1 * ms));
  analyzer.on_switch(switch_event(9 * ms, 0, 0, 100));  // again: out at 7 ms at the earliest
  analyzer.on_switch(switch_event(10 * ms, 100, 0x10, 0));
  auto rows = analyzer.finish();
  auto found = std::find_if(rows.begin(), rows.end(),
                            [](const ThreadStateRow& row) { return row.tid == 100; });
  ASSERT_NE(found, rows.end());
  EXPECT_EQ(found->runnable, 200 * us);                            // 3-3.2
  EXPECT_EQ(found->running, 2 * ms + 800 * us + 1 * ms + 1 * ms);  // 1-3, 3.2-4, 6-7, 9-10
  EXPECT_EQ(found->sleeping, 2 * ms);                              // 4-6
  EXPECT_EQ(found->unknown, 2 * ms);                               // 7-9
  EXPECT_EQ(found->placed_switch_ins, 1u);
  EXPECT_EQ(found->unplaced_switch_ins, 0u);
  EXPECT_EQ(found->missing_switch_outs, 1u);
  EXPECT_EQ(found->wall(), 9 * ms);
}

}  // namespace
