#include "perfscope/analysis/profile/stack_resolver.hpp"

#include <time.h>

#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "analysis/profile/flat_index_map.hpp"
#include "analysis/symbols/kernel_symbols.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/symbols/jitdump.hpp"
#include "perfscope/analysis/symbols/vdso_image.hpp"

namespace perfscope {

namespace {

namespace sf = abi::sample_format;
namespace cc = abi::callchain_context;
namespace misc = abi::record_misc;
using detail::FlatIndexMap;

// The mode a context marker switches to; a marker that names no mode (PERF_CONTEXT_GUEST, which
// perf emits before GUEST_KERNEL or GUEST_USER) leaves it.
std::uint16_t mode_after(std::uint64_t marker, std::uint16_t mode) noexcept {
  switch (marker) {
    case cc::kernel: return misc::kernel;
    case cc::user: return misc::user;
    case cc::hv: return misc::hypervisor;
    case cc::guest_kernel: return misc::guest_kernel;
    case cc::guest_user: return misc::guest_user;
    default: return mode;
  }
}

// Modes named through the process's mappings. Hypervisor and guest-user ips belong to no
// process this recording describes.
bool process_mode(std::uint16_t cpumode) noexcept {
  return cpumode == misc::user || cpumode == misc::cpumode_unknown;
}

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const noexcept {
    return std::hash<std::string_view>()(text);
  }
};

}  // namespace

bool is_kernel_cpumode(std::uint16_t cpumode) noexcept {
  return cpumode == misc::kernel || cpumode == misc::guest_kernel;
}

struct StackResolver::State {
  explicit State(StackResolverOptions o) : options(std::move(o)), symbolizer(options.symbols) {}

  StackResolverOptions options;
  TaskMaps maps;
  Symbolizer symbolizer;
  std::unique_ptr<DwarfUnwinder> unwinder;  // made at the first DWARF sample
  StackSources sources;
  std::vector<std::uint64_t> unwound;

  // Resolutions by (ip, context); a deque keeps the references handed out stable.
  std::deque<ResolvedAddress> resolved;
  FlatIndexMap index{4096};
  ResolvedAddress uncached;  // the last answer that was not cached
  // Mapping file names as the resolutions point at them (TaskMaps's own move as it grows).
  std::unordered_set<std::string, StringHash, std::equal_to<>> names;
  std::unordered_map<std::string, std::vector<std::uint8_t>, StringHash, std::equal_to<>>
      recorded_build_ids;

  // The mappings generation of the last process asked about, until the next record changes any.
  std::uint32_t generation_pid = 0;
  std::uint64_t generation = 0;
  bool generation_known = false;

  std::vector<StackAddress> addresses;  // resolve_sample's walk
  std::uint64_t sample_time = 0;        // of the sample walked last: JIT code is named at it

  const std::string* stable_name(const std::string& name) {
    auto found = names.find(name);
    if (found == names.end()) found = names.insert(name).first;
    return &*found;
  }

  std::uint64_t generation_of(std::uint32_t pid) {
    if (!generation_known || generation_pid != pid) {
      generation = maps.maps_generation(pid);
      generation_pid = pid;
      generation_known = true;
    }
    return generation;
  }

  void name_kernel(ResolvedAddress& out) {
    out.named = true;
    // A kernel-mode ip outside every recorded kernel map (no kernel map covers it, the
    // recording has none, or a PEBS skid left a user address with kernel misc): perf shows
    // [unknown] and names nothing. Naming it from this machine's kallsyms would be a guess.
    if (!out.mapping) return;
    out.symbol = symbolizer.resolve_kernel(out.address.lookup());
    // The kernel's __pfx_ symbols are the padding before each function (CONFIG_FUNCTION_PADDING):
    // nothing there calls. A chain entry at a function's first byte is then an exact ip, the
    // interrupted one of an exception or interrupt frame inside the chain: named at itself, as
    // perf names every entry (x64_sys_call, not __pfx_x64_sys_call+0xf).
    if (out.address.return_address && out.symbol.symbol.starts_with("__pfx_")) {
      out.address.return_address = false;
      out.symbol = symbolizer.resolve_kernel(out.address.ip);
    }
    if (out.mapping && *out.mapping->filename != kernel_dso_name) {
      out.dso = *out.mapping->filename;  // a kernel module's map, "[ath9k]"
    } else {
      out.dso = out.symbol.dso.empty() ? kernel_dso_name : out.symbol.dso;
    }
  }

