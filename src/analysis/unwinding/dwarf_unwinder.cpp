// Over 800 lines on purpose: the cached-CFI walker and the libdwfl fallback must give the same
// frames for every sample, and they share the per-process state below; kept side by side so
// that a change to one is seen against the other (tests/analysis/unwinding compares them).
#include "perfscope/analysis/unwinding/dwarf_unwinder.hpp"

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/unwinding/cached_frame_rule.hpp"
#include "analysis/unwinding/jit_unwind_table.hpp"
#include "analysis/unwinding/unwind_registers.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/symbols/elf_image.hpp"

namespace perfscope {

namespace {

using unwind::CachedFrameRule;
using unwind::CfaExpression;
using unwind::CfiRules;
using unwind::InitialRegisters;
using unwind::JitUnwindTable;
using unwind::UnwindArch;
namespace x86_64_dwarf = unwind::x86_64_dwarf;

// Processes whose unwind tables stay loaded; the least recently sampled one beyond this is
// dropped (a long recording of short-lived processes would otherwise keep every one).
constexpr std::size_t max_cached_processes = 64;

// One ELF file on disk, opened once for every process that maps it: its loadable segments place
// the mappings, and its bytes answer reads of read-only memory the copied stack does not hold.
struct LoadableFile {
  struct Segment {
    std::uint64_t vaddr = 0, offset = 0, file_size = 0, memory_size = 0;
    std::uint32_t flags = 0;
  };
  std::optional<ElfImage> file;
  Elf* elf = nullptr;  // file's
  const std::byte* image = nullptr;
  std::size_t image_size = 0;
  UnwindArch arch = UnwindArch::unsupported;
  std::vector<Segment> segments;  // PT_LOAD, in file order
  std::vector<std::uint8_t> build_id;
  std::string read_path;  // where it was read: the recorded path, or where the locator found it
  // .eh_frame, read when the first sample lands in the file, and the rules of the pcs seen.
  Dwarf_CFI* eh_frame = nullptr;
  bool eh_frame_read = false;
  CfiRules rules;

  LoadableFile() = default;
  LoadableFile(const LoadableFile&) = delete;
  LoadableFile& operator=(const LoadableFile&) = delete;
  ~LoadableFile() {
    if (eh_frame) dwarf_cfi_end(eh_frame);
  }
  bool usable() const noexcept { return elf != nullptr; }

  bool open(const std::string& path) {
    std::string error;
    read_path = path;
    file = ElfImage::open(path, error);
    if (!file) return false;
    elf = file->elf();
    arch = unwind::arch_of_machine(file->machine());
    for (const ElfImage::Segment& segment : file->segments()) {
      segments.push_back(
          {segment.address, segment.offset, segment.size, segment.memory_size, segment.flags});
    }
    std::span<const std::byte> bytes = file->bytes();
    image = bytes.data();
    image_size = bytes.size();
    if (segments.empty() || !image) return fail();
    auto id = file->build_id();
    build_id.assign(id.begin(), id.end());
    return true;
  }

  bool fail() {
    file.reset();
    elf = nullptr;
    return false;
  }

  // The cached rule of the CFI row covering `vaddr` (unbiased); made once per pc.
  const CachedFrameRule& rule_at(std::uint64_t vaddr) {
    if (!eh_frame_read) {
      eh_frame_read = true;
      if (arch == UnwindArch::x86_64) eh_frame = dwarf_getcfi_elf(elf);
    }
    return rules.rule_at(eh_frame, vaddr);
  }

  // The lowest and highest address of the loaded image at load bias `bias`.
  std::uint64_t low(std::uint64_t bias) const noexcept {
    std::uint64_t lowest = ~std::uint64_t{0};
    for (const auto& segment : segments) lowest = std::min(lowest, segment.vaddr);
    return bias + (lowest & ~std::uint64_t{0xfff});
  }
  std::uint64_t high(std::uint64_t bias) const noexcept {
    std::uint64_t highest = 0;
    for (const auto& segment : segments) {
      highest = std::max(highest, segment.vaddr + segment.memory_size);
    }
    return bias + highest;
  }

