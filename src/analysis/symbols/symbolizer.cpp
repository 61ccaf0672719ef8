#include "perfscope/analysis/symbols/symbolizer.hpp"

#include <elf.h>
#include <fmt/format.h>
#include <gelf.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "analysis/symbols/debug_file_locator.hpp"
#include "analysis/symbols/dwarf_source_lines.hpp"
#include "analysis/symbols/elf_symbol_table.hpp"
#include "analysis/symbols/jit_symbols.hpp"
#include "analysis/symbols/kernel_symbol_loading.hpp"
#include "analysis/symbols/kernel_symbols.hpp"
#include "analysis/symbols/mini_debug_info.hpp"
#include "analysis/symbols/short_function_name.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/elf_image.hpp"
#include "perfscope/analysis/symbols/kallsyms_cache.hpp"
#include "perfscope/analysis/symbols/vdso_image.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "perfscope/sys/memory_map.hpp"

namespace perfscope {

namespace {

constexpr std::string_view stripped_reason =
    "no symbol table (stripped; install the -dbgsym package or point --debug-root at debug "
    "files)";
constexpr std::string_view only_dynamic_reason =
    "address outside every exported symbol (no .symtab: stripped; install the -dbgsym package "
    "or point --debug-root at debug files)";
constexpr std::string_view outside_reason = "address outside every symbol";
constexpr std::string_view no_segment_reason = "offset outside every loadable segment of the file";

struct PathHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view path) const noexcept {
    return std::hash<std::string_view>{}(path);
  }
};

struct CachedAddress {
  SymbolizedAddress result;
  std::vector<InlinedCall> inlined;  // backs result.inlined
};

struct FileSymbols {
  std::string path;                             // as recorded: the name results carry
  std::string read_path;                        // where it was read (SymbolFileLocator)
  std::vector<std::uint8_t> recorded_build_id;  // the first one asked with
  std::string problem;  // why none of its addresses resolve; empty when its symbols loaded
  std::vector<ElfImage::Segment> segments;
  std::vector<std::uint8_t> build_id;
  ElfSymbolTable symbols;
  bool has_symtab = false;  // more than the exported symbols of .dynsym
  bool stripped = false;    // no symbol table at all (PLT stubs are named all the same)
  std::string debug_path;   // the separate debug file, when one was found
  bool debug_searched = false;
  std::unique_ptr<DwarfSourceLines> dwarf;
  bool dwarf_tried = false;
  bool build_id_warned = false;
  std::unordered_map<std::uint64_t, CachedAddress> cache;

  // Through the main file's PT_LOAD headers: its debug file and MiniDebugInfo name the same
  // virtual addresses.
  std::optional<std::uint64_t> address_of_offset(std::uint64_t offset) const noexcept {
    for (const auto& segment : segments) {
      if (offset >= segment.offset && offset - segment.offset < segment.size) {
        return segment.address + (offset - segment.offset);
      }
    }
    // Past a segment's file part, in its .bss (an object right at .data's end, a page fault's
    // address in zero-filled data): the mapping's page holds it.
    for (const auto& segment : segments) {
      if (offset >= segment.offset && offset - segment.offset < segment.memory_size) {
        return segment.address + (offset - segment.offset);
      }
    }
    return std::nullopt;
  }
};

using detail::KernelSource;
using detail::KernelState;
using detail::LoadedKernel;

std::optional<ElfImage> elf_of(std::span<const std::byte> bytes) {
  const auto* begin = reinterpret_cast<const unsigned char*>(bytes.data());
  return ElfImage::from_bytes(std::vector<unsigned char>(begin, begin + bytes.size()));
}

}  // namespace

struct Symbolizer::State {
  SymbolizerOptions options;
  SymbolFileLocator locator;
  std::vector<MissingSymbolFile> missing;
  std::unordered_map<std::string, std::unique_ptr<FileSymbols>, PathHash, std::equal_to<>> files;
  FileSymbols* last_file = nullptr;
  KernelState kernel;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;
  SymbolizerStatistics statistics;
  // Names made here (short PLT names, demangled kernel names); node-based: views into it stay
  // valid.
  std::unordered_set<std::string> short_plt_names;