  void resolve_uncached(std::uint32_t pid, const StackAddress& address, bool name_kernel_now,
                        ResolvedAddress& out) {
    out = ResolvedAddress{};
    out.address = address;
    out.kernel = is_kernel_cpumode(address.cpumode);
    out.dso_address = address.ip;
    if (out.kernel || process_mode(address.cpumode)) {
      out.mapping = maps.mapping_of(pid, address.ip, address.cpumode, address.of_kernel_sample);
      if (out.mapping) out.mapping->filename = stable_name(*out.mapping->filename);
    }
    std::uint64_t lookup = address.lookup();
    if (out.kernel) {
      // The kernel's MMAP record carries its _text address as pgoff: the symbolizer checks the
      // kallsyms it reads against it.
      if (out.mapping && *out.mapping->filename == kernel_dso_name) {
        symbolizer.set_kernel_reference_address(out.mapping->pgoff);
      }
      if (name_kernel_now) {
        name_kernel(out);
      } else {
        symbolizer.prefetch_kernel();
      }
      return;
    }
    out.named = true;
    if (!out.mapping) return;  // a sample before its process's maps were recorded: [unknown]
    const TaskMaps::MappingView& mapping = *out.mapping;
    std::string_view name = *mapping.filename;
    if (!is_anonymous_mapping(name) && name.front() != '[') {
      out.symbol = symbolizer.resolve_file(name, mapping.file_offset(lookup), build_id_of(mapping));
      const bool past_padding = out.symbol.symbol.empty() && out.symbol.file_read;
      const bool last_byte = address.return_address && !out.symbol.symbol.empty() &&
                             out.symbol.offset + 1 >= out.symbol.size;
      if ((address.return_address || address.adjusted_caller) && (past_padding || last_byte)) {
        // A return address at a function's first byte: one byte past padding (a signal
        // handler returns into its trampoline's start, __restore_rt, runtime.sigreturn.abi0,
        // which no call precedes), or right after a call that ends the function before it (ld.so's
        // _start calls _dl_start and returns into _dl_start_user). Named at itself, as perf
        // names return addresses in frame-pointer chains.
        std::uint64_t returned_to = lookup + 1;
        SymbolizedAddress at =
            symbolizer.resolve_file(name, mapping.file_offset(returned_to), build_id_of(mapping));
        if (!at.symbol.empty() && at.offset == 0) {
          out.symbol = at;
          out.address.return_address = false;
          out.address.adjusted_caller = false;
          out.address.ip = returned_to;
        }
      }
      out.dso = name;
      out.dso_address = mapping.file_offset(out.address.ip);
    } else if (name.starts_with("/memfd:")) {
      // A memfd's code (a sandbox's sealed copy of a binary, a runtime's double mapping): named
      // by the mapping as perf names it, "/memfd:NAME (deleted)" (report's short name drops the
      // slash); no perf map is looked for.
      out.dso = name;
      out.dso_address = mapping.file_offset(address.ip);
    } else if (is_anonymous_mapping(name) && mapping.executable) {
      // JIT code: /tmp/perf-PID.map names it, if anything.
      out.symbol = symbolizer.resolve_jit(pid, lookup, sample_time);
      out.dso = out.symbol.dso.empty() ? name : out.symbol.dso;
    } else if (is_anonymous_mapping(name)) {
      // Data (a heap, a thread's stack: a return address taken from a stack without frame
      // pointers may point anywhere): no code, no perf map asked for.
      out.dso = name;
    } else {
      // [vdso], [vsyscall] and the like: named by their mapping. The vDSO is an image with
      // symbols (carried by the recording, or this kernel's), whose addresses perf shows as
      // offsets; the others are plain memory.
      out.dso = name;
      if (name == vdso_mapping_name) {
        out.symbol =
            symbolizer.resolve_file(name, mapping.file_offset(lookup), build_id_of(mapping));
        out.dso_address = mapping.file_offset(address.ip);
      }
    }
  }