  // The 8 bytes at virtual address `vaddr` (unbiased) when a read-only segment's file contents
  // hold them: what the process saw there, since nothing could have written it.
  bool read_word(std::uint64_t vaddr, std::uint64_t& word) const noexcept {
    for (const auto& segment : segments) {
      if ((segment.flags & PF_W) || vaddr < segment.vaddr || segment.file_size < 8 ||
          vaddr - segment.vaddr > segment.file_size - 8) {
        continue;
      }
      std::uint64_t offset = segment.offset + (vaddr - segment.vaddr);
      if (offset > image_size || image_size - offset < 8) return false;
      std::memcpy(&word, image + offset, 8);
      return true;
    }
    return false;
  }
};

// A file placed in a process: its image spans [low, high) at load bias `bias`.
struct PlacedModule {
  std::uint64_t low = 0, high = 0, bias = 0;
  const std::string* path = nullptr;  // key of the file cache
  LoadableFile* file = nullptr;
  bool operator==(const PlacedModule& other) const noexcept {
    return file == other.file && bias == other.bias;
  }
};

// The sample being unwound, as the libdwfl callbacks see it.
struct SampleContext {
  InitialRegisters registers;
  std::span<const std::byte> stack;  // the valid copy, starting at registers.sp
  // Reads that found no bytes since the last frame was reported: libdw ends a walk whose return
  // address cannot be read as if the CFI had said there is no caller, and this tells them apart.
  unsigned failed_reads = 0;
  // Where libdwfl takes over a walk the cached rules began through JIT code (their frames are
  // kept): the frame they could not step over, with the registers they track.
  struct Resume {
    bool active = false;
    std::uint64_t pc = 0, sp = 0, frame_pointer = 0;
    bool frame_pointer_known = false;
  } resume;
};

struct ProcessUnwind {
  Dwfl* dwfl = nullptr;
  std::uint64_t generation = 0;
  std::uint64_t last_use = 0;
  UnwindArch arch = UnwindArch::unsupported;
  std::vector<PlacedModule> modules;  // by low address
  SampleContext sample;

  ProcessUnwind() = default;
  ProcessUnwind(const ProcessUnwind&) = delete;
  ProcessUnwind& operator=(const ProcessUnwind&) = delete;
  ~ProcessUnwind() {
    if (dwfl) dwfl_end(dwfl);
  }