  // The recording's vDSO (Symbolizer::set_recording_files).
  std::vector<EmbeddedFile> vdso_images;
  std::optional<std::string> recording_os_release;
  std::unique_ptr<JitSymbols> jit;  // made at the first JIT question

  JitSymbols& jit_symbols() {
    if (!jit) {
      jit = std::make_unique<JitSymbols>(
          options, locator, [this](std::string text) { warn(std::move(text)); },
          [this](const std::string& path, const std::string& problem) {
            add_missing(path, {}, missing_file_not_found, problem);
          },
          [this](const std::string& warning, const std::string& path) {
            std::erase(warnings, warning);
            std::erase_if(missing,
                          [&](const MissingSymbolFile& file) { return file.path == path; });
          },
          [this](std::string_view name) { return display_name(name); });
    }
    return *jit;
  }

  void warn(std::string text) { warnings.push_back(std::move(text)); }
  void note(std::string text) { notes.push_back(std::move(text)); }

  // The image to name [vdso] addresses from; nullopt with `error` saying why there is none.
  std::optional<ElfImage> vdso(std::span<const std::uint8_t> recorded_id, std::string& error) {
    auto matches = [&](std::span<const std::uint8_t> id) {
      return recorded_id.empty() ||
             std::equal(id.begin(), id.end(), recorded_id.begin(), recorded_id.end());
    };
    for (const EmbeddedFile& carried : vdso_images) {
      if (matches(carried.build_id)) return elf_of(carried.bytes);
    }
    std::string hex = recorded_id.empty() ? std::string() : build_id_hex(recorded_id);
    if (!recorded_id.empty()) {
      // perf record keeps the vDSO in its build-id cache: [vdso]/<id>/vdso.
      std::vector<std::string> roots = locator.roots().build_id_dirs;
      roots.push_back(options.build_id_cache_dir.empty() ? default_build_id_cache_dir()
                                                         : options.build_id_cache_dir);
      for (const std::string& root : roots) {
        std::string ignored;
        if (auto cached = ElfImage::open(fmt::format("{}/[vdso]/{}/vdso", root, hex), ignored)) {
          return cached;
        }
      }
    }
    std::vector<std::byte> own = this_process_vdso_image();
    if (own.empty()) {
      error = "the recording carries no vDSO image and this process has none to stand in";
      return std::nullopt;
    }
    std::vector<std::uint8_t> own_id = elf_image_build_id(own);
    if (!recorded_id.empty() && !matches(own_id)) {
      error = fmt::format(
          "the recording's vDSO (build id {}) is neither in the recording nor in perf's build-id "
          "cache, and this kernel's vDSO is another build ({})",
          hex, own_id.empty() ? std::string("no build id") : build_id_hex(own_id));
      return std::nullopt;
    }
    if (recorded_id.empty() && recording_os_release) {
      struct utsname names {};
      if (::uname(&names) == 0 && *recording_os_release != names.release) {
        error = fmt::format(
            "the recording carries no vDSO image and was made on kernel {}, this is {}: this "
            "kernel's vDSO would name its addresses wrongly",
            *recording_os_release, names.release);
        return std::nullopt;
      }
    }
    return elf_of(own);
  }

  void add_missing(std::string_view path, std::span<const std::uint8_t> build_id,
                   std::string_view reason, std::string detail) {
    missing.push_back(MissingSymbolFile{std::string(path),
                                        build_id.empty() ? "" : build_id_hex(build_id),
                                        std::string(reason), std::move(detail)});
  }

  FileSymbols& file(std::string_view path, std::span<const std::uint8_t> build_id) {
    if (last_file && last_file->path == path) return *last_file;
    auto found = files.find(path);
    if (found == files.end()) {
      auto loaded = std::make_unique<FileSymbols>();
      loaded->path = std::string(path);
      loaded->recorded_build_id.assign(build_id.begin(), build_id.end());
      load(*loaded);
      std::string key(path);
      found = files.emplace(std::move(key), std::move(loaded)).first;
    }
    last_file = found->second.get();
    return *last_file;
  }

