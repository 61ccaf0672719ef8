// Symbolizer: names addresses in-process, with caches per file and per address and no
// subprocesses. User code through ELF symbol tables (.symtab, .dynsym, the MiniDebugInfo of
// .gnu_debugdata, separate debug files found by build id under the debug root or by
// .gnu_debuglink), the kernel through the kallsyms copy a recording left in the build-id cache
// or /proc/kallsyms, JIT code through the process's jitdump or /tmp/perf-PID.map.
// Source lines and inline frames come from DWARF (libdw) when asked for. Files are read where
// SymbolFileLocator finds them (extracted archives, a symfs, else the recorded path).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/analysis/symbols/elf_image.hpp"
#include "perfscope/analysis/symbols/jitdump.hpp"
#include "perfscope/analysis/symbols/symbol_file_locator.hpp"

namespace perfscope {

struct PerfDataFeatures;

// Kernel symbols (kallsyms) read once for several symbolizers: build_profile's and script's
// workers, which would each read and parse /proc/kallsyms otherwise. Give each the same object
// (SymbolizerOptions::shared_kernel); they must name the kernel of the same recording.
class SharedKernelSymbols;
std::shared_ptr<SharedKernelSymbols> make_shared_kernel_symbols();

struct SymbolizerOptions {
  // Kernel symbols shared with other symbolizers of the same recording; null: its own.
  std::shared_ptr<SharedKernelSymbols> shared_kernel;
  bool demangle = true;  // C++ names through the ABI demangler
  // Demangled names with their parameter lists, return types and clone suffixes
  // ("long ns::f<long>(long) const [clone .isra.0]"); off, the short form perf prints by
  // default ("ns::f<long>").
  bool parameter_lists = true;
  bool source_lines = false;   // file:line of each address (--srcline)
  bool inline_frames = false;  // the inlined calls at each address (--inline)
  std::string debug_root = "/usr/lib/debug";
  std::string kallsyms_path = "/proc/kallsyms";
  // The user named kallsyms_path (perf's --kallsyms): it is read, never a cached copy instead.
  bool kallsyms_path_chosen = false;
  // The recording's kernel: its build id (the BUILD_ID entry of [kernel.kallsyms]) and the
  // address of its reference symbol _text (the pgoff of its kernel MMAP record). With the build
  // id, the copy of kallsyms saved at recording time in the build-id cache is preferred to
  // kallsyms_path when its _text matches; a kallsyms_path whose _text does not match is used
  // with a warning (the recording is of another boot or machine).
  std::vector<std::uint8_t> kernel_build_id;
  std::uint64_t kernel_reference_address = 0;  // 0: unknown
  // perf's -k/--vmlinux: the kernel's symbols from this image (moved to the recording's _text),
  // instead of kallsyms. Empty: perf's own search, unless search_vmlinux is off (perf's
  // --ignore-vmlinux): the vmlinux files perf looks in (/boot/vmlinux-RELEASE,
  // /usr/lib/debug/boot/vmlinux-RELEASE, ...; under the symfs first), used when the image's build
  // id is the recording kernel's.
  std::string vmlinux_path;
  bool search_vmlinux = true;
  // perf's --demangle-kernel: kernel symbols demangled too (Rust and C++ names in the kernel).
  bool demangle_kernel = false;
  std::string build_id_cache_dir;    // empty: $HOME/.debug
  std::string jit_map_dir = "/tmp";  // where perf-PID.map files are looked for
  // Where the recorded files are looked for before their recorded paths: extracted archives
  // (--archive) and a symfs (--symfs).
  SymbolLookupRoots lookup;
};

// A file whose addresses could not be named from it: not found (or unreadable), or only a file
// of another build was found.
struct MissingSymbolFile {
  std::string path;      // as recorded
  std::string build_id;  // the recorded one, lower-case hex; empty when unknown
  std::string reason;    // one of the missing_file_ reasons below
  std::string detail;    // what was tried and what was wrong, one sentence
};

// MissingSymbolFile::reason, as the exports and `archive` print it. The last is the archive's
// alone: a file that neither the recording nor the file itself gives a build id to key it by.
inline constexpr std::string_view missing_file_not_found = "not found";
inline constexpr std::string_view missing_file_build_id_mismatch = "build id mismatch";
inline constexpr std::string_view missing_file_no_build_id = "no build id";

struct SourceLocation {
  std::string_view file;  // empty when unknown
  std::uint32_t line = 0;
};

// A call that the compiler inlined at the address: `function` was inlined, and its code at the
// address comes from `location`.
struct InlinedCall {
  std::string_view function;
  SourceLocation location;
};

// What an address resolves to. The views point into the Symbolizer's caches and stay valid as
// long as it lives.
struct SymbolizedAddress {
  std::string_view symbol;   // the function (demangled when asked); empty when unresolved
  std::uint64_t offset = 0;  // address minus the function's start
  std::uint64_t size = 0;    // the function's size in bytes (to the next symbol when unsized)
  // Its binding, as perf's scripts see it (sym['binding']): STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2;
  // JIT code's symbols are global.
  std::uint8_t binding = 1;
  std::string_view dso;  // the file, "[kernel.kallsyms]", a module "[name]", or the map file
  bool kernel = false;
  // Why `symbol` is empty, one phrase ("kptr_restrict hides kernel addresses", "no symbol
  // table", "file not found"); empty when resolved.
  std::string_view unresolved_reason;
  // The address lies in an ELF file that was read (its symbols and, with source_lines, its line
  // table were asked), whether or not they named it: perf's srcline prints nothing for such an
  // address without a line, and "dso[offset]" only where the file could not be read.
  bool file_read = false;
  // With source_lines: the address's line. With inline_frames as well, the line in `symbol`'s own
  // code (the call site of the outermost inlined call); without, the line-table row, which lies
  // in the inlined function when code was inlined there.
  SourceLocation source;
  std::span<const InlinedCall> inlined;  // with inline_frames: innermost call first
};

// How much work the caches saved and what was loaded.
struct SymbolizerStatistics {
  std::uint64_t lookups = 0;       // resolve_* calls
  std::uint64_t cache_hits = 0;    // answered from the per-address caches
  std::uint64_t files_opened = 0;  // ELF files (and kallsyms, perf-PID.map) loaded
  std::uint64_t symbols_loaded = 0;
  std::uint64_t debug_files = 0;       // separate debug files used
  std::uint64_t mini_debug_infos = 0;  // .gnu_debugdata sections decoded
};

class Symbolizer {
 public:
  explicit Symbolizer(SymbolizerOptions options = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // An address in a file mapped by a process: `file_offset` is the offset in the file the
  // address corresponds to (mapping start + pgoff arithmetic done by the caller);
  // `recorded_build_id`, when not empty, is checked against the file's (a mismatch is warned
  // about once and the file still used).
  SymbolizedAddress resolve_file(std::string_view path, std::uint64_t file_offset,
                                 std::span<const std::uint8_t> recorded_build_id = {});
  // Where in a mapped file resolve_file would name a function that `wanted` accepts (given the
  // name resolve_file gives it): per such symbol, file-offset ranges that hold every offset it
  // names, and perhaps a few more (a symbol nested in it names its own). For a caller that
  // picks functions by name before it reads the addresses (annotate). Only symbols whose raw
  // (mangled) name contains `raw_part` are asked about (empty: every one). None for a file
  // that cannot be read (its addresses name no function). nullopt when the file found is of
  // another build than `recorded_build_id`: resolve_file names its addresses all the same, from
  // other code, and the caller had better resolve them the usual way (annotate refuses them).
  struct FunctionFileRange {
    std::string_view name;      // as resolve_file names it; valid as long as the Symbolizer
    std::uint64_t address = 0;  // the symbol's (virtual) start address
    std::uint64_t first = 0, second = 0;  // file offsets [first, second)
  };
  std::optional<std::vector<FunctionFileRange>> file_ranges_of_functions(
      std::string_view path, std::span<const std::uint8_t> recorded_build_id,
      std::string_view raw_part, const std::function<bool(std::string_view)>& wanted);
  // Where resolve_kernel would read kallsyms from: the recording's copies (tried first, in
  // order), then kallsyms_path. For kallsyms_may_contain on a thread of its own.
  struct KallsymsSources {
    std::vector<std::string> copies;
    std::string path;
  };
  KallsymsSources kallsyms_sources() const;
  // Whether a kernel symbol's name may contain one of `parts`: a search, without parsing, of
  // the texts resolve_kernel would read: the copies, and kallsyms_path unless a copy is surely
  // the one taken (its _text where the recording's kernel had it: `reference_address`, asked
  // for only once the copies are read; 0 when unknown). True when a part is empty; false when
  // no text can be read (resolve_kernel names nothing then either).
  static bool kallsyms_may_contain(const KallsymsSources& sources,
                                   const std::vector<std::string>& parts,
                                   const std::function<std::uint64_t()>& reference_address);
  // A kernel address (kallsyms; module symbols name their module as the dso).
  SymbolizedAddress resolve_kernel(std::uint64_t address);
  // Starts reading kallsyms on a thread of its own, for a caller that will need kernel symbols
  // later and has other work to do meanwhile (formatting /proc/kallsyms costs the kernel about
  // 20 ms); the next resolve_kernel waits for it. Does nothing once they are loaded or loading.
  void prefetch_kernel();
  // For callers that learn of the recording's kernel from its records, before its first kernel
  // address: SymbolizerOptions::kernel_build_id and kernel_reference_address. Ignored once
  // kernel symbols are loading.
  void set_kernel_build_id(std::span<const std::uint8_t> build_id);
  // The files the recording carries (perfscope's embedded files) and the kernel it was made on
  // (OSRELEASE). [vdso] addresses are named from the carried image with the recorded build id,
  // else from perf's build-id cache, else from this process's own vDSO when it is the same (same
  // build id, or same kernel release when no build id was recorded). JIT code is named from the
  // carried copies of perf maps and jitdumps before the files on disk. Before the first lookup.
  void set_recording_files(const PerfDataFeatures& features);
  // The vDSO image [vdso] addresses are named from (as above); nullopt with `error` saying why
  // there is none.
  std::optional<ElfImage> vdso_image(std::span<const std::uint8_t> recorded_build_id,
                                     std::string& error);
  void set_kernel_reference_address(std::uint64_t address) noexcept;
  // An address in anonymous executable memory of process `pid` at sample time `time`: named by
  // the jitdump the process mapped (the code there at that time), else by /tmp/perf-PID.map.
  SymbolizedAddress resolve_jit(std::uint32_t pid, std::uint64_t address, std::uint64_t time = 0);
  // Process `pid` mapped the jitdump `path` (its MMAP record): its JIT code is named from it.
  void add_jitdump(std::uint32_t pid, std::string_view path);
  // Changes whenever the JIT code at `address` of `pid` may have (0 where its name does not
  // depend on time): for callers that cache answers by address.
  std::uint64_t jit_epoch(std::uint32_t pid, std::uint64_t address, std::uint64_t time);
  // The jitdump code at `address` of `pid` at `time`, with its bytes; null when none.
  const JitCode* jit_code_at(std::uint32_t pid, std::uint64_t address, std::uint64_t time);
  // The jitdump of `pid` (add_jitdump), read; null when it has none or it cannot be read.
  const Jitdump* jitdump(std::uint32_t pid);
  // Whether the recording's sample times are CLOCK_MONOTONIC, as jitdump timestamps are (else
  // JIT code is named without regard to time, with a warning). Default true.
  void set_sample_clock_monotonic(bool monotonic);
  // The jitdumps on disk may still grow (top watching running processes): read again after a
  // miss, at most once a second, with jit_epoch changing each time. Default false.
  void set_jit_files_growing(bool growing);

  // What the symbolizer had to warn the user of (build-id mismatches, kptr_restrict, files not
  // found), each once.
  const std::vector<std::string>& warnings() const noexcept;
  // What it did that is worth knowing but wrong with nothing (the debug file or MiniDebugInfo
  // the symbols came from), each once: information, never a warning.
  const std::vector<std::string>& notes() const noexcept;
  // The files that were needed and missing (not found, or of another build), in the order they
  // were first needed: what a profile read elsewhere lacks.
  std::vector<MissingSymbolFile> missing_files() const;
  // Where the files are read (the lookup roots of the options).
  const SymbolFileLocator& file_locator() const noexcept;
  const SymbolizerStatistics& statistics() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace perfscope
