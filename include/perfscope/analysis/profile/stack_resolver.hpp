// StackResolver: the one place that turns a sample into named frames. It walks the call chain
// (the context markers PERF_CONTEXT_USER, KERNEL, HV, GUEST, GUEST_KERNEL and GUEST_USER switch
// the mode of the ips after them), takes the user part of `--call-graph dwarf` samples from the
// DWARF unwinder, finds each ip's mapping, and names it through the symbol table of its file, the
// process's perf-PID.map (anonymous memory: JIT code) or kallsyms (kernel and guest kernel),
// with the calls inlined there when the symbolizer is asked for them. The profile builder, `script`
// and `annotate` use it and only aggregate or print.
//
// Hot path: the walk fills caller-owned vectors (no allocation once they have grown to the
// longest stack) and answers repeated addresses from a per-address cache; nothing throws.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/analysis/profile/stack_sources.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"
#include "perfscope/analysis/unwinding/dwarf_unwinder.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

// Kernel and guest-kernel addresses are named by kallsyms; the other modes by the process.
bool is_kernel_cpumode(std::uint16_t cpumode) noexcept;

// One ip of a sample's stack, before naming.
struct StackAddress {
  std::uint64_t ip = 0;
  std::uint16_t cpumode = 0;  // abi::record_misc::{kernel,user,hypervisor,guest_kernel,...}
  // A caller's return address (every call-chain entry after the first of its context, every
  // unwound frame after the first): the instruction after a call. It is named one byte back,
  // inside the call, which belongs to the caller's function and line even when the call was the
  // function's last instruction.
  bool return_address = false;
  // A user frame of a sample taken in the kernel: the only user addresses the maps a process had
  // before its exec may name (TaskMaps::mapping_of).
  bool of_kernel_sample = false;
  // A caller's return address minus one already, as DWARF unwinders give them (perf's libunwind
  // and perfscope's alike): named and shown as it is, as perf shows it.
  bool adjusted_caller = false;

  std::uint64_t lookup() const noexcept { return return_address ? ip - 1 : ip; }
};

// What one ip names. The views stay valid as long as the resolver lives.
struct ResolvedAddress {
  StackAddress address;
  bool kernel = false;  // named (or to be named) by kallsyms
  // The recorded mapping the ip lies in (for kernel ips the kernel's map); its filename points
  // into the resolver. Absent when no record mapped it, and for hypervisor and guest-user ips.
  std::optional<TaskMaps::MappingView> mapping;
  // The file: its path, "[kernel.kallsyms]", a kernel module "[name]", "[vdso]", the perf-PID.map
  // of JIT code, or the anonymous mapping's name; empty when nothing maps the ip ("[unknown]").
  std::string_view dso;
  // The ip as an address of `dso`, as perf shows it: the offset in the file for ELF files and
  // the vDSO (start - pgoff arithmetic), the ip itself elsewhere.
  std::uint64_t dso_address = 0;
  // symbol.symbol empty when unresolved. Kernel ips resolved with name_kernel false are left
  // unnamed here (named false); name them later with StackResolver::name_kernel.
  SymbolizedAddress symbol;
  bool named = false;
  // A stable number per distinct cached resolution (dense from 0), for callers that keep
  // something per address (formatted text); no_id for answers that were not cached.
  static constexpr std::uint32_t no_id = 0xffffffffu;
  std::uint32_t id = no_id;

  // The ip's offset from its function's start (a return address's as recorded, not one back).
  std::uint64_t function_offset() const noexcept {
    return symbol.offset + (address.return_address ? 1 : 0);
  }
};

// One frame of a resolved stack. Inlined calls at an ip come as frames of their own, innermost
// first, before the frame of the function they were inlined into (same ip).
struct StackFrame {
  const ResolvedAddress* where = nullptr;  // valid until the next resolve call
  std::string_view function;               // empty when unresolved
  SourceLocation source;
  bool inlined = false;
};

struct StackResolverOptions {
  SymbolizerOptions symbols;
  bool callchains = true;  // false: every stack is the sample's ip alone
  UnwindMethod unwind_method = UnwindMethod::cached_rules;
};