  // Whether a symbol name of the file at `path` may contain `part`: the bytes of the string
  // tables load() would build its table from, searched without building it (libc's table, from
  // its debug file, takes milliseconds to build). nullopt where that cannot be told so: the
  // file is loaded already, is the vDSO, is not found or of another build (load says why), or
  // has no symbols but its MiniDebugInfo's (compressed).
  std::optional<bool> names_may_contain(std::string_view path,
                                        std::span<const std::uint8_t> build_id,
                                        std::string_view part) {
    if (part.empty() || path == vdso_mapping_name || files.find(path) != files.end()) {
      return std::nullopt;
    }
    LocatedFile where = locator.locate(path, build_id);
    std::string error;
    std::optional<ElfImage> image =
        where.rejected.empty() ? ElfImage::open(where.path, error) : std::nullopt;
    if (!image || (!build_id.empty() && !same_build_id(build_id, image->build_id()))) {
      return std::nullopt;
    }
    auto strings_hold = [part](const ElfImage& elf, std::uint32_t type) -> std::optional<bool> {
      Elf_Scn* table = elf.section_of_type(type);
      GElf_Shdr header;
      if (!table || !gelf_getshdr(table, &header)) return std::nullopt;
      std::span<const std::byte> strings = elf.section_bytes(elf_getscn(elf.elf(), header.sh_link));
      return ::memmem(strings.data(), strings.size(), part.data(), part.size()) != nullptr;
    };
    std::optional<bool> full = strings_hold(*image, SHT_SYMTAB);
    if (!full) {
      FileSymbols probe;
      probe.path = std::string(path);
      probe.read_path = where.path;
      probe.build_id.assign(image->build_id().begin(), image->build_id().end());
      search_debug_file(probe, *image);
      std::optional<ElfImage> debug =
          probe.debug_path.empty() ? std::nullopt : ElfImage::open(probe.debug_path, error);
      if (debug) full = strings_hold(*debug, SHT_SYMTAB);
      if (!full) return std::nullopt;
    }
    // .dynsym's names also name the PLT stubs (NAME@plt).
    return *full || strings_hold(*image, SHT_DYNSYM).value_or(false);
  }

  void load(FileSymbols& file) {
    std::string error;
    std::optional<ElfImage> image;
    file.read_path = file.path;
    std::vector<std::string> rejected;
    if (file.path == vdso_mapping_name) {
      image = vdso(file.recorded_build_id, error);
    } else {
      LocatedFile where = locator.locate(file.path, file.recorded_build_id);
      rejected = std::move(where.rejected);
      for (const std::string& text : rejected) warn(text);
      file.read_path = std::move(where.path);
      image = ElfImage::open(file.read_path, error);
      if (!where.from_root) from_build_id_cache(file, image);
    }
    if (!image) {
      file.problem = std::move(error);
      warn(fmt::format("{}; its addresses stay unresolved", file.problem));
      if (rejected.empty()) {
        add_missing(file.path, file.recorded_build_id, missing_file_not_found, file.problem);
      } else {
        add_missing(file.path, file.recorded_build_id, missing_file_build_id_mismatch,
                    rejected.front());
      }
      return;
    }
    ++statistics.files_opened;
    file.symbols.set_demangled_form(demangled_form());
    file.segments = image->segments();
    auto id = image->build_id();
    file.build_id.assign(id.begin(), id.end());
    file.has_symtab = file.symbols.add(*image, SHT_SYMTAB) > 0;
    if (!file.has_symtab) load_debug_symbols(file, *image);
    std::size_t symbols = file.symbols.size() + file.symbols.add(*image, SHT_DYNSYM);
    file.stripped = symbols == 0;  // PLT stubs alone name no code of the file's own
    file.symbols.add_plt(*image);
    file.symbols.finish();
    statistics.symbols_loaded += file.symbols.size();
    if (file.stripped) {
      warn(fmt::format(
          "{} has no symbol table (stripped): install its -dbgsym (Debian, Ubuntu) "
          "or -debuginfo (Fedora) package, or point --debug-root at a directory "
          "with its debug file{}",
          file.path,
          file.build_id.empty()
              ? std::string()
              : fmt::format(" (.build-id/{}/{}.debug)", build_id_hex(file.build_id).substr(0, 2),
                            build_id_hex(file.build_id).substr(2))));
    }
  }