  const PlacedModule* module_at(std::uint64_t address) const noexcept {
    auto it = std::upper_bound(
        modules.begin(), modules.end(), address,
        [](std::uint64_t value, const PlacedModule& module) { return value < module.low; });
    if (it == modules.begin()) return nullptr;
    --it;
    return address < it->high ? &*it : nullptr;
  }
};

// ---- libdwfl callbacks: the process is the recorded one, its only thread the sampled one ----

pid_t next_thread(Dwfl*, void* dwfl_arg, void** thread_argp) {
  // dwfl_getthread_frames asks through get_thread; a walk over all threads sees none.
  *thread_argp = dwfl_arg;
  return 0;
}

bool get_thread(Dwfl*, pid_t, void* dwfl_arg, void** thread_argp) {
  *thread_argp = dwfl_arg;
  return true;
}

// The word at `address` in the sampled process: from the copied stack, else from a read-only
// segment of a mapped file.
bool read_process_word(ProcessUnwind& process, std::uint64_t address,
                       std::uint64_t& word) noexcept {
  SampleContext& sample = process.sample;
  std::uint64_t sp = sample.registers.sp;
  if (address >= sp && address - sp <= sample.stack.size() &&
      sample.stack.size() - (address - sp) >= 8) {
    std::memcpy(&word, sample.stack.data() + (address - sp), 8);
    return true;
  }
  const PlacedModule* module = process.module_at(address);
  return module && module->file->read_word(address - module->bias, word);
}

bool memory_read(Dwfl*, Dwarf_Addr address, Dwarf_Word* result, void* dwfl_arg) {
  auto* process = static_cast<ProcessUnwind*>(dwfl_arg);
  std::uint64_t word = 0;
  if (!read_process_word(*process, address, word)) {
    ++process->sample.failed_reads;
    return false;
  }
  *result = word;
  return true;
}

bool set_initial_registers(Dwfl_Thread* thread, void* thread_arg) {
  const SampleContext& sample = static_cast<const ProcessUnwind*>(thread_arg)->sample;
  if (sample.resume.active) {
    // The registers the rules tracked; the others are unknown in the caller frames.
    Dwarf_Word sp = sample.resume.sp, frame_pointer = sample.resume.frame_pointer;
    if (!dwfl_thread_state_registers(thread, x86_64_dwarf::rsp, 1, &sp)) return false;
    if (sample.resume.frame_pointer_known &&
        !dwfl_thread_state_registers(thread, x86_64_dwarf::rbp, 1, &frame_pointer)) {
      return false;
    }
    dwfl_thread_state_register_pc(thread, sample.resume.pc);
    return true;
  }
  const auto& registers = sample.registers;
  if (!dwfl_thread_state_registers(thread, 0, registers.count, registers.dwarf.data())) {
    return false;
  }
  dwfl_thread_state_register_pc(thread, registers.pc);
  return true;
}

const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
    .detach = nullptr,
    .thread_detach = nullptr,
};

bool has_debug_frame(const char* path) noexcept {
  std::string error;
  auto file = ElfImage::open(path, error);
  return file && (file->section(".debug_frame") || file->section(".zdebug_frame"));
}

// Separate debug files are looked up the standard way, and only when they hold .debug_frame,
// the one thing unwinding wants of them: libdwfl asks for them when .eh_frame has no row for a
// pc (ld.so's _start), and taking one makes it inflate all its compressed DWARF sections. The
// check comes first because the standard lookup by build id hands the file to the module
// itself, whatever this callback then returns.
int find_debug_frame_file(Dwfl_Module* module, void** userdata, const char* module_name,
                          Dwarf_Addr base, const char* file_name, const char* debuglink_file,
                          GElf_Word debuglink_crc, char** debuginfo_file_name) {
  const unsigned char* bits = nullptr;
  GElf_Addr build_id_address = 0;
  int length = dwfl_module_build_id(module, &bits, &build_id_address);
  if (length > 1) {
    std::string path = "/usr/lib/debug/.build-id/";
    constexpr char digits[] = "0123456789abcdef";
    for (int i = 0; i < length; ++i) {
      path.push_back(digits[bits[i] >> 4]);
      path.push_back(digits[bits[i] & 15]);
      if (i == 0) path.push_back('/');
    }
    path += ".debug";
    if (::access(path.c_str(), R_OK) == 0 && !has_debug_frame(path.c_str())) return -1;
  }
  return dwfl_standard_find_debuginfo(module, userdata, module_name, base, file_name,
                                      debuglink_file, debuglink_crc, debuginfo_file_name);
}

// Every module is reported with its ELF already open, so no find_elf is needed.
char* debuginfo_path = nullptr;
const Dwfl_Callbacks offline_callbacks = {
    .find_elf = nullptr,
    .find_debuginfo = find_debug_frame_file,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

// What a walk collects: each frame's pc as perf reports it.
struct Walk {
  SampleContext* sample = nullptr;
  std::span<std::uint64_t> ips;
  std::size_t frames = 0;
  unsigned sp_register = 0;
  std::uint64_t last_pc = 0, last_sp = 0;
  std::uint64_t stop_at_caller = 0;
  bool truncated = false;
};

int on_frame(Dwfl_Frame* frame, void* arg) {
  auto& walk = *static_cast<Walk*>(arg);
  // Asking whether this frame is an activation unwinds it to its caller: reads failing from
  // here on belong to that step.
  walk.sample->failed_reads = 0;
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
  // A return address points after the call: one byte back lies inside the call instruction,
  // which names the caller's line and function (what perf reports too).
  if (!activation) --pc;
  Dwarf_Word sp = 0;
  bool have_sp = dwfl_frame_reg(frame, walk.sp_register, &sp) == 0;
  // A frame identical to the one before (bad CFI) would repeat forever.
  if (walk.frames > 0 && have_sp && pc == walk.last_pc && sp == walk.last_sp) {
    return DWARF_CB_ABORT;
  }
  if (walk.frames == walk.ips.size()) {
    walk.truncated = true;
    return DWARF_CB_ABORT;
  }
  walk.ips[walk.frames++] = pc;
  walk.last_pc = pc;
  walk.last_sp = have_sp ? sp : 0;
  if (!activation && walk.stop_at_caller != 0 && pc == walk.stop_at_caller) return DWARF_CB_ABORT;
  return DWARF_CB_OK;
}

// How a walk by the cached rules ended.
enum class CachedWalkEnd : std::uint8_t {
  done,           // every frame walked: the result stands
  needs_libdwfl,  // a frame needs more than the rules hold: libdwfl walks the whole sample
  resume,         // the same, after frames of JIT code walked by a jitdump's CFI, which libdwfl
                  // cannot read: libdwfl walks on from the frame where the rules stopped
};

// Walks the sample's x86-64 stack with the cached CFI rules alone: a file's rows, or for JIT code
// (`jit_table_at(pc)`, null outside it) the rows of its jitdump's unwinding information. A frame
// that needs more than the rules hold (no rule, a register they do not track) hands the sample to
// libdwfl, so the frames are libdwfl's but where JIT code's own CFI was read: libdwfl can only
// guess those by frame pointers, wrong in a prologue or epilogue. A return address past the end
// of the copy ends the walk as it ends libdwfl's.
template <typename JitTableAt>
CachedWalkEnd walk_by_cached_rules(ProcessUnwind& process, std::span<std::uint64_t> ips,
                                   std::uint64_t stop_at_caller, JitTableAt&& jit_table_at,
                                   UnwindResult& result, bool& truncated) {
  const InitialRegisters& registers = process.sample.registers;
  std::uint64_t pc = registers.pc, sp = registers.sp;
  std::uint64_t frame_pointer = registers.dwarf[x86_64_dwarf::rbp];
  bool frame_pointer_known = true;
  bool activation = true;
  bool through_jit = false;
  std::size_t frames = 0;
  std::uint64_t last_pc = 0, last_sp = 0;
  // Where the rules cannot go on: the frames so far stand when JIT CFI made them.
  auto stop = [&](std::uint64_t frame_pc) {
    if (!through_jit) return CachedWalkEnd::needs_libdwfl;
    result.frames = frames;
    result.jit_unwinding_info = true;
    process.sample.resume = {true, frame_pc, sp, frame_pointer, frame_pointer_known};
    return CachedWalkEnd::resume;
  };
  for (;;) {
    // A return address points after the call: the caller's row is the call instruction's.
    std::uint64_t frame_pc = activation ? pc : pc - 1;
    const CachedFrameRule* rule = nullptr;
    const CfiRules* rules = nullptr;
    if (const PlacedModule* module = process.module_at(frame_pc)) {
      rule = &module->file->rule_at(frame_pc - module->bias);
      rules = &module->file->rules;
    } else if (JitUnwindTable* table = jit_table_at(frame_pc)) {
      rule = &table->rule_at(frame_pc);
      rules = &table->rules();
      if (rule->kind != CachedFrameRule::Kind::unsupported) through_jit = true;
    }
    if (!rule || rule->kind == CachedFrameRule::Kind::unsupported) return stop(frame_pc);
    if (frames > 0 && frame_pc == last_pc && sp == last_sp) break;  // bad CFI would loop
    if (frames == ips.size()) {
      truncated = true;
      break;
    }
    ips[frames++] = frame_pc;
    last_pc = frame_pc;
    last_sp = sp;
    if (!activation && stop_at_caller != 0 && frame_pc == stop_at_caller) break;
    if (rule->kind == CachedFrameRule::Kind::outermost) {
      result.complete = true;
      break;
    }
    std::uint64_t cfa = 0;
    if (rule->cfa_expression != CachedFrameRule::no_expression) {
      if (!evaluate_cfa_expression(rules->expression(rule->cfa_expression), sp, frame_pointer,
                                   frame_pointer_known, pc, cfa)) {
        --frames;
        return stop(frame_pc);
      }
    } else if (rule->cfa_register == x86_64_dwarf::rbp) {
      if (!frame_pointer_known) {
        --frames;
        return stop(frame_pc);
      }
      cfa = frame_pointer + static_cast<std::uint64_t>(rule->cfa_offset);
    } else {
      cfa = sp + static_cast<std::uint64_t>(rule->cfa_offset);
    }
    std::uint64_t return_address = 0;
    if (!read_process_word(process, cfa + static_cast<std::uint64_t>(rule->return_address_offset),
                           return_address)) {
      // Past the end of the copy: libdwfl, reading through the same words, would report this
      // frame and end the walk there (its caller's pc undefined), so the walk ends here too,
      // incomplete. Nearly every walk of a short copy (-g's) ends this way: handing these to
      // libdwfl walked each such sample twice.
      break;
    }
    if (return_address == 0) {
      // libdwfl takes a zero return address for the end of the stack (a thread's start).
      result.complete = true;
      break;
    }
    if (rule->frame_pointer == CachedFrameRule::Saved::at_cfa) {
      frame_pointer_known = read_process_word(
          process, cfa + static_cast<std::uint64_t>(rule->frame_pointer_offset), frame_pointer);
    } else if (rule->frame_pointer == CachedFrameRule::Saved::undefined) {
      frame_pointer_known = false;
    }
    pc = return_address;
    sp = cfa;
    activation = false;
  }
  result.frames = frames;
  result.jit_unwinding_info = through_jit;
  return CachedWalkEnd::done;
}

}  // namespace

struct DwarfUnwinder::State {
  const TaskMaps& maps;
  UnwindFileLocator locate;
  JitCodeLookup jit_code;
  UnwindMethod method = UnwindMethod::cached_rules;
  // The CFI of the JIT code walks met (null: none usable), by the code's entry in its dump.
  std::unordered_map<const JitCode*, std::unique_ptr<JitUnwindTable>> jit_tables;
  UnwindStatistics statistics;
  std::unordered_map<std::string, std::unique_ptr<LoadableFile>> files;
  std::unordered_map<std::uint32_t, std::unique_ptr<ProcessUnwind>> processes;
  std::uint64_t clock = 0;
  // Reused while placing modules.
  std::vector<PlacedModule> placed;
  std::map<std::pair<LoadableFile*, std::uint64_t>, std::pair<unsigned, const std::string*>> votes;

