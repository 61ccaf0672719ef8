// perf sched timehist: one row per context switch, for the task switched out: how long it had
// waited off the CPU before this run (wait time), how long of that it was runnable after its
// wake-up (scheduling delay), and how long it ran. The rules are those of Linux perf 6.1 (the
// oracle this project checks against, the perf of Debian 12), so the same file gives the same
// numbers:
//   - a task's run is from the previous sched_switch on its CPU to its own switch-out;
//   - its wait is from its previous switch-out to the start of this run;
//   - its delay is from its first wake-up (sched_waking, else sched_wakeup/_new) since that
//     switch-out to the start of this run; a task switched out runnable (preempted) has no
//     wake-up, hence no delay (perf 6.1 does not count it);
//   - the first switch seen on a CPU has no run (nothing says when that task came in).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "perfscope/analysis/sched/sched_events.hpp"

namespace perfscope {

struct TimehistRow {
  std::uint64_t time = 0;  // of the switch-out
  std::uint32_t cpu = 0;
  // Of the task switched out (0 for the idle task); pid as perf keeps it: the process of the
  // record that first named the thread, 0 when that was a wake-up (then printed without ids).
  std::uint32_t pid = 0, tid = 0;
  bool idle = false;
  // Its name as the recording's COMM records say (raw bytes: print through safe_text); empty
  // when none named it, which perf 6.1 prints as ":TID" (it does not fall back to the
  // tracepoint's prev_comm).
  std::string_view comm;
  // Off-CPU time before this run, split by the state it left the CPU in last time (perf's
  // rule: prev_state 0 is preempted, 2 is I/O, anything else sleep).
  std::uint64_t sleep = 0, iowait = 0, preempt = 0;
  std::uint64_t delay = 0;  // scheduling delay: from its wake-up to this run's start
  std::uint64_t run = 0;
  std::int64_t prev_state = 0;  // how it left the CPU now
  std::uint64_t wait() const noexcept { return sleep + iowait + preempt; }
};

// perf 6.1's one-letter state of a prev_state ('I' for the idle task): the index of its lowest
// set bit in "RSDTtZXxKWP" (so a preempted task, 0x100, is 'W' with kernels since 4.14).
char perf_task_state_letter(std::int64_t prev_state, bool idle) noexcept;

class TimehistAnalyzer : public SchedEventHandler {
 public:
  using RowSink = std::function<void(const TimehistRow&)>;
  using LostSink = std::function<void(std::uint64_t lost, std::uint32_t cpu, std::uint64_t time)>;
  // `tasks`: the names of the threads as the walk replays them (SchedTrace::tasks()); `cpus`:
  // the CPUs recorded (SchedTrace::cpus_online(), 0 when unknown: grown as events come).
  TimehistAnalyzer(const TaskMaps& tasks, std::uint32_t cpus, RowSink rows, LostSink lost = {});

  void on_switch(const SchedSwitchEvent& event) override;
  void on_wakeup(const SchedWakeupEvent& event) override;
  void on_task(std::uint32_t pid, std::uint32_t tid, std::uint64_t time, bool exit) override;
  void on_comm(std::uint32_t pid, std::uint32_t tid) override;
  void on_lost(std::uint64_t lost, std::uint32_t cpu, std::uint64_t time) override;

 private:
  struct Runtime {
    std::uint64_t last_time = 0;     // its last switch-out
    std::uint64_t ready_to_run = 0;  // its first wake-up since then
    std::int64_t last_state = 0;
    // perf's thread: its process is the one of the record that first named the thread id (a
    // COMM or FORK record, a switch's sample), or 0 when a wake-up did, and stays that.
    bool known = false;
    std::uint32_t pid = 0;
  };
  Runtime& thread(std::uint32_t tid, std::uint32_t pid);
  const TaskMaps& tasks_;
  RowSink rows_;
  LostSink lost_;
  std::unordered_map<std::uint32_t, Runtime> threads_;
  // The last threads looked up, by tid modulo its size: a switch names two threads, a wake-up
  // one, and mostly the same few (the map's values stay where they are until erased).
  struct Cached {
    std::uint32_t tid = 0;
    Runtime* runtime = nullptr;
  };
  std::array<Cached, 64> cache_{};
  std::vector<Runtime> idle_;               // by CPU
  std::vector<std::uint64_t> last_switch_;  // by CPU
  TimehistRow row_;
};

// The text of perf sched timehist: its header, then a row per switch. The task column widens
// (for the rows after it) when a name is longer than it, as perf's does.
class TimehistText {
 public:
  explicit TimehistText(bool show_state) : show_state_(show_state) {}
  void header(std::string& out) const;
  void row(std::string& out, const TimehistRow& row);
  void lost(std::string& out, std::uint64_t lost, std::uint32_t cpu, std::uint64_t time) const;

 private:
  bool show_state_;
  int comm_width_ = 30;
  // The task column of the last tasks printed, by tid modulo its size: building it (escaping,
  // ids) is most of a row's cost, and rows name the same few tasks again and again.
  struct Name {
    std::uint32_t tid = 0, pid = 0;
    bool valid = false, idle = false;
    std::string comm, text;
  };
  std::array<Name, 64> names_;
};

// "SECONDS.MICROSECONDS" as perf prints times (timestamp__scnprintf_usec), in `buffer`.
std::string_view perf_time(char (&buffer)[32], std::uint64_t ns);

}  // namespace perfscope