  // A recorded file that is gone or was rebuilt since: its copy in perf's build-id cache
  // (~/.debug/<path>/<build id>/elf, as perf buildid-cache --add and perf record keep them),
  // found by the recorded build id, as perf report finds it.
  void from_build_id_cache(FileSymbols& file, std::optional<ElfImage>& image) {
    if (file.recorded_build_id.empty()) return;
    if (image && same_build_id(file.recorded_build_id, image->build_id())) return;
    SymbolLookupRoots cache;
    cache.build_id_dirs.push_back(options.build_id_cache_dir.empty() ? default_build_id_cache_dir()
                                                                     : options.build_id_cache_dir);
    LocatedFile cached =
        SymbolFileLocator(std::move(cache)).locate(file.path, file.recorded_build_id);
    if (!cached.from_root) return;
    std::string error;
    std::optional<ElfImage> copy = ElfImage::open(cached.path, error);
    if (!copy) return;
    note(fmt::format("symbols of {} from perf's build-id cache: {}", file.path, cached.path));
    image = std::move(copy);
    file.read_path = std::move(cached.path);
  }

  // For a file without .symtab: its separate debug file, else its MiniDebugInfo, merged with
  // its .dynsym as gdb does.
  void load_debug_symbols(FileSymbols& file, const ElfImage& image) {
    search_debug_file(file, image);
    if (!file.debug_path.empty()) {
      std::string error;
      auto debug = ElfImage::open(file.debug_path, error);
      if (debug && file.symbols.add(*debug, SHT_SYMTAB) > 0) {
        file.has_symtab = true;
        ++statistics.debug_files;
        note(fmt::format("symbols of {} from its debug file {}", file.path, file.debug_path));
        return;
      }
    }
    std::string error;
    auto mini = open_mini_debug_info(image, error);
    if (mini && file.symbols.add(*mini, SHT_SYMTAB) > 0) {
      file.has_symtab = true;
      ++statistics.mini_debug_infos;
      note(fmt::format("symbols of {} from its MiniDebugInfo (.gnu_debugdata)", file.path));
    } else if (!error.empty()) {
      warn(fmt::format("cannot read the MiniDebugInfo of {}: {}", file.path, error));
    }
  }

  void search_debug_file(FileSymbols& file, const ElfImage& image) {
    if (file.debug_searched) return;
    file.debug_searched = true;
    if (auto archived = locator.locate_debug(file.path, file.build_id)) {
      file.debug_path = std::move(*archived);
      return;
    }
    for (const std::string& root : locator.debug_roots(options.debug_root)) {
      auto search = find_debug_file(image, file.read_path, root);
      for (auto& rejected : search.rejected) warn(std::move(rejected));
      if (search.path) {
        file.debug_path = std::move(*search.path);
        return;
      }
    }
  }

  DwarfSourceLines* dwarf(FileSymbols& file) {
    if (file.dwarf_tried) return file.dwarf.get();
    file.dwarf_tried = true;
    std::string error;
    auto image = ElfImage::open(file.read_path, error);
    if (!image) return nullptr;
    if (!file.debug_searched) search_debug_file(file, *image);
    file.dwarf = DwarfSourceLines::open(std::move(*image));
    if (!file.dwarf && !file.debug_path.empty()) {
      auto debug = ElfImage::open(file.debug_path, error);
      if (debug) file.dwarf = DwarfSourceLines::open(std::move(*debug));
    }
    if (file.dwarf) file.dwarf->set_demangled_form(demangled_form());
    if (!file.dwarf) {
      warn(
          fmt::format("no DWARF for {}: source lines and inline frames need its debug info "
                      "(build with -g, or install its -dbgsym package)",
                      file.path));
    }
    return file.dwarf.get();
  }

