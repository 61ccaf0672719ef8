// DwarfUnwinder: turns a `--call-graph dwarf` sample (the user registers and a copy of the user
// stack) into a call chain, with libdw's unwinder (CFI from .eh_frame / .debug_frame) running
// over the recorded bytes instead of a live process. One Dwfl per process, rebuilt only when its
// mappings change, so consecutive samples of a process reuse the loaded unwind tables. On x86-64
// the CFI row of each pc is read once through libdw and kept in a per-file table; samples whose
// frames all have simple rows are walked from that table without libdwfl (about 5x faster).
// JIT code is walked by the CFI its jitdump carries (x86-64), where libdwfl alone would guess
// by frame pointers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "perfscope/analysis/symbols/task_maps.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

struct UnwindResult {
  // ips written: the user-mode pc of the sample first (the sample's ip when it hit user code),
  // then each caller's return address minus one (inside its call instruction), as perf reports
  // them. A sample that cannot be walked still gets its pc when its registers were readable.
  std::size_t frames = 0;
  // The walk ended at the outermost frame (no caller: _start, clone's thread start) rather
  // than at the end of the copied stack, an unreadable register, or missing unwind tables.
  bool complete = false;
  // No file of the process could be opened here: `frames` is the pc alone, unwound from
  // nothing.
  bool no_module = false;
  // Frames of JIT code were walked by the unwinding information of the process's jitdump.
  bool jit_unwinding_info = false;
};

struct UnwindStatistics {
  std::uint64_t samples = 0;       // samples with registers and stack given to unwind()
  std::uint64_t complete = 0;      // of them, unwound to the outermost frame
  std::uint64_t no_user_regs = 0;  // samples without user registers (kernel threads, errors)
  std::uint64_t unreadable_registers = 0;  // of `samples`: a needed register missing, or 32-bit
  std::uint64_t truncated = 0;           // of `samples`: more frames than the ips given could hold
  std::uint64_t frames = 0;              // ips written over all samples
  std::uint64_t by_cached_rules = 0;     // of `samples`: walked by cached CFI rules, not libdwfl
  std::uint64_t jit_unwinding_info = 0;  // of `samples`: through JIT code by its jitdump's CFI
};

// How stacks are walked. `cached_rules` (x86-64) first tries the CFI rows of the pcs seen, kept
// in a per-file table, and hands a sample to libdwfl only when a frame needs more (expressions,
// signal frames, unreadable return addresses); it gives the same frames as `libdwfl_only`,
// several times faster. `libdwfl_only` is there to check that.
enum class UnwindMethod { cached_rules, libdwfl_only };

// Where to read a recorded file, given its recorded path and the build id its mapping carried
// (empty when none): the Symbolizer's SymbolFileLocator when files are elsewhere (archives, a
// symfs). Without one, files are read at their recorded paths.
using UnwindFileLocator =
    std::function<std::string(const std::string& path, std::span<const std::uint8_t> build_id)>;

struct JitCode;

// The jitdump code that covered `address` of process `pid` at sample time `time`, or null: its
// unwinding information (CODE_UNWINDING_INFO) walks JIT frames. The Symbolizer's jit_code_at.
using JitCodeLookup =
    std::function<const JitCode*(std::uint32_t pid, std::uint64_t address, std::uint64_t time)>;

class DwarfUnwinder {
 public:
  // `maps` is the replayed process state (the caller keeps feeding it records in time order).
  explicit DwarfUnwinder(const TaskMaps& maps, UnwindMethod method = UnwindMethod::cached_rules,
                         UnwindFileLocator locate = {}, JitCodeLookup jit_code = {});
  ~DwarfUnwinder();
  DwarfUnwinder(const DwarfUnwinder&) = delete;
  DwarfUnwinder& operator=(const DwarfUnwinder&) = delete;

  // Unwinds the user stack of `sample` (needs PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER;
  // x86-64 and arm64 register sets) into `ips`, caller after callee. Never throws.
  // `stop_at_caller` (non-zero): the walk ends after a caller frame at that pc (a return address
  // minus one), incomplete: one who knows the stack from there (a frame-pointer walk) needs no
  // more of it.
  UnwindResult unwind(const SampleRecord& sample, std::span<std::uint64_t> ips,
                      std::uint64_t stop_at_caller = 0) noexcept;

  const UnwindStatistics& statistics() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace perfscope