  explicit State(const TaskMaps& task_maps) : maps(task_maps) {}

  LoadableFile* file(const std::string& path, std::span<const std::uint8_t> build_id) {
    auto found = files.find(path);
    if (found == files.end()) {
      auto opened = std::make_unique<LoadableFile>();
      opened->open(locate ? locate(path, build_id) : path);
      found = files.emplace(path, std::move(opened)).first;
    }
    return found->second->usable() ? found->second.get() : nullptr;
  }

  // The files of process `pid` and where they are loaded. A mapping says only which file offset
  // sits at which address; the segment holding that offset gives the load bias. Page-sharing
  // segments make some mappings ambiguous, so every mapping votes for the biases it allows (an
  // executable segment's vote counts most) and each file is placed at its winning bias.
  void place_modules(std::uint32_t pid) {
    votes.clear();
    maps.for_each_mapping(pid, [&](const TaskMaps::MappingView& mapping) {
      const std::string& path = *mapping.filename;
      if (path.empty() || path.front() != '/') return;  // [vdso], [stack], //anon
      LoadableFile* loadable = file(path, mapping.build_id);
      if (!loadable) return;
      // A file replaced since the recording would place wrong unwind tables.
      if (!mapping.build_id.empty() && !loadable->build_id.empty() &&
          !std::equal(mapping.build_id.begin(), mapping.build_id.end(), loadable->build_id.begin(),
                      loadable->build_id.end())) {
        return;
      }
      for (const auto& segment : loadable->segments) {
        std::uint64_t page_start = segment.offset & ~std::uint64_t{0xfff};
        if (mapping.pgoff < page_start ||
            mapping.pgoff >= segment.offset + std::max<std::uint64_t>(segment.file_size, 1)) {
          continue;
        }
        std::uint64_t bias = mapping.start - mapping.pgoff - (segment.vaddr - segment.offset);
        auto& vote = votes[{loadable, bias}];
        vote.first += (segment.flags & PF_X) ? 3 : 1;
        vote.second = mapping.filename;
      }
    });
    placed.clear();
    for (auto it = votes.begin(); it != votes.end();) {
      auto best = it;
      for (; it != votes.end() && it->first.first == best->first.first; ++it) {
        if (it->second.first > best->second.first) best = it;
      }
      LoadableFile* loadable = best->first.first;
      std::uint64_t bias = best->first.second;
      placed.push_back({loadable->low(bias), loadable->high(bias), bias,
                        &files.find(*best->second.second)->first, loadable});
    }
    std::sort(placed.begin(), placed.end(),
              [](const PlacedModule& a, const PlacedModule& b) { return a.low < b.low; });
    // Overlapping images (a stale mapping) would make libdwfl refuse the later one anyway.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < placed.size(); ++i) {
      if (kept > 0 && placed[i].low < placed[kept - 1].high) continue;
      placed[kept++] = placed[i];
    }
    placed.resize(kept);
  }

