// The scheduler tracepoints of a recording (perf sched record's, or perfscope sched record's),
// decoded into plain events and delivered in time order with the names of the tasks as the
// recording's COMM and FORK records say at that moment. The timehist, latency and thread-state
// analyses are handlers of this one walk.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"

namespace perfscope {

// A recording that cannot be analysed as a scheduler trace (no sched:sched_switch events, or no
// way to decode them): the message says what is missing and how to record a usable file.
class SchedTraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The common part of every event: when, where, and which task the kernel ran when it fired.
struct SchedEventContext {
  std::uint64_t time = 0;
  std::uint32_t cpu = 0;
  std::uint32_t pid = 0, tid = 0;  // of the sample (PERF_SAMPLE_TID)
};

// sched:sched_switch. prev_state is the kernel's report: 0 running, 1 S, 2 D, ..., and the
// preemption bit (TASK_REPORT_MAX: 0x100 on kernels since 4.14) when the task was preempted.
struct SchedSwitchEvent : SchedEventContext {
  std::string_view prev_comm, next_comm;
  std::int32_t prev_pid = 0, next_pid = 0;
  std::int32_t prev_prio = 0, next_prio = 0;
  std::int64_t prev_state = 0;
};

enum class SchedWakeupKind : std::uint8_t { waking, wakeup, wakeup_new };

// sched:sched_waking, sched:sched_wakeup, sched:sched_wakeup_new: `target` is made runnable.
struct SchedWakeupEvent : SchedEventContext {
  SchedWakeupKind kind = SchedWakeupKind::wakeup;
  std::string_view target_comm;
  std::int32_t target = 0;
  std::int32_t target_cpu = -1;
};

// sched:sched_migrate_task.
struct SchedMigrateEvent : SchedEventContext {
  std::int32_t target = 0;
  std::int32_t orig_cpu = -1, dest_cpu = -1;
};

// sched:sched_stat_runtime: `runtime` ns of CPU time the task `target` ran since the last one.
struct SchedRuntimeEvent : SchedEventContext {
  std::int32_t target = 0;
  std::uint64_t runtime = 0;
};

class SchedEventHandler {
 public:
  virtual ~SchedEventHandler() = default;
  virtual void on_switch(const SchedSwitchEvent&) {}
  virtual void on_wakeup(const SchedWakeupEvent&) {}
  virtual void on_migrate(const SchedMigrateEvent&) {}
  virtual void on_runtime(const SchedRuntimeEvent&) {}
  // PERF_RECORD_FORK (exit false) and PERF_RECORD_EXIT (exit true) of thread `tid`.
  virtual void on_task(std::uint32_t pid, std::uint32_t tid, std::uint64_t time, bool exit) {
    (void)pid, (void)tid, (void)time, (void)exit;
  }
  // A COMM record named thread `tid` of process `pid` (SchedTrace::tasks() has the name).
  virtual void on_comm(std::uint32_t pid, std::uint32_t tid) { (void)pid, (void)tid; }
  // A LOST record: `lost` records the kernel could not write on `cpu`.
  virtual void on_lost(std::uint64_t lost, std::uint32_t cpu, std::uint64_t time) {
    (void)lost, (void)cpu, (void)time;
  }
};

// The events a walk decodes: an analysis that needs fewer is faster (sched_stat_runtime alone is
// often a third of a recording).
struct SchedInterest {
  bool switches = true, wakeups = true, migrations = true, runtime = true;
  bool names = true;  // the comm fields of the tracepoints (empty views without)
};

// What one walk met.
struct SchedWalkStats {
  std::uint64_t records = 0;  // every record of the data section
  std::uint64_t sched_events = 0;
  std::uint64_t lost = 0;  // records the kernel reported lost (LOST records)
  std::uint64_t lost_records = 0;
  std::uint64_t malformed = 0;  // sched samples too short for their fields, skipped
  // What stopped the walk early (a damaged or cut file): the events before it were handled.
  std::optional<PerfDataError> error;
};

class SchedTrace {
 public:
  // Finds the scheduler events of `reader` and their formats (from the file's tracing data, or
  // this machine's tracefs when the file has none). Throws SchedTraceError when the file has no
  // sched:sched_switch event.
  explicit SchedTrace(const PerfDataReader& reader);
  ~SchedTrace();
  SchedTrace(const SchedTrace&) = delete;
  SchedTrace& operator=(const SchedTrace&) = delete;

  // Walks every record in time order and hands the scheduler events to `handler`; a damaged
  // file stops the walk with stats.error, after the events before the damage were handled.
  SchedWalkStats walk(SchedEventHandler& handler, SchedInterest interest = {});

  // The recording's names of its threads, replayed up to the event being handled.
  const TaskMaps& tasks() const noexcept { return tasks_; }
  // Which tracepoints the recording has.
  bool has_event(std::string_view name) const noexcept;
  // The number of CPUs online where it was recorded (0 when the file does not say).
  std::uint32_t cpus_online() const noexcept;
  // Notes about the decoding (formats read from this machine, not from the file).
  const std::vector<std::string>& notes() const noexcept { return notes_; }

 private:
  struct Decoder;
  const PerfDataReader& reader_;
  std::unique_ptr<Decoder> decoder_;
  TaskMaps tasks_;
  std::vector<std::string> notes_;
};

// The message of a file without scheduler events: what it has and how to record one.
std::string missing_sched_events_message(const PerfDataReader& reader);

}  // namespace perfscope