  // Whether perf would show the pc of a DWARF sample none of whose process's files can be
  // opened here. perf (libunwind) unwinds a process only once one of its mappings is a file it
  // can read the ELF class of; it reads the vDSO as this machine's own unless the recording
  // gave the vDSO a build id (then it looks for that one, in vain). Without such a file perf
  // shows no user frame at all, not even the pc.
  bool vdso_stands_in(std::uint32_t pid) const {
    bool vdso = false;
    maps.for_each_mapping(pid, [&](const TaskMaps::MappingView& mapping) {
      vdso |= *mapping.filename == "[vdso]" && build_id_of(mapping).empty();
    });
    return vdso;
  }

  std::span<const std::uint8_t> build_id_of(const TaskMaps::MappingView& mapping) const {
    if (!mapping.build_id.empty()) return mapping.build_id;
    return recorded_build_id_of(*mapping.filename);
  }

  std::span<const std::uint8_t> recorded_build_id_of(std::string_view filename) const {
    auto found = recorded_build_ids.find(filename);
    if (found == recorded_build_ids.end()) return {};
    return found->second;
  }

  const ResolvedAddress& resolve(std::uint32_t pid, const StackAddress& address,
                                 bool name_kernel_now) {
    bool kernel = is_kernel_cpumode(address.cpumode);
    if (kernel && !name_kernel_now) {
      resolve_uncached(pid, address, false, uncached);
      return uncached;
    }
    // Kernel addresses mean the same in every process; the others are keyed by the process and
    // the version of its mappings (exec and mmap change what an address names), and by the mode
    // (hypervisor and guest ips are not the process's).
    std::uint64_t context = kernel ? 1
                                   : ((std::uint64_t{pid} << 32 ^ generation_of(pid)) << 2) | 2 |
                                         (address.cpumode == misc::user ? 0 : 1ULL << 63);
    context ^= address.return_address ? 1ULL << 62 : 0;
    context ^= address.of_kernel_sample ? 1ULL << 61 : 0;
    context ^= address.adjusted_caller ? 1ULL << 60 : 0;
    // JIT code named from a jitdump changes as the runtime loads and moves code: its answers
    // are kept per epoch of the dump (the process's other addresses are not).
    if (!kernel) {
      if (std::uint64_t jit = symbolizer.jit_epoch(pid, address.lookup(), sample_time); jit != 0) {
        auto mapping = maps.mapping_of(pid, address.ip, address.cpumode);
        if (mapping && is_anonymous_mapping(*mapping->filename)) {
          context = (context ^ jit * 0x9e3779b97f4a7c15ULL) | 2;
        }
      }
    }
    auto id = static_cast<std::uint32_t>(resolved.size());
    std::uint32_t found = index.insert(address.ip, context, id);
    if (found != id) return resolved[found];
    ResolvedAddress& out = resolved.emplace_back();
    resolve_uncached(pid, address, true, out);
    out.id = id;
    return out;
  }

