// System calls from their enter and exit events: pairing them per thread (SyscallPairer) and the
// statistics perf trace -s prints (SyscallSummary: calls, errors, total/min/avg/max and the
// relative standard deviation of the mean, per thread and system call).
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace perfscope {

// One system call of one thread. A call whose enter was not seen (it began before tracing, or its
// enter was lost) has no arguments and no duration; one whose exit was not seen (exit_group,
// execve that succeeded in another thread, a thread killed in the call, tracing stopped) has no
// return value.
struct SyscallCall {
  pid_t pid = -1;
  pid_t tid = -1;
  long number = -1;
  std::uint64_t enter_time = 0;  // ns, the events' clock; 0 when not seen
  std::uint64_t exit_time = 0;   // 0 when not seen
  std::array<std::uint64_t, 6> args{};
  std::int64_t ret = 0;
  bool entered = false;
  bool exited = false;

  bool has_duration() const noexcept { return entered && exited && exit_time >= enter_time; }
  std::uint64_t duration_ns() const noexcept { return has_duration() ? exit_time - enter_time : 0; }
  // The kernel returns -errno (-4095..-1) for a failure.
  bool failed() const noexcept { return exited && ret < 0 && ret >= -4095; }
  int error_number() const noexcept { return failed() ? static_cast<int>(-ret) : 0; }
  // The time to sort and print it by: its enter, else its exit.
  std::uint64_t time() const noexcept { return entered ? enter_time : exit_time; }
};

class SyscallCallSink {
 public:
  virtual ~SyscallCallSink() = default;
  virtual void call(const SyscallCall& call) = 0;
};

// Pairs each thread's enter with its next exit. Calls are handed out at their exit, or when the
// thread's next enter, its end or finish() shows no exit will come. Allocates only for a thread
// it has not seen before.
class SyscallPairer {
 public:
  void enter(pid_t pid, pid_t tid, std::uint64_t time, long number,
             const std::array<std::uint64_t, 6>& args, SyscallCallSink& sink);
  void exit(pid_t pid, pid_t tid, std::uint64_t time, long number, std::int64_t ret,
            SyscallCallSink& sink);
  // The thread ended: a call still open never returns (exit, exit_group).
  void thread_exited(pid_t tid, SyscallCallSink& sink);
  // Hands out every open call (tracing stopped), in the order of their enters.
  void finish(SyscallCallSink& sink);
  std::size_t open_calls() const noexcept;

 private:
  struct Open {
    SyscallCall call;
    bool open = false;
  };
  std::unordered_map<pid_t, Open> threads_;
};

// Running statistics of one system call's durations, as perf's `struct stats` keeps them
// (Welford's mean and squared deviations), in ns.
struct SyscallStats {
  std::uint64_t calls = 0;
  std::uint64_t errors = 0;
  double mean = 0;
  double m2 = 0;
  std::uint64_t min = 0;
  std::uint64_t max = 0;
  std::map<int, std::uint64_t> errnos;  // errno -> calls that failed with it

  void add(std::uint64_t duration_ns, int error_number);
  // perf trace -s's "total": calls times the mean (ms).
  double total_ms() const noexcept { return static_cast<double>(calls) * mean / 1e6; }
  double mean_ms() const noexcept { return mean / 1e6; }
  double min_ms() const noexcept { return static_cast<double>(min) / 1e6; }
  double max_ms() const noexcept { return static_cast<double>(max) / 1e6; }
  // perf trace -s's "stddev (%)": the standard deviation of the mean relative to the mean.
  double stddev_percent() const noexcept;
};

// Rows by total time, longest first (perf trace -s's order), ties by number.
std::vector<std::pair<long, const SyscallStats*>> rows_by_total(
    const std::map<long, SyscallStats>& rows);

struct ThreadSyscallSummary {
  pid_t pid = -1;
  pid_t tid = -1;
  std::uint64_t events = 0;  // enter and exit events seen
  std::map<long, SyscallStats> syscalls;
  std::vector<std::pair<long, const SyscallStats*>> by_total() const {
    return rows_by_total(syscalls);
  }
};

// What perf trace -s counts: every call whose exit was seen, its duration 0 when its enter was
// not (a call that began before tracing, such as the execve of a traced command); a call whose
// exit was not seen is left out.
class SyscallSummary {
 public:
  void add(const SyscallCall& call);
  // One enter or exit event of `tid` (perf's per-thread "events").
  void count_event(pid_t pid, pid_t tid);
  // Threads by events, most first (perf's order), ties by tid.
  std::vector<const ThreadSyscallSummary*> threads() const;
  // Every thread's rows added up per system call.
  std::map<long, SyscallStats> totals() const;
  std::uint64_t events() const noexcept { return events_; }

 private:
  ThreadSyscallSummary& thread(pid_t pid, pid_t tid);
  std::unordered_map<pid_t, ThreadSyscallSummary> threads_;
  std::uint64_t events_ = 0;
};

}  // namespace perfscope
