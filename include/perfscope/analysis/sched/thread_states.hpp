// Where each thread's time went, from the scheduler tracepoints: running on a CPU, runnable but
// waiting for one (preempted, or woken and not yet switched in), sleeping (S, and the other
// states a task chooses: idle kernel threads, parked, stopped), and blocked uninterruptibly (D,
// mostly I/O). Unlike timehist (which follows perf 6.1's reading), a preempted task is read from
// the preemption bit of prev_state and counts as runnable.
//
// Each thread is followed from its first event in the recording (the first switch, or its
// wake-up; a thread already running when the recording started from the recording's start) to
// its exit or the recording's end, so the states add up to that wall time.
//
// Some recordings lack switches (kernel 6.18 under KVM drops most switches from the idle task on
// a busy CPU, with nothing lost): a thread is switched out twice in a row. Its sched_stat_runtime
// events then say when it ran: the first after the missing switch-in carries the CPU time since
// that switch-in, which places it. With no such event the time between the two switch-outs is
// unknown: counted as that, not guessed into one of the states. A switch to a thread already on
// a CPU (its switch-out missing) makes the time after its last sign of running unknown too.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "perfscope/analysis/recording/off_cpu_state.hpp"
#include "perfscope/analysis/sched/sched_events.hpp"

namespace perfscope {

// The states a thread's wall time is split into (the off-CPU states of ThreadState, grouped).
enum class SchedState : std::uint8_t { running, runnable, sleeping, blocked };

// The state a task leaves the CPU in, from sched_switch's prev_state.
SchedState state_after_switch(std::int64_t prev_state) noexcept;

struct ThreadStateRow {
  std::uint32_t pid = 0, tid = 0;     // pid 0 when no sample of the thread said its process
  std::string comm;                   // raw bytes as recorded, its last name
  std::uint64_t first = 0, last = 0;  // the span followed
  std::uint64_t running = 0, runnable = 0, sleeping = 0, blocked = 0;  // ns
  std::uint64_t unknown = 0;   // ns around missing switches that no runtime event places
  std::uint64_t switches = 0;  // times switched out
  // Switches the recording lacks: to the thread (placed by a runtime event, or not) and from it.
  std::uint64_t placed_switch_ins = 0, unplaced_switch_ins = 0, missing_switch_outs = 0;
  bool exited = false;  // left the CPU dead (X, Z) before the recording ended
  std::uint64_t missing_switches() const noexcept {
    return placed_switch_ins + unplaced_switch_ins + missing_switch_outs;
  }
  std::uint64_t wall() const noexcept { return running + runnable + sleeping + blocked + unknown; }
};

class ThreadStateAnalyzer : public SchedEventHandler {
 public:
  // `tasks`: the names of the threads as the walk replays them (SchedTrace::tasks()).
  explicit ThreadStateAnalyzer(const TaskMaps& tasks) : tasks_(tasks) {}
  void on_switch(const SchedSwitchEvent& event) override;
  void on_wakeup(const SchedWakeupEvent& event) override;
  void on_runtime(const SchedRuntimeEvent& event) override;
  // Rows by running time, largest first; the idle task is left out.
  std::vector<ThreadStateRow> finish();

 private:
  struct Thread {
    ThreadStateRow row;
    bool known = false, on_cpu = false, dead = false;
    SchedState off = SchedState::sleeping;
    std::uint64_t since = 0;
    std::uint64_t ran_until = 0;  // on a CPU: its last runtime event
  };
  void add(Thread& thread, SchedState state, std::uint64_t until);
  void add_unknown(Thread& thread, std::uint64_t until);
  Thread& thread(std::uint32_t tid);

  const TaskMaps& tasks_;
  std::unordered_map<std::uint32_t, Thread> threads_;
  std::vector<std::uint64_t> last_switch_;  // by CPU
  std::uint64_t first_time_ = 0, last_time_ = 0;
};

// The table: one row per thread with its wall time and each state's milliseconds and share (and
// an "unknown" column when some thread has unknown time); a row says how many of its switches
// the recording lacks.
std::string render_thread_states(const std::vector<ThreadStateRow>& rows);

}  // namespace perfscope