  void walk(const SampleRecord& sample, std::uint16_t sample_cpumode,
            std::uint64_t branch_sample_type, std::vector<StackAddress>& out) {
    out.clear();
    sample_time = sample.has(sf::time) ? sample.time : 0;
    bool dwarf = sample.has(sf::regs_user) && sample.has(sf::stack_user);
    // The user part comes from the unwinder when the sample carries user registers. A recorder
    // that unwound at record time (simpleperf: registers ABI 0, no stack) left the user frames
    // in the call chain: they are used as they are.
    bool unwound_here = dwarf && sample.regs_user.abi != 0;
    // --call-graph lbr: the user part is the LBR call stack, the latest branch's target first,
    // then each branch's source (perf's resolve_lbr_callchain_sample, callee order).
    bool lbr = (branch_sample_type & abi::branch_sample::call_stack) != 0 &&
               sample.has(sf::branch_stack) && !sample.branch_stack.entries.empty();
    if (options.callchains) {
      if (lbr) {
        ++sources.lbr;
      } else if (unwound_here) {
        ++sources.dwarf_unwound_here;
      } else if (sample.has(sf::callchain) && !dwarf) {
        ++sources.frame_pointers;
      } else if (sample.has(sf::callchain) &&
                 std::find(sample.callchain.begin(), sample.callchain.end(), cc::user) !=
                     sample.callchain.end()) {
        ++sources.dwarf_while_recording;
      }
    }
    bool sample_entered_kernel = is_kernel_cpumode(sample_cpumode);
    if (options.callchains && sample.has(sf::callchain)) {
      std::uint16_t mode = sample_cpumode;
      bool first_of_context = true;
      for (std::uint64_t ip : sample.callchain) {
        if (cc::is_marker(ip)) {
          if (lbr && ip == cc::user) {
            const auto& entries = sample.branch_stack.entries;
            out.push_back({entries[0].to, misc::user, false});
            for (const auto& entry : entries) out.push_back({entry.from, misc::user, false});
            break;
          }
          mode = mode_after(ip, mode);
          first_of_context = true;
          continue;
        }
        if (unwound_here && !is_kernel_cpumode(mode)) continue;
        if (dwarf && mode == misc::user && !first_of_context) {
          // A caller the recorder unwound by DWARF is its return address minus one already
          // (perfscope's and simpleperf's recorders, as perf's libunwind gives callers): named
          // and shown as it is, as perf does with the chain.
          out.push_back({ip, mode, false, sample_entered_kernel, true});
          continue;
        }
        out.push_back({ip, mode, !first_of_context, mode == misc::user && sample_entered_kernel});
        first_of_context = false;
      }
    }
    if (dwarf && options.callchains) {
      if (!unwinder) {
        unwinder = std::make_unique<DwarfUnwinder>(
            maps, options.unwind_method,
            [this](const std::string& path, std::span<const std::uint8_t> build_id) {
              if (build_id.empty()) build_id = recorded_build_id_of(path);
              return symbolizer.file_locator().locate(path, build_id).path;
            },
            [this](std::uint32_t pid, std::uint64_t address, std::uint64_t time) {
              return symbolizer.jit_code_at(pid, address, time);
            });
        unwound.resize(1024);
      }
      UnwindResult result = unwinder->unwind(sample, unwound);
      std::size_t frames = result.frames;
      if (result.no_module && !vdso_stands_in(sample.pid)) frames = 0;
      // The unwinder gives each caller's return address minus one, as perf's libunwind does:
      // named there, not one byte further back, and shown as perf shows it.
      for (std::size_t i = 0; i < frames; ++i) {
        out.push_back({unwound[i], misc::user, false, sample_entered_kernel, i != 0});
      }
      if (unwound_here) return;  // no frame, not the sample's ip, when nothing unwound
    }
    if (out.empty()) out.push_back({sample.ip, sample_cpumode, false});
  }
};

StackResolver::StackResolver(StackResolverOptions options)
    : state_(std::make_unique<State>(std::move(options))) {
  state_->addresses.reserve(256);
}

StackResolver::~StackResolver() = default;

void StackResolver::observe(const RecordView& view, const ParseConfig& config) {
  state_->maps.observe(view, config);
  state_->generation_known = false;
  // A runtime maps its jitdump to tell perf where it is (perf inject finds it the same way).
  auto type = static_cast<abi::RecordType>(view.header.type);
  if (type != abi::RecordType::mmap && type != abi::RecordType::mmap2) return;
  Record record;
  DecodeError error;
  if (!decode_record(view, config, record, error)) return;
  if (const auto* mmap = std::get_if<MmapRecord>(&record);
      mmap && is_jitdump_path(mmap->filename)) {
    state_->symbolizer.add_jitdump(mmap->pid, mmap->filename);
  } else if (const auto* mmap2 = std::get_if<Mmap2Record>(&record);
             mmap2 && is_jitdump_path(mmap2->filename)) {
    state_->symbolizer.add_jitdump(mmap2->pid, mmap2->filename);
  }
}

