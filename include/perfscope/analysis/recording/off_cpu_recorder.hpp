// Off-CPU recording without BPF: one "offcpu-time" sample per blocking interval of a thread.
//
// The sched:sched_switch tracepoint fires in the context of the task leaving the CPU, so its
// sample carries the blocked stack (call chain, or user registers and stack for DWARF) and, in
// its payload, prev_state: why it left. The task's next PERF_RECORD_SWITCH (or SWITCH_CPU_WIDE)
// switch-in ends the interval. OffCpuRecorder sits between a RecordingSession and the file's
// sink: it keeps each thread's last switch-out sample, and at the switch-in writes an
// "offcpu-time" sample (PERF_TYPE_SOFTWARE / PERF_COUNT_SW_BPF_OUTPUT, Linux perf's choice for its
// BPF off-CPU samples, so `perf report` and `perf script` read it) whose PERIOD is the blocked
// time in nanoseconds, TIME the switch-in (the end of the interval: written then, the file stays
// in time order round by round), the stack copied from the tracepoint sample and RAW one letter
// of state (off_cpu_state.hpp). Neither the tracepoint samples nor the switch records go to the
// file: the intervals are what they were recorded for.
//
// Without the tracepoint (an unprivileged user at perf_event_paranoid 2 cannot see kernel
// context, where sched_switch fires), the switch records of the user's own threads still give
// each interval and whether the thread was preempted (SWITCH_OUT_PREEMPT): the samples then have
// no stack and the state R or B (blocked: sleeping or I/O, unknown which).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "perfscope/analysis/perf_data/feature_codec.hpp"
#include "perfscope/analysis/recording/off_cpu_state.hpp"
#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/engine/machine_check.hpp"

namespace perfscope {

struct OffCpuOptions {
  // Intervals shorter than this are counted (OffCpuStats) but not written (perf's
  // --off-cpu-thresh).
  std::uint64_t min_blocked_ns = 0;
  // The tracepoint samples every Nth switch-out (its sample_period): each written interval then
  // stands for N and its PERIOD is N times its duration, so totals stay estimates of the whole.
  std::uint64_t every = 1;
};

struct OffCpuStats {
  std::uint64_t written = 0;  // offcpu-time samples written
  std::uint64_t written_ns = 0;
  std::uint64_t below_threshold = 0;  // intervals shorter than min_blocked_ns, left out
  std::uint64_t below_threshold_ns = 0;
  std::uint64_t still_blocked = 0;     // blocked at the end: written up to the last time seen
  std::uint64_t lost_switch_ins = 0;   // a second switch-out before a switch-in (one was lost)
  std::uint64_t before_recording = 0;  // switch-ins of threads blocked since before it started
};

// What this user can record the switch-outs with, best first.
enum class OffCpuMethod {
  sched_switch,      // the tracepoint: stacks and every state (root, CAP_PERFMON)
  context_switches,  // the software event, period 1: stacks, states R or B (paranoid <= 1)
  switch_records,    // the user's own threads' switch records: no stacks, states R or B
};

struct OffCpuCapability {
  OffCpuMethod method = OffCpuMethod::switch_records;
  // sched_switch: where prev_state is in its payload (offset, size).
  std::size_t prev_state_offset = 0, prev_state_size = 0;
  // What the method cannot record and how to get it ("" for sched_switch).
  std::string limitation;
};

// Opens (and closes at once) the sources a recording would use, on the calling thread.
OffCpuCapability probe_off_cpu_capability();
std::string_view off_cpu_method_name(OffCpuMethod method) noexcept;
// The probe as one of `doctor`'s checks ("off_cpu").
MachineCheck off_cpu_machine_check();

// Where the switch-out samples are, in the session's events.
struct OffCpuSource {
  // The session's index of the switch-out event (sched:sched_switch or context-switches);
  // nullopt: switch records only (no stacks).
  std::optional<std::size_t> switch_event;
  // Where prev_state is in the tracepoint's payload (its format file) and its size (4 or 8);
  // size 0: the samples have no state (context-switches), the SWITCH_OUT record after each gives
  // R (preempted) or B.
  std::size_t prev_state_offset = 0, prev_state_size = 0;
  // The sample_type bits every event of the session carries as its identity (TID, TIME,
  // IDENTIFIER, CPU): the offcpu-time event carries them too, so records of every event parse
  // alike.
  std::uint64_t identity_fields = 0;
  // The attr the samples copy their stack settings and clock from (the switch event's, or the
  // first event's without it).
  abi::PerfEventAttr model{};
};

// The offcpu-time event as the file describes it, for samples from `source` (append it to the
// session's file_events()).
PerfDataEvent off_cpu_file_event(const OffCpuSource& source);

class OffCpuRecorder final : public RecordingSink {
 public:
  OffCpuRecorder(RecordingSink& next, OffCpuSource source, OffCpuOptions options);

