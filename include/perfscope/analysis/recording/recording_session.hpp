// RecordingSession: what `perfscope record` and the embedded Profiler do around a SamplingSession
// to record a target, in one place: the records for what existed before sampling started (the
// kernel map, the target's tasks and mappings), the user-only filter (samples that user-space-only
// events take in kernel code, left out where kernel addresses are hidden), keeping up with the
// buffers while recording, and at the stop the losses no LOST record reported (the kernel's own
// count, PERF_FORMAT_LOST, written as a LOST record). Records go to a RecordingSink: a perf.data
// file (PerfDataSink) or a profile being built.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/host_description.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/perf_data/synthesized_records.hpp"
#include "perfscope/analysis/recording/lost_warning.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/engine/sampling_session.hpp"

namespace perfscope {

// Where a recording's records go: the synthesized ones first, then those of the buffers.
class RecordingSink {
 public:
  virtual ~RecordingSink() = default;
  // One record kept (not left out by the user-only filter); `event` indexes the session's events
  // (0 for synthesized records).
  virtual void record(const RecordView& view, std::size_t event, const ParseConfig& config) = 0;
  // Every buffer has been read once since the last call: records after this one are later than
  // those before the previous call (perf's FINISHED_ROUND rule).
  virtual void end_round() {}
  // Before end_round: how full the fullest buffer was when this round began to read it
  // (SamplingSession::fullest_fill). A sink whose work can wait sheds it when the reader is late.
  virtual void buffers_filled(double /*fullest*/) {}
  // AUX data of one buffer (an AUX-tracing event's trace), after that buffer's records of the
  // same pass; the bytes are valid during the call only.
  virtual void aux_data(const SessionAuxData&) {}
};

// What a recording delivered and lost, with the kernel's unreported losses counted in.
struct RecordingStats {
  BufferStats totals;                         // samples kept, LOST records and losses
  std::uint64_t unreported_lost = 0;          // in totals.lost: from the kernel's count at the stop
  std::uint64_t kernel_samples_left_out = 0;  // not in totals.samples (the user-only filter)
  std::uint64_t wakeups = 0;  // waits that ended with data to write (perf's "Woken up N times")
};

class RecordingSession {
 public:
  RecordingSession(std::vector<EventGroupSpec> groups, Target target, SamplingOptions options);

  // Throws Error(EINVAL) when a sample of some event cannot fit the buffers; `fix` says which of
  // the caller's own options to change ("Fix: ...").
  void check_fit(const std::function<std::string(const SampleMisfit&)>& fix) const;
  // Opens the events (and forks the command, held before its exec).
  void open();
  // The events as a perf.data file describes them (attr as opened, name, ids).
  std::vector<PerfDataEvent> file_events() const;
  // The events' clock beside the wall clock, read now (perf record -k); nullopt when the first
  // event is not timed by a clockid.
  std::optional<ClockData> clock_data() const;
  // Sends `sink` the records of what exists before sampling starts: the kernel map, then the
  // target's processes (every process for CPU-wide and cgroup targets). Where kernel addresses
  // are hidden from this user, samples that user-space-only events take in kernel code are left
  // out from now on.
  void synthesize(RecordingSink& sink);
  // Which records synthesize() writes (perf record --synth): every kind the session's options
  // ask for unless limited here.
  void limit_synthesis(bool tasks, bool mmaps, bool cgroups) noexcept {
    synthesis_.tasks = tasks;
    synthesis_.mmaps = tasks && mmaps;
    synthesis_.cgroups = synthesis_.cgroups && cgroups;
  }
  bool kernel_addresses_visible() const noexcept { return kernel_addresses_visible_; }
  void start();
  // Waits up to timeout_ms for data, then reads every buffer once (a round). While data keeps
  // coming it reads again without waiting, up to `max_rounds` rounds, so that the recorder does
  // not fall behind between wake-ups; returns early when interrupt_poll() was called. Returns the
  // records delivered.
  std::size_t poll(RecordingSink& sink, int timeout_ms, int max_rounds = 16);
  void interrupt_poll() noexcept { sampling_.interrupt_poll(); }
  bool command_exited() const noexcept { return sampling_.command_exited(); }
  // Stops sampling, reads what is left, and writes the losses the kernel counted but no LOST
  // record reported as one LOST record.
  void stop(RecordingSink& sink);
  // Asks the command this session started to end (SIGTERM, as perf record on a stop signal);
  // attached processes are never signalled. False when there is no command still running.
  bool terminate_command() noexcept;
  int wait_for_command() { return sampling_.wait_for_command(); }
  RecordingStats stats() const noexcept;

  SamplingSession& sampling() noexcept { return sampling_; }
  const SamplingSession& sampling() const noexcept { return sampling_; }

 private:
  class Filter;
  Target target_;
  SynthesisOptions synthesis_;
  SamplingSession sampling_;
  std::vector<bool> user_only_;  // per event: its samples in kernel code are left out
  bool kernel_addresses_visible_ = true;
  std::uint64_t unreported_lost_ = 0;
  std::uint64_t kernel_lost_samples_ = 0;  // written as a LOST_SAMPLES record at the stop
  std::uint64_t kernel_samples_left_out_ = 0;
};

// This process's command line, its executable's full path first (/proc/self/exe), as the
// CMDLINE feature records it.
std::vector<std::string> own_command_line();

// The thread group (process) of thread `tid`; `tid` itself when /proc does not say.
pid_t process_of_thread(pid_t tid);

}  // namespace perfscope