void StackResolver::set_sample_clock(std::span<const abi::PerfEventAttr> attrs) {
  bool monotonic = !attrs.empty();
  for (const abi::PerfEventAttr& attr : attrs) {
    monotonic &= (attr.flags & abi::attr_flag::use_clockid) != 0 && attr.clockid == CLOCK_MONOTONIC;
  }
  state_->symbolizer.set_sample_clock_monotonic(monotonic);
}

void StackResolver::set_recording_files(const PerfDataFeatures& features) {
  state_->symbolizer.set_recording_files(features);
}

void StackResolver::add_recorded_build_id(std::string_view filename,
                                          std::span<const std::uint8_t> build_id) {
  State& state = *state_;
  if (filename == kernel_dso_name) state.symbolizer.set_kernel_build_id(build_id);
  state.recorded_build_ids[std::string(filename)].assign(build_id.begin(), build_id.end());
}

std::span<const std::uint8_t> StackResolver::build_id_of(
    const TaskMaps::MappingView& mapping) const {
  return state_->build_id_of(mapping);
}

std::span<const std::uint8_t> StackResolver::recorded_build_id(std::string_view filename) const {
  auto found = state_->recorded_build_ids.find(filename);
  if (found == state_->recorded_build_ids.end()) return {};
  return found->second;
}

void StackResolver::walk(const SampleRecord& sample, std::uint16_t cpumode,
                         std::vector<StackAddress>& out, std::uint64_t branch_sample_type) {
  state_->walk(sample, cpumode, branch_sample_type, out);
}

void StackResolver::walk_from_sample_ip(const SampleRecord& sample, std::uint16_t cpumode,
                                        std::vector<StackAddress>& out,
                                        std::uint64_t branch_sample_type) {
  state_->walk(sample, cpumode, branch_sample_type, out);
  // The sample's own cost belongs to its ip, which is not the chain's first entry with PEBS
  // (the chain starts at the interrupted ip) or LBR call stacks (the latest branch's target).
  StackAddress leaf{sample.ip, cpumode, false};
  if (out.empty()) {
    out.push_back(leaf);
  } else if (out.front().ip != sample.ip) {
    out.front() = leaf;
  }
}

const ResolvedAddress& StackResolver::resolve(std::uint32_t pid, const StackAddress& address,
                                              bool name_kernel) {
  return state_->resolve(pid, address, name_kernel);
}

void StackResolver::name_kernel(ResolvedAddress& resolved) { state_->name_kernel(resolved); }

void StackResolver::resolve_sample(const SampleRecord& sample, std::uint16_t cpumode,
                                   std::vector<StackFrame>& out, std::uint64_t branch_sample_type) {
  State& state = *state_;
  out.clear();
  state.walk(sample, cpumode, branch_sample_type, state.addresses);
  for (const StackAddress& address : state.addresses) {
    const ResolvedAddress& where = state.resolve(sample.pid, address, true);
    for (const InlinedCall& call : where.symbol.inlined) {
      out.push_back({&where, call.function, call.location, true});
    }
    out.push_back({&where, where.symbol.symbol, where.symbol.source, false});
  }
}

const TaskMaps& StackResolver::maps() const noexcept { return state_->maps; }

Symbolizer& StackResolver::symbolizer() noexcept { return state_->symbolizer; }

void StackResolver::forget_task(std::uint32_t pid, std::uint32_t tid) {
  state_->maps.forget_task(pid, tid);
  state_->generation_known = false;
}

std::size_t StackResolver::cached_addresses() const noexcept { return state_->resolved.size(); }

void StackResolver::clear_address_cache() {
  state_->resolved.clear();
  state_->index = detail::FlatIndexMap{4096};
}

const StackSources& StackResolver::stack_sources() const noexcept { return state_->sources; }

const UnwindStatistics* StackResolver::unwind_statistics() const noexcept {
  return state_->unwinder ? &state_->unwinder->statistics() : nullptr;
}

}  // namespace perfscope
