// Why a thread was off the CPU, as an off-CPU sample says it. The recorder writes the state as
// one letter (ps's letters: S, D, R, ...) at the start of the "offcpu-time" sample's RAW payload,
// so that `perf script` shows it in its dump of the sample and perfscope reads it back.
#pragma once

#include <cstdint>
#include <string_view>

namespace perfscope {

// The event name of off-CPU samples in a perf.data file (the name Linux perf's BPF off-CPU
// profiler gives its own): their PERIOD is the blocked time in nanoseconds.
inline constexpr std::string_view off_cpu_event_name = "offcpu-time";
// The event a report's wall-clock view merges the on-CPU clock samples and the off-CPU ones into.
inline constexpr std::string_view wall_time_event_name = "wall-time";

enum class ThreadState : std::uint8_t {
  on_cpu = 0,       // an on-CPU sample
  sleeping,         // S: waiting for an event (TASK_INTERRUPTIBLE)
  uninterruptible,  // D: waiting in the kernel, usually for I/O (TASK_UNINTERRUPTIBLE)
  preempted,        // R: switched out while still runnable (waiting for a CPU)
  blocked,          // S or D, unknown which: recorded without the sched_switch tracepoint
  stopped,          // T or t: stopped by a signal or a tracer
  idle,             // I: a kernel thread idling (TASK_IDLE)
  other,            // any other state the kernel reports
};

inline constexpr std::string_view thread_state_name(ThreadState state) noexcept {
  switch (state) {
    case ThreadState::on_cpu: return "on-cpu";
    case ThreadState::sleeping: return "sleeping";
    case ThreadState::uninterruptible: return "uninterruptible";
    case ThreadState::preempted: return "preempted";
    case ThreadState::blocked: return "blocked";
    case ThreadState::stopped: return "stopped";
    case ThreadState::idle: return "idle";
    case ThreadState::other: return "other";
  }
  return "other";
}

inline constexpr char thread_state_letter(ThreadState state) noexcept {
  switch (state) {
    case ThreadState::on_cpu: return 'O';
    case ThreadState::sleeping: return 'S';
    case ThreadState::uninterruptible: return 'D';
    case ThreadState::preempted: return 'R';
    case ThreadState::blocked: return 'B';
    case ThreadState::stopped: return 'T';
    case ThreadState::idle: return 'I';
    case ThreadState::other: return '?';
  }
  return '?';
}

inline constexpr ThreadState thread_state_from_letter(char letter) noexcept {
  switch (letter) {
    case 'S': return ThreadState::sleeping;
    case 'D': return ThreadState::uninterruptible;
    case 'R': return ThreadState::preempted;
    case 'B': return ThreadState::blocked;
    case 'T':
    case 't': return ThreadState::stopped;
    case 'I': return ThreadState::idle;
    default: return ThreadState::other;
  }
}

// sched:sched_switch's prev_state (the kernel's TASK_REPORT bits, as __trace_sched_switch_state
// gives them: 0 runnable, 0x1 S, 0x2 D, 0x4 T, 0x8 t, 0x10 X, 0x20 Z, 0x40 P, 0x80 I, and the bit
// above the report mask set when the task was preempted).
inline constexpr ThreadState thread_state_from_prev_state(std::int64_t prev_state) noexcept {
  auto bits = static_cast<std::uint64_t>(prev_state) & 0xff;
  if (bits == 0) return ThreadState::preempted;
  if (bits & 0x1) return ThreadState::sleeping;
  if (bits & 0x2) return ThreadState::uninterruptible;
  if (bits & 0xc) return ThreadState::stopped;
  if (bits & 0x80) return ThreadState::idle;
  return ThreadState::other;
}

// True for the prev_state of a task's last switch-out (X dead, Z zombie): no switch-in follows.
inline constexpr bool prev_state_is_exit(std::int64_t prev_state) noexcept {
  return (static_cast<std::uint64_t>(prev_state) & 0x30) != 0;
}

}  // namespace perfscope