  void record(const RecordView& view, std::size_t event, const ParseConfig& config) override;
  // Matches the switches now known to be in order (see `queue_`), writes their intervals, then
  // ends the round downstream.
  void end_round() override;
  // After the session's stop(): the rest of the switches, then the threads still blocked get
  // their interval up to the last time seen. Call once.
  void finish();

  const OffCpuStats& stats() const noexcept { return stats_; }
  // The id the offcpu-time samples carry (IDENTIFIER): above any id the kernel hands out.
  static constexpr std::uint64_t sample_id = 0x7ff0'0000'0000'0001ULL;

 private:
  enum class SwitchKind : std::uint8_t { out_sample, out_record, in, exit };
  // One switch (or exit) waiting for its turn: a thread's switch-out lies in the buffer of the
  // CPU it left, its switch-in in the one it resumed on, and those are read one after the other,
  // so a switch-in can be read before the switch-out it ends (even a round later). Switches are
  // matched in time order, up to the latest time every buffer had reached when the previous
  // round began (perf's FINISHED_ROUND rule).
  struct Switch {
    std::uint64_t time = 0;
    std::uint32_t pid = 0, tid = 0, cpu = 0;
    SwitchKind kind = SwitchKind::in;
    bool preempted = false;
    std::int64_t prev_state = 0;
    std::uint32_t copy = no_copy;  // out_sample: into copies_
  };
  static constexpr std::uint32_t no_copy = 0xffffffffu;
  struct Pending {
    bool active = false;
    bool state_known = false;  // from prev_state or a SWITCH_OUT record
    ThreadState state = ThreadState::blocked;
    std::uint32_t pid = 0, cpu = 0;
    std::uint64_t out_time = 0;
    std::uint32_t copy = no_copy;  // the switch-out sample (none without a switch event)
  };

  std::uint32_t keep_copy(std::span<const std::byte> bytes);
  void release_copy(std::uint32_t& copy) noexcept;
  void flush(std::uint64_t up_to);
  void apply(const Switch& change);
  void interval(std::uint32_t tid, Pending& pending, std::uint64_t in_time);
  void write_sample(std::uint32_t tid, const Pending& pending, std::uint64_t end_time,
                    std::uint64_t duration);

  RecordingSink& next_;
  OffCpuSource source_;
  OffCpuOptions options_;
  abi::PerfEventAttr attr_{};
  ParseConfig config_;
  ParseConfig model_config_;  // of the switch event's samples
  std::vector<Switch> queue_;
  std::vector<std::vector<std::byte>> copies_;  // switch-out samples, reused through free_copies_
  std::vector<std::uint32_t> free_copies_;
  std::unordered_map<std::uint32_t, Pending> threads_;  // by tid
  std::vector<std::byte> out_;                          // the sample being written
  SampleRecord decoded_;
  OffCpuStats stats_;
  std::uint64_t last_time_ = 0;    // the latest time seen
  std::uint64_t round_start_ = 0;  // last_time_ when this round began
};

}  // namespace perfscope