class StackResolver {
 public:
  explicit StackResolver(StackResolverOptions options = {});
  ~StackResolver();
  StackResolver(const StackResolver&) = delete;
  StackResolver& operator=(const StackResolver&) = delete;

  // COMM, FORK, MMAP and MMAP2 records, in time order: the process state ips are named against.
  void observe(const RecordView& view, const ParseConfig& config);
  // The build id a file had when it was recorded (the BUILD_ID feature, HEADER_BUILD_ID
  // records): files are checked against it when their mapping carried none. "[kernel.kallsyms]"
  // gives the symbolizer the recording's kernel.
  void add_recorded_build_id(std::string_view filename, std::span<const std::uint8_t> build_id);
  // The recording's carried files and kernel release (Symbolizer::set_recording_files).
  void set_recording_files(const PerfDataFeatures& features);
  // The recording's events: whether their sample times are CLOCK_MONOTONIC, as jitdumps' are.
  void set_sample_clock(std::span<const abi::PerfEventAttr> attrs);
  // The recorded build id of `mapping`'s file: the MMAP2 record's, else the recorded one.
  std::span<const std::uint8_t> build_id_of(const TaskMaps::MappingView& mapping) const;
  std::span<const std::uint8_t> recorded_build_id(std::string_view filename) const;

  // The ips of `sample`, leaf first, into `out` (cleared first), as perf script prints them.
  // `cpumode` is the sample's (its header's misc): the mode of the call chain's entries before
  // the first marker and of the sample's ip. With user registers and stack (`--call-graph
  // dwarf`) the user part comes from the unwinder, the kernel part from the call chain; when the
  // unwinder cannot start (the pc's file is unreadable) there is no user frame, as in perf.
  // Without user registers (simpleperf unwinds at record time) the chain's user frames are
  // used. With `branch_sample_type` CALL_STACK (`--call-graph lbr`) the user part is the LBR
  // call stack. A sample with no chain is its ip.
  void walk(const SampleRecord& sample, std::uint16_t cpumode, std::vector<StackAddress>& out,
            std::uint64_t branch_sample_type = 0);
  // walk, with the leaf at the sample's ip: what a profile charges the sample's own cost to
  // (perf report's self cost goes to the sample ip, not the chain's first entry, which differs
  // with PEBS and LBR call stacks). Never empty.
  void walk_from_sample_ip(const SampleRecord& sample, std::uint16_t cpumode,
                           std::vector<StackAddress>& out, std::uint64_t branch_sample_type = 0);

  // Names one ip of process `pid`; answered from the cache after the first time (per address,
  // process and version of its mappings). `name_kernel` false leaves kernel ips unnamed and
  // uncached (for callers that name them later while kallsyms loads meanwhile).
  const ResolvedAddress& resolve(std::uint32_t pid, const StackAddress& address,
                                 bool name_kernel = true);
  // Names a kernel ip left unnamed by resolve(name_kernel = false).
  void name_kernel(ResolvedAddress& resolved);

  // walk + resolve + inline expansion: the frames of `sample`, leaf first, into `out` (cleared
  // first). The frames' `where` point into the resolver until its next call.
  void resolve_sample(const SampleRecord& sample, std::uint16_t cpumode,
                      std::vector<StackFrame>& out, std::uint64_t branch_sample_type = 0);

  const TaskMaps& maps() const noexcept;
  Symbolizer& symbolizer() noexcept;
  // The unwinder's statistics; null before the first DWARF sample.
  const UnwindStatistics* unwind_statistics() const noexcept;
  const StackSources& stack_sources() const noexcept;

  // For long-running live callers (top), whose tasks come and go and would otherwise grow the
  // state for good: forget an exited task (TaskMaps::forget_task); the number of cached
  // resolutions, and dropping them all (the symbolizer's per-file tables stay; ids start again
  // from 0, and every ResolvedAddress handed out before is invalid).
  void forget_task(std::uint32_t pid, std::uint32_t tid);
  std::size_t cached_addresses() const noexcept;
  void clear_address_cache();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace perfscope
