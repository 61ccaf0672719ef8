// StackCompleter: completes a sample's user call chain while recording (or in `inject --unwind`),
// so that the file holds plain call chains instead of stack copies.
//
// - unwind_dwarf (`--call-graph dwarf`): the sample's user registers and stack copy are unwound
//   with the DwarfUnwinder, the user frames are appended to PERF_SAMPLE_CALLCHAIN after
//   PERF_CONTEXT_USER, and the copies are emptied (registers ABI 0, stack size 0: the layout the
//   kernel writes for a sample without user registers, so the event's attr is unchanged and a
//   sample that could not be unwound keeps its copies beside the others).
// - fill_frame_pointer_gaps (`-g`): the kernel's frame-pointer chain is kept, and the callers it
//   skipped (a function that has not set up its frame at the sampled address: a system-call
//   wrapper, a frameless libc routine) are recovered from a small stack copy by one or more CFI
//   steps and inserted. Every sample then loses its copies: the file's attr has no
//   REGS_USER/STACK_USER (output_attr), and the file is an ordinary frame-pointer recording.
//
// Return addresses written into the chain are the raw ones (the unwinder's pc + 1), as the
// kernel's frame-pointer walk writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

enum class StackCompletion { unwind_dwarf, fill_frame_pointer_gaps };

struct StackCompletionStatistics {
  std::uint64_t samples = 0;        // samples with user registers and a stack copy seen
  std::uint64_t completed = 0;      // written without their copies (unwound, or chain checked)
  std::uint64_t kept = 0;           // unwind_dwarf: written with their copies (not unwindable now)
  std::uint64_t reached_start = 0;  // of completed: the stack reaches a thread's first frame
  std::uint64_t gaps_filled = 0;    // fill_frame_pointer_gaps: samples that got a caller back
  std::uint64_t frames_inserted = 0;
  std::uint64_t without_user_registers = 0;  // a kernel thread's, or user regs not captured
  std::uint64_t stack_copy_bytes = 0;        // the largest stack copy a sample came with
};

class StackCompleter {
 public:
  // `maps` is the replayed process state, fed record by record in time order by the caller.
  StackCompleter(const TaskMaps& maps, StackCompletion mode);
  ~StackCompleter();
  StackCompleter(const StackCompleter&) = delete;
  StackCompleter& operator=(const StackCompleter&) = delete;

  // Writes the completed form of `sample` (a PERF_RECORD_SAMPLE laid out by `config`) into
  // `out` and returns true; false when the sample is to be written as it is (no user registers
  // or stack copy in its layout, a sample that cannot be decoded, or, unwinding DWARF, one that
  // cannot be unwound now). The written layout is output_config(config). Never throws.
  bool complete(const RecordView& sample, const ParseConfig& config,
                std::vector<std::byte>& out) noexcept;

  // What complete() writes when there is no time to unwind: in frame-pointer mode the sample
  // without its copies (its chain as the kernel wrote it), true; unwinding DWARF, false (the
  // sample keeps its copies, counted as kept).
  bool strip(const RecordView& sample, const ParseConfig& config,
             std::vector<std::byte>& out) noexcept;

  // The layout of the samples complete() writes for samples of `config`: without REGS_USER and
  // STACK_USER when filling frame-pointer gaps, unchanged when unwinding DWARF.
  static ParseConfig output_config(const ParseConfig& config, StackCompletion mode) noexcept;
  // The attr the file gives an event whose samples complete() rewrote.
  static abi::PerfEventAttr output_attr(const abi::PerfEventAttr& attr,
                                        StackCompletion mode) noexcept;

  StackCompletion mode() const noexcept;
  const StackCompletionStatistics& statistics() const noexcept;

 private:
  bool rewrite(const RecordView& sample, const ParseConfig& config, std::vector<std::byte>& out,
               bool unwind) noexcept;

  struct State;
  std::unique_ptr<State> state_;
};

// The stack bytes `-g` asks the kernel for, besides the frame-pointer chain and the user
// registers, so that the callers the chain skips can be recovered (fill_frame_pointer_gaps), at
// `samples_per_second` per CPU (0: not known). 1 KiB up to perf's default 4 kHz: enough to walk
// code without frame pointers several callers deep. Above, less, so that the copies stay within
// 4 MiB a second per CPU: every byte of them crosses the ring buffer and the drain, and at
// 50 kHz whole KiB copies cost the recorder a third of the samples (the kernel dropping what
// was not read in time) where perf's -g loses none. Never under 64 bytes: a leaf's return
// address and its caller's.
constexpr std::uint32_t frame_pointer_gap_stack_bytes(std::uint64_t samples_per_second) noexcept {
  constexpr std::uint64_t full = 1024, least = 64, bytes_per_second = 4u << 20;
  if (samples_per_second <= bytes_per_second / full) return full;
  std::uint64_t bytes = bytes_per_second / samples_per_second / least * least;
  return static_cast<std::uint32_t>(bytes < least ? least : bytes);
}

}  // namespace perfscope
