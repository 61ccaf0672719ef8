// SyscallTracer: the system calls of a command, a process, a thread or every CPU, from the
// raw_syscalls:sys_enter/sys_exit tracepoints sampled through a RecordingSession (one ring
// buffer per CPU, inherited by new threads and children, time-ordered), paired per thread into
// SyscallCalls, with perf trace -s's statistics and the names of the threads (COMM records).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "perfscope/analysis/trace/syscall_arguments.hpp"
#include "perfscope/analysis/trace/syscall_calls.hpp"
#include "perfscope/analysis/trace/syscall_table.hpp"
#include "perfscope/engine/target.hpp"
#include "perfscope/sys/exit_watch.hpp"

namespace perfscope {

class RecordingSession;
class PerfDataReader;

// A -e name that is no system call of this architecture; what() suggests the closest ones.
class UnknownSyscallError : public std::invalid_argument {
 public:
  UnknownSyscallError(std::string name, std::vector<std::string> suggestions);
  const std::string& name() const noexcept { return name_; }
  const std::vector<std::string>& suggestions() const noexcept { return suggestions_; }

 private:
  std::string name_;
  std::vector<std::string> suggestions_;
};

// The numbers of `names` (each a call's name or its number); throws UnknownSyscallError.
std::vector<long> syscall_numbers(const SyscallTable& table, std::span<const std::string> names);
// The tracepoint filter that keeps `numbers` (all when empty), or with `exclude_numbers` every call
// but them, and leaves out the calls of the threads `excluded_pids` (the tracer's own when it
// samples every CPU, which would otherwise trace itself; --filter-pids').
std::string syscall_filter(std::span<const long> numbers, std::span<const pid_t> excluded_pids,
                           bool exclude_numbers = false);

struct SyscallTraceOptions {
  std::vector<std::string> syscalls;  // only these calls; empty: every call
  bool exclude = false;               // every call but `syscalls` (perf trace -e '!a,b')
  std::size_t data_pages = 0;         // per ring buffer; 0: 1024 for root, else the mlock default
  bool inherit = true;                // follow threads and children created later
  // perf trace --filter-pids: these processes' calls are left out (by the kernel's filter when
  // tracing live, by the reader when replaying a recording).
  std::vector<pid_t> excluded_pids;
  // False: the events open disabled and enable() starts the trace (perf trace --delay).
  bool enable_at_start = true;
};

struct SyscallTraceStats {
  std::uint64_t events = 0;        // enter and exit samples read
  std::uint64_t lost = 0;          // records the kernel could not write (a buffer was full)
  std::uint64_t lost_samples = 0;  // PERF_RECORD_LOST_SAMPLES totals
  std::uint64_t malformed = 0;     // samples that did not decode
};

class SyscallTracer {
 public:
  // Throws UnknownSyscallError for an unknown -e name, and perfscope::Error (with the fix) when
  // this machine cannot trace system calls (see probe_syscall_tracing).
  SyscallTracer(Target target, SyscallTraceOptions options);
  // A tracer of a recording (trace record's, perf trace record's) rather than of live events:
  // replay() hands out its calls; open, start, poll and stop are not for it.
  struct Recorded {};
  SyscallTracer(Recorded, SyscallTraceOptions options);
  ~SyscallTracer();

  // The raw_syscalls:sys_enter and sys_exit samples of `reader`, paired into calls handed to
  // `sink` in time order (the -e selection applied), with the summary and thread names a live
  // trace keeps. Throws std::runtime_error when the recording has neither event.
  void replay(const PerfDataReader& reader, SyscallCallSink& sink);
  SyscallTracer(const SyscallTracer&) = delete;
  SyscallTracer& operator=(const SyscallTracer&) = delete;

  // Opens the events (and forks the command, held before its exec). Throws perfscope::Error
  // when this user may sample user space only (the tracepoints would never fire).
  void open();
  void start();
  // Enables the events opened disabled (enable_at_start false): calls from now on are traced.
  void enable();
  // Waits up to timeout_ms for events, reads what the buffers hold, and hands each finished
  // call to `sink` in the order of the events. Returns the records read.
  std::size_t poll(SyscallCallSink& sink, int timeout_ms);
  // Stops tracing, reads what is left and hands out the calls still open (without exit).
  void stop(SyscallCallSink& sink);
  // True once the command ended, or (-p, -t) the process or thread traced did.
  bool target_ended();
  bool terminate_command() noexcept;
  int wait_for_command();
  void interrupt_poll() noexcept;

  const SyscallTable& table() const noexcept { return table_; }
  SyscallSignatures& signatures() noexcept { return signatures_; }
  const Target& target() const noexcept { return target_; }
  // The command name of thread `tid` as its COMM records (or /proc) said; "" when unknown.
  std::string_view comm(pid_t tid) const noexcept;
  const SyscallSummary& summary() const noexcept { return summary_; }
  SyscallTraceStats stats() const noexcept;
  // The time of the first event (ns, the events' clock); 0 before any.
  std::uint64_t first_time() const noexcept { return first_time_; }
  // What open() changed that the user should know (a raised open-files limit ...).
  std::vector<std::string> notices() const;

 private:
  // Hands out the calls still open (no exit seen), into the summary and then `sink`.
  void finish_open_calls(SyscallCallSink& sink);
  class Reader;
  friend class Reader;
  Target target_;
  SyscallTraceOptions options_;
  SyscallTable table_;
  SyscallSignatures signatures_;
  std::unique_ptr<RecordingSession> session_;
  std::unique_ptr<Reader> reader_;
  SyscallPairer pairer_;
  SyscallSummary summary_;
  std::unordered_map<pid_t, std::string> comms_;
  std::vector<std::string> missing_calls_;  // this kernel's calls the table has no number for
  std::uint64_t first_time_ = 0;
  std::uint64_t malformed_ = 0;
  sys::ExitWatch target_watch_;  // an attached process or thread
  // Payload offsets of the tracepoints' fields, from their formats.
  std::size_t enter_id_offset_ = 8, enter_args_offset_ = 16, exit_id_offset_ = 8,
              exit_ret_offset_ = 16;
  // replay's -e selection (the kernel's filter does it for a live trace).
  std::vector<long> replayed_numbers_;
  bool replay_selects_ = false;
  std::uint64_t replayed_lost_ = 0, replayed_lost_samples_ = 0;
};

}  // namespace perfscope