  static bool report(Dwfl* dwfl, const PlacedModule& module) {
    return dwfl_report_elf(dwfl, module.path->c_str(), module.file->read_path.c_str(), -1,
                           module.bias, true) != nullptr;
  }

  // A fresh Dwfl holding `placed`, attached to the sampled process state.
  bool rebuild(std::uint32_t pid, ProcessUnwind& process) {
    if (process.dwfl) dwfl_end(process.dwfl);
    process.dwfl = nullptr;
    process.modules.clear();
    process.arch = UnwindArch::unsupported;
    if (placed.empty()) return false;
    Dwfl* dwfl = dwfl_begin(&offline_callbacks);
    if (!dwfl) return false;
    dwfl_report_begin(dwfl);
    std::vector<PlacedModule> reported;
    reported.reserve(placed.size());
    for (const auto& module : placed) {
      if (report(dwfl, module)) reported.push_back(module);
    }
    dwfl_report_end(dwfl, nullptr, nullptr);
    // The architecture (registers, CFI conventions) is the main program's: the first file of
    // a known machine, normally the lowest-mapped executable.
    const PlacedModule* arch_module = nullptr;
    for (const auto& module : reported) {
      if (module.file->arch != UnwindArch::unsupported) {
        arch_module = &module;
        break;
      }
    }
    // Our own Elf for the backend: one owned by a module could be dropped by a later report.
    if (!arch_module || !dwfl_attach_state(dwfl, arch_module->file->elf, static_cast<pid_t>(pid),
                                           &thread_callbacks, &process)) {
      dwfl_end(dwfl);
      return false;
    }
    process.dwfl = dwfl;
    process.arch = arch_module->file->arch;
    process.modules = std::move(reported);
    return true;
  }

