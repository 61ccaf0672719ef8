// perf sched latency: per task, the CPU time it ran (sched_stat_runtime), how many times it was
// switched in after waiting runnable, and the average and largest of those waits (from its
// wake-up, or from its switch-out when it left the CPU runnable, to its switch-in). Tasks are
// merged by name unless asked per thread. The rules are Linux perf 6.1's (see timehist.hpp), so
// the same file gives the same table.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "perfscope/analysis/sched/sched_events.hpp"

namespace perfscope {

struct LatencyOptions {
  // Keys, most significant first, each sorting larger values first: avg, max, switch, runtime,
  // pid (perf's default: avg, max, switch, runtime).
  std::vector<std::string> sort_keys{"avg", "max", "switch", "runtime"};
  bool per_thread = false;  // perf sched latency -p: no merging by name
  // perf 6.1 measures waits from sched_wakeup and sched_wakeup_new only, so in the files its
  // own sched record writes (sched_waking, no sched_wakeup) only waits after a switch-out with
  // state 0 count. With this, sched_waking starts a wait too (and sched_wakeup is then left
  // out, being the same wake-up seen later), as newer perf does.
  bool count_waking = false;
};

// The sort keys of "avg,max" (commas or spaces between them); throws std::invalid_argument naming
// an unknown key and the known ones.
std::vector<std::string> parse_latency_sort_keys(const std::string& text);

struct LatencyRow {
  std::string comm;       // raw bytes as recorded
  std::uint32_t tid = 0;  // of the thread (of the first of the merged ones)
  std::uint32_t merged = 1;
  std::uint64_t runtime = 0;   // ns
  std::uint64_t switches = 0;  // switch-ins after a measured wait
  std::uint64_t total_delay = 0, max_delay = 0;
  std::uint64_t max_delay_start = 0, max_delay_end = 0;
  std::uint64_t average_delay() const noexcept { return switches ? total_delay / switches : 0; }
};

struct LatencyReport {
  std::vector<LatencyRow> rows;  // sorted; the idle task and tasks without switches left out
  std::uint64_t total_runtime = 0, total_switches = 0;
  // What perf's "INFO:" lines count.
  std::uint64_t timestamps = 0, unordered_timestamps = 0;
  std::uint64_t context_switch_bugs = 0;
  std::uint64_t events = 0, lost_events = 0, lost_chunks = 0;
};

class LatencyAnalyzer : public SchedEventHandler {
 public:
  // `tasks`: the names of the threads as the walk replays them (SchedTrace::tasks());
  // `has_waking`: whether the recording has sched_waking (SchedTrace::has_event).
  LatencyAnalyzer(const TaskMaps& tasks, const LatencyOptions& options, bool has_waking);
  void on_switch(const SchedSwitchEvent& event) override;
  void on_wakeup(const SchedWakeupEvent& event) override;
  void on_runtime(const SchedRuntimeEvent& event) override;
  // The table, with the names the tasks have at the end of the recording.
  LatencyReport finish(const LatencyOptions& options, const SchedWalkStats& walk) const;

 private:
  enum class AtomState : std::uint8_t { sleeping, wait_cpu, sched_in, ignore };
  struct Task {
    bool has_atom = false;
    AtomState state = AtomState::sleeping;  // of its last atom (what perf keeps per switch-out)
    std::uint64_t sched_out_time = 0, wake_up_time = 0;
    std::uint64_t runtime = 0, switches = 0, total_delay = 0, max_delay = 0;
    std::uint64_t max_delay_start = 0, max_delay_end = 0;
  };
  void sched_out(Task& task, bool runnable, std::uint64_t time);
  void sched_in(Task& task, std::uint64_t time);

  const TaskMaps& names_;
  bool use_waking_ = false, use_wakeup_ = true;
  std::unordered_map<std::uint32_t, Task> tasks_;
  std::vector<std::int64_t> current_;  // by CPU: the task the last switch put there, -1 none
  std::uint64_t timestamps_ = 0, unordered_ = 0, switch_bugs_ = 0;
};

// The table as perf sched latency prints it.
std::string render_latency(const LatencyReport& report);

}  // namespace perfscope