  void check_build_id(FileSymbols& file, std::span<const std::uint8_t> recorded) {
    if (file.build_id_warned || !file.problem.empty()) return;
    if (same_build_id(recorded, file.build_id)) return;
    file.build_id_warned = true;
    std::string text = fmt::format(
        "build id mismatch for {}: recorded {}, the file has {}; it changed since the "
        "recording and its symbols may be wrong",
        file.path, build_id_hex(recorded),
        file.build_id.empty() ? std::string("none") : build_id_hex(file.build_id));
    add_missing(file.path, recorded, missing_file_build_id_mismatch, text);
    warn(std::move(text));
  }

  void resolve_uncached(FileSymbols& file, std::uint64_t file_offset, CachedAddress& cached) {
    SymbolizedAddress& result = cached.result;
    result.dso = file.path;
    if (!file.problem.empty()) {
      result.unresolved_reason = file.problem;
      return;
    }
    result.file_read = true;
    auto address = file.address_of_offset(file_offset);
    if (!address) {
      result.unresolved_reason = no_segment_reason;
      return;
    }
    std::uint32_t index = file.symbols.find(*address);
    if (index == ElfSymbolTable::not_found) {
      result.unresolved_reason = file.stripped     ? stripped_reason
                                 : file.has_symtab ? outside_reason
                                                   : only_dynamic_reason;
    } else {
      result.symbol = shown_name(file.symbols.name(index, options.demangle));
      result.offset = *address - file.symbols.start(index);
      result.size = file.symbols.end(index) - file.symbols.start(index);
      result.binding = file.symbols.binding(index);
    }
    if (!options.source_lines && !options.inline_frames) return;
    DwarfSourceLines* lines = dwarf(file);
    if (!lines) return;
    if (options.inline_frames) {
      result.source = lines->inlined_calls(*address, options.demangle, cached.inlined);
      for (InlinedCall& call : cached.inlined) call.function = shown_name(call.function);
      // A function inlined into itself (recursion GCC unrolled: fib in fib in fib) is the real
      // frame, as perf shows it: the outermost calls that name the function itself go, and the
      // real frame's line is the innermost of them's.
      while (!cached.inlined.empty() && !result.symbol.empty() &&
             cached.inlined.back().function == result.symbol) {
        result.source = cached.inlined.back().location;
        cached.inlined.pop_back();
      }
      result.inlined = cached.inlined;
    } else {
      result.source = lines->line(*address);
    }
  }

  // Symbol tables and DWARF demangle in perf's short form, or in the full one under -v
  // (parameter_lists).
  DemangledForm demangled_form() const noexcept {
    return options.parameter_lists ? DemangledForm::full : DemangledForm::short_name;
  }

  // A name from a symbol table or DWARF, demangled in demangled_form() already. The full names
  // (perf's -v) keep the symbol version ("__libc_start_main@@GLIBC_2.34").
  std::string_view shown_name(std::string_view name) const noexcept {
    return options.parameter_lists ? name : without_symbol_version(name);
  }

  // A name from elsewhere (JIT maps and dumps), demangled in full or not mangled at all, as the
  // options want it shown (views into the caches either way): shortened by the short-name rule. A
  // PLT stub's short name is its target's, then "@plt": kept once, the one form not inside the
  // demangled name.
  std::string_view display_name(std::string_view name) {
    // The full names (perf's -v) keep the symbol version ("__libc_start_main@@GLIBC_2.34").
    if (!options.parameter_lists) name = without_symbol_version(name);
    if (!options.demangle || options.parameter_lists) return name;
    constexpr std::string_view plt_suffix = "@plt";
    if (!name.ends_with(plt_suffix)) return short_function_name(name);
    std::string_view target = name.substr(0, name.size() - plt_suffix.size());
    std::string_view shorter = short_function_name(target);
    if (shorter.size() == target.size()) return name;
    return *short_plt_names.insert(fmt::format("{}{}", shorter, plt_suffix)).first;
  }