  // Brings the process's Dwfl up to date with its recorded mappings. New mappings are added to
  // the existing Dwfl (keeping the unwind tables it has parsed); anything else starts afresh.
  void refresh(std::uint32_t pid, ProcessUnwind& process) {
    place_modules(pid);
    if (placed == process.modules && process.dwfl) return;
    bool only_added =
        process.dwfl &&
        std::all_of(process.modules.begin(), process.modules.end(), [&](const PlacedModule& old) {
          return std::find(placed.begin(), placed.end(), old) != placed.end();
        });
    if (!only_added) {
      rebuild(pid, process);
      return;
    }
    dwfl_report_begin_add(process.dwfl);
    for (const auto& module : placed) {
      if (std::find(process.modules.begin(), process.modules.end(), module) !=
          process.modules.end()) {
        continue;
      }
      if (report(process.dwfl, module)) process.modules.push_back(module);
    }
    dwfl_report_end(process.dwfl, nullptr, nullptr);
    std::sort(process.modules.begin(), process.modules.end(),
              [](const PlacedModule& a, const PlacedModule& b) { return a.low < b.low; });
  }

  ProcessUnwind* process_of(std::uint32_t pid) {
    auto found = processes.find(pid);
    if (found == processes.end()) {
      if (processes.size() >= max_cached_processes) evict_oldest();
      found = processes.emplace(pid, std::make_unique<ProcessUnwind>()).first;
    }
    ProcessUnwind& process = *found->second;
    process.last_use = ++clock;
    std::uint64_t generation = maps.maps_generation(pid);
    if (generation != process.generation || !process.dwfl) {
      refresh(pid, process);
      process.generation = generation;
    }
    return &process;
  }

  // The unwind table of the JIT code at `pc` of the sample's process, or null.
  JitUnwindTable* jit_table_at(const SampleRecord& sample, std::uint64_t pc) {
    if (!jit_code) return nullptr;
    const JitCode* code = jit_code(sample.pid, pc, sample.time);
    if (!code) return nullptr;
    auto found = jit_tables.find(code);
    if (found == jit_tables.end()) {
      found = jit_tables.emplace(code, JitUnwindTable::make(*code, EM_X86_64)).first;
    }
    return found->second.get();
  }