  KernelSource kernel_source() const {
    KernelSource source;
    source.kallsyms_path = options.kallsyms_path;
    source.cache_dir = options.build_id_cache_dir;
    source.reference_address = options.kernel_reference_address;
    // A chosen kallsyms_path is read as it is (perf reads --kallsyms before any vmlinux): no
    // build id, so no cached copy and no vmlinux instead of it.
    if (options.kallsyms_path_chosen) return source;
    source.archived_copies = locator.kallsyms_candidates(options.kernel_build_id);
    source.build_id = options.kernel_build_id;
    source.vmlinux_path = options.vmlinux_path;
    source.search_vmlinux = options.search_vmlinux;
    source.symfs = options.lookup.symfs;
    if (recording_os_release) {
      source.release = *recording_os_release;
    } else if (struct utsname names{}; ::uname(&names) == 0) {
      source.release = names.release;
    }
    return source;
  }

  void load_kernel() {
    kernel.loaded = true;
    if (kernel.loader.joinable()) {
      kernel.loader.join();
    } else {
      kernel.load(kernel_source());
    }
    const LoadedKernel& loaded = *kernel.data;
    if (loaded.read) {
      ++statistics.files_opened;
      statistics.symbols_loaded += loaded.symbols.size();
    }
    if (!loaded.problem.empty()) {
      warn(fmt::format("{}; kernel frames stay unresolved", loaded.problem));
      add_missing(kernel_dso_name, options.kernel_build_id, missing_file_not_found, loaded.problem);
    }
    if (!loaded.note.empty()) warn(loaded.note);
  }
};

Symbolizer::Symbolizer(SymbolizerOptions options) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
  state_->locator = SymbolFileLocator(state_->options.lookup);
  state_->kernel.shared = state_->options.shared_kernel;
}

Symbolizer::~Symbolizer() = default;

SymbolizedAddress Symbolizer::resolve_file(std::string_view path, std::uint64_t file_offset,
                                           std::span<const std::uint8_t> recorded_build_id) {
  State& state = *state_;
  ++state.statistics.lookups;
  FileSymbols& file = state.file(path, recorded_build_id);
  if (!recorded_build_id.empty()) state.check_build_id(file, recorded_build_id);
  auto found = file.cache.find(file_offset);
  if (found != file.cache.end()) {
    ++state.statistics.cache_hits;
    return found->second.result;
  }
  CachedAddress& cached = file.cache[file_offset];
  state.resolve_uncached(file, file_offset, cached);
  return cached.result;
}

std::optional<std::vector<Symbolizer::FunctionFileRange>> Symbolizer::file_ranges_of_functions(
    std::string_view path, std::span<const std::uint8_t> recorded_build_id,
    std::string_view raw_part, const std::function<bool(std::string_view)>& wanted) {
  State& state = *state_;
  if (state.names_may_contain(path, recorded_build_id, raw_part) == false) {
    return std::vector<FunctionFileRange>{};
  }
  FileSymbols& file = state.file(path, recorded_build_id);
  bool other_build =
      !recorded_build_id.empty() &&
      (file.problem.empty() ? !same_build_id(recorded_build_id, file.build_id)
                            : std::any_of(state.missing.begin(), state.missing.end(),
                                          [&](const MissingSymbolFile& missing) {
                                            return missing.path == path &&
                                                   missing.reason == missing_file_build_id_mismatch;
                                          }));
  if (other_build) return std::nullopt;
  std::vector<FunctionFileRange> ranges;  // none where the file cannot be read
  for (std::uint32_t i = 0; i < file.symbols.size(); ++i) {
    if (!raw_part.empty() && file.symbols.name(i, false).find(raw_part) == std::string_view::npos) {
      continue;
    }
    std::string_view name = state.shown_name(file.symbols.name(i, state.options.demangle));
    if (!wanted(name)) continue;
    // find() names an address by a symbol only inside the symbol's extent; resolve_file finds
    // the address of an offset through the first segment that holds it, so every segment
    // that maps part of the extent contributes its offsets.
    std::uint64_t start = file.symbols.start(i), end = file.symbols.end(i);
    for (const ElfImage::Segment& segment : file.segments) {
      std::uint64_t from = std::max(start, segment.address);
      std::uint64_t to = std::min(end, segment.address + segment.size);
      if (from < to) {
        ranges.push_back({name, start, segment.offset + (from - segment.address),
                          segment.offset + (to - segment.address)});
      }
    }
  }
  return ranges;
}

namespace {

// The address of the _text line of a kallsyms text ("ffffffff81000000 T _text"); 0 when none.
std::uint64_t text_symbol_address(std::string_view kallsyms) {
  constexpr std::string_view line_end = " _text\n";
  std::size_t found = kallsyms.find(line_end);
  if (found == std::string_view::npos) return 0;
  std::size_t line = kallsyms.rfind('\n', found);
  line = line == std::string_view::npos ? 0 : line + 1;
  std::uint64_t address = 0;
  for (std::size_t i = line; i < found && kallsyms[i] != ' '; ++i) {
    char c = kallsyms[i];
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return 0;
    address = address << 4 | static_cast<std::uint64_t>(digit);
  }
  return address;
}

}  // namespace

Symbolizer::KallsymsSources Symbolizer::kallsyms_sources() const {
  KernelSource source = state_->kernel_source();
  KallsymsSources sources{std::move(source.archived_copies), source.kallsyms_path};
  if (!source.build_id.empty()) {
    sources.copies.push_back(
        kallsyms_cache_path(KernelState::cache_dir_of(source), source.build_id));
  }
  return sources;
}

bool Symbolizer::kallsyms_may_contain(const KallsymsSources& sources,
                                      const std::vector<std::string>& parts,
                                      const std::function<std::uint64_t()>& reference_address) {
  if (parts.empty() || std::any_of(parts.begin(), parts.end(),
                                   [](const std::string& part) { return part.empty(); })) {
    return true;
  }
  auto holds_a_part = [&](std::string_view text) {
    return std::any_of(parts.begin(), parts.end(), [&](const std::string& part) {
      return ::memmem(text.data(), text.size(), part.data(), part.size()) != nullptr;
    });
  };
  std::vector<std::uint64_t> text_addresses;
  for (const std::string& path : sources.copies) {
    // A copy is searched where the page cache holds it: 5 MB read into the heap cost more than
    // the search.
    sys::MemoryMap copy;
    if (path.empty() || copy.map_file(path.c_str()) != 0) continue;
    std::string_view text(static_cast<const char*>(copy.data()), copy.size());
    if (holds_a_part(text)) return true;
    text_addresses.push_back(text_symbol_address(text));
  }
  // KernelState::read_cached_copy takes a copy (and reads nothing else) when its _text is where
  // the recording's was: surely so when the lines say it.
  if (!text_addresses.empty()) {
    std::uint64_t reference = reference_address();
    for (std::uint64_t address : text_addresses) {
      if (address != 0 && (reference == 0 || address == reference)) return false;
    }
  }
  auto text = sys::read_text_file(sources.path);
  return text && holds_a_part(*text);
}

void Symbolizer::prefetch_kernel() {
  KernelState& kernel = state_->kernel;
  if (kernel.loaded || kernel.loader.joinable()) return;
  try {
    kernel.loader =
        std::thread([&kernel, source = state_->kernel_source()] { kernel.load(source); });
  } catch (const std::system_error&) {
    // No thread to spare: resolve_kernel reads the file itself when it needs it.
  }
}