  void evict_oldest() {
    auto oldest = std::min_element(
        processes.begin(), processes.end(),
        [](const auto& a, const auto& b) { return a.second->last_use < b.second->last_use; });
    if (oldest != processes.end()) processes.erase(oldest);
  }
};

DwarfUnwinder::DwarfUnwinder(const TaskMaps& maps, UnwindMethod method, UnwindFileLocator locate,
                             JitCodeLookup jit_code)
    : state_(std::make_unique<State>(maps)) {
  state_->method = method;
  state_->locate = std::move(locate);
  state_->jit_code = std::move(jit_code);
}

DwarfUnwinder::~DwarfUnwinder() {
  // Dwfls first: their backends use the Elf handles of the file cache.
  if (state_) state_->processes.clear();
}

const UnwindStatistics& DwarfUnwinder::statistics() const noexcept { return state_->statistics; }

UnwindResult DwarfUnwinder::unwind(const SampleRecord& sample, std::span<std::uint64_t> ips,
                                   std::uint64_t stop_at_caller) noexcept {
  UnwindResult result;
  UnwindStatistics& statistics = state_->statistics;
  if (!sample.has(abi::sample_format::regs_user) || sample.regs_user.abi == 0) {
    ++statistics.no_user_regs;
    return result;
  }
  ++statistics.samples;
  if (ips.empty()) return result;
  try {
    ProcessUnwind* process = state_->process_of(sample.pid);
    SampleContext& context = process->sample;
    UnwindArch arch = process->arch;
    bool no_module = arch == UnwindArch::unsupported;
    if (no_module) {
      // No file of the process could be opened: the pc is all there is, read as this host's.
#if defined(__aarch64__)
      arch = UnwindArch::arm64;
#else
      arch = UnwindArch::x86_64;
#endif
    }
    if (!unwind::initial_registers(arch, sample.regs_user, context.registers)) {
      ++statistics.unreadable_registers;
      return result;
    }
    context.stack = sample.has(abi::sample_format::stack_user) ? sample.stack_user_valid()
                                                               : std::span<const std::byte>();
    context.failed_reads = 0;
    Walk walk;
    walk.sample = &context;
    walk.ips = ips;
    walk.sp_register = context.registers.sp_dwarf_number;
    walk.stop_at_caller = stop_at_caller;
    bool truncated = false;
    context.resume.active = false;
    CachedWalkEnd cached = CachedWalkEnd::needs_libdwfl;
    if (process->dwfl && arch == UnwindArch::x86_64 &&
        state_->method == UnwindMethod::cached_rules) {
      cached = walk_by_cached_rules(
          *process, ips, stop_at_caller,
          [&](std::uint64_t pc) { return state_->jit_table_at(sample, pc); }, result, truncated);
    }
    if (cached == CachedWalkEnd::done) {
      ++statistics.by_cached_rules;
    } else {
      bool resumed = cached == CachedWalkEnd::resume;
      // A walk resumed after JIT frames keeps them; any other starts afresh.
      std::size_t kept = resumed ? result.frames : 0;
      result = UnwindResult{};
      result.jit_unwinding_info = resumed;
      walk.frames = kept;
      int status = -1;
      if (process->dwfl) {
        auto tid = static_cast<pid_t>(sample.tid != 0 ? sample.tid : sample.pid);
        status = dwfl_getthread_frames(process->dwfl, tid, on_frame, &walk);
      }
      context.resume.active = false;
      if (walk.frames == 0) ips[walk.frames++] = context.registers.pc;
      result.frames = walk.frames;
      truncated = walk.truncated;
      // 0: the walk stopped because the last frame has no return address, and not for want of
      // the bytes that would have held it.
      result.complete = status == 0 && !walk.truncated && context.failed_reads == 0;
    }
    if (result.jit_unwinding_info) ++statistics.jit_unwinding_info;
    result.no_module = no_module;
    if (result.complete) ++statistics.complete;
    if (truncated) ++statistics.truncated;
    statistics.frames += result.frames;
  } catch (...) {
    // Only allocation can throw here; the sample goes without a chain.
    result = UnwindResult{};
  }
  return result;
}

}  // namespace perfscope