void Symbolizer::set_kernel_build_id(std::span<const std::uint8_t> build_id) {
  if (state_->kernel.loaded || state_->kernel.loader.joinable()) return;
  state_->options.kernel_build_id.assign(build_id.begin(), build_id.end());
}

void Symbolizer::set_recording_files(const PerfDataFeatures& features) {
  state_->vdso_images.clear();
  for (const EmbeddedFile& file : features.embedded_files) {
    if (file.kind == vdso_embedded_kind) state_->vdso_images.push_back(file);
  }
  state_->recording_os_release = features.osrelease;
  state_->jit_symbols().set_recording_files(features.embedded_files);
}

std::optional<ElfImage> Symbolizer::vdso_image(std::span<const std::uint8_t> recorded_build_id,
                                               std::string& error) {
  return state_->vdso(recorded_build_id, error);
}

void Symbolizer::set_kernel_reference_address(std::uint64_t address) noexcept {
  if (state_->kernel.loaded || state_->kernel.loader.joinable()) return;
  state_->options.kernel_reference_address = address;
}

SymbolizedAddress Symbolizer::resolve_kernel(std::uint64_t address) {
  State& state = *state_;
  ++state.statistics.lookups;
  if (!state.kernel.loaded) state.load_kernel();
  auto found = state.kernel.cache.find(address);
  if (found != state.kernel.cache.end()) {
    ++state.statistics.cache_hits;
    return found->second;
  }
  SymbolizedAddress& result = state.kernel.cache[address];
  result.kernel = true;
  result.dso = kernel_dso_name;
  KernelSymbols::Hit hit;
  const LoadedKernel& kernel = *state.kernel.data;
  if (!kernel.problem.empty()) {
    result.unresolved_reason = kernel.problem;
  } else if (kernel.symbols.find(address, hit)) {
    result.symbol = hit.name;
    if (state.options.demangle_kernel && looks_mangled(hit.name)) {
      std::string demangled =
          demangle_symbol(std::string(hit.name).c_str(), state.demangled_form());
      if (!demangled.empty())
        result.symbol = *state.short_plt_names.insert(std::move(demangled)).first;
    }
    result.dso = hit.dso;
    result.offset = address - hit.start;
    result.size = hit.end - hit.start;
    result.binding = hit.binding;
  } else {
    result.unresolved_reason = outside_reason;
  }
  return result;
}

SymbolizedAddress Symbolizer::resolve_jit(std::uint32_t pid, std::uint64_t address,
                                          std::uint64_t time) {
  return state_->jit_symbols().resolve(pid, address, time, state_->statistics);
}

void Symbolizer::add_jitdump(std::uint32_t pid, std::string_view path) {
  state_->jit_symbols().add_jitdump(pid, path);
}

std::uint64_t Symbolizer::jit_epoch(std::uint32_t pid, std::uint64_t address, std::uint64_t time) {
  return state_->jit ? state_->jit->epoch(pid, address, time) : 0;
}

const JitCode* Symbolizer::jit_code_at(std::uint32_t pid, std::uint64_t address,
                                       std::uint64_t time) {
  return state_->jit_symbols().code_at(pid, address, time);
}

const Jitdump* Symbolizer::jitdump(std::uint32_t pid) { return state_->jit_symbols().jitdump(pid); }

void Symbolizer::set_jit_files_growing(bool growing) {
  state_->jit_symbols().set_files_growing(growing);
}

void Symbolizer::set_sample_clock_monotonic(bool monotonic) {
  state_->jit_symbols().set_sample_clock_monotonic(monotonic);
}

const std::vector<std::string>& Symbolizer::warnings() const noexcept { return state_->warnings; }
const std::vector<std::string>& Symbolizer::notes() const noexcept { return state_->notes; }

const SymbolizerStatistics& Symbolizer::statistics() const noexcept { return state_->statistics; }

std::vector<MissingSymbolFile> Symbolizer::missing_files() const { return state_->missing; }

const SymbolFileLocator& Symbolizer::file_locator() const noexcept { return state_->locator; }

}  // namespace perfscope
