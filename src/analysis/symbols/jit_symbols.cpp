#include "analysis/symbols/jit_symbols.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "analysis/symbols/elf_symbol_table.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

constexpr std::string_view jit_outside_reason = "address outside every symbol";

}  // namespace

JitSymbols::JitSymbols(const SymbolizerOptions& options, const SymbolFileLocator& locator,
                       Warn warn, Missing missing, Retract retract, Display display)
    : options_(options),
      locator_(locator),
      warn_(std::move(warn)),
      missing_(std::move(missing)),
      retract_(std::move(retract)),
      display_(std::move(display)) {}

void JitSymbols::set_recording_files(const std::vector<EmbeddedFile>& files) {
  files_.clear();
  for (const EmbeddedFile& file : files) {
    if (file.kind == perf_map_embedded_kind || file.kind == jitdump_embedded_kind) {
      files_.push_back(file);
    }
  }
}

void JitSymbols::add_jitdump(std::uint32_t pid, std::string_view path) {
  Process& entry = process(pid);
  if (!entry.dump_path.empty()) return;
  entry.dump_path = std::string(path);
  ++dumps_;
  // A lookup in the process's anonymous code before the runtime mapped its dump loaded the
  // entry without it (whether one comes first depends on the recorder's timing): the dump is
  // read now, beside what was read then, whose names stay valid.
  if (!entry.loaded) return;
  read_dump(entry);
  if (entry.dump && !entry.warning.empty()) {
    retract_(entry.warning, entry.map_path);
    entry.warning.clear();
  }
}

const std::vector<std::byte>* JitSymbols::carried(std::string_view kind,
                                                  std::string_view path) const {
  for (const EmbeddedFile& file : files_) {
    if (file.kind == kind && file.name == path) return &file.bytes;
  }
  return nullptr;
}

JitSymbols::Process& JitSymbols::process(std::uint32_t pid) {
  auto& slot = processes_[pid];
  if (!slot) {
    slot = std::make_unique<Process>();
    slot->map_path = fmt::format("{}/perf-{}.map", options_.jit_map_dir, pid);
  }
  return *slot;
}

std::string JitSymbols::read_dump(Process& entry) {
  std::string dump_problem;
  if (!entry.dump_path.empty()) {
    try {
      if (const auto* copy = carried(jitdump_embedded_kind, entry.dump_path)) {
        const auto* begin = reinterpret_cast<const std::uint8_t*>(copy->data());
        entry.dump =
            Jitdump::parse(std::vector<std::uint8_t>(begin, begin + copy->size()), entry.dump_path);
      } else {
        entry.dump = Jitdump::map_file(locator_.jit_file_path(entry.dump_path));
        entry.dump_on_disk = true;
        entry.dump_checked = std::chrono::steady_clock::now();
      }
    } catch (const Error& error) {
      dump_problem =
          error.code().value() == ENOENT
              ? fmt::format("{} cannot be read ({}) and the recording carries no copy",
                            locator_.jit_file_path(entry.dump_path), std::strerror(ENOENT))
              : std::string(error.what());
    }
    if (entry.dump) {
      for (const std::string& warning : entry.dump->warnings()) warn_(warning);
      index_dump(entry);
      entry.time_comparable = monotonic_ && !entry.dump->arch_timestamps();
      if (!entry.time_comparable) {
        warn_(fmt::format(
            "{} is timed by {}, the recording by another clock: its code is named without "
            "regard to when it was loaded (code at a reused address may take a later "
            "function's name); record with -k mono, as perfscope record does by default",
            entry.dump_path,
            entry.dump->arch_timestamps() ? "the CPU's time-stamp counter" : "CLOCK_MONOTONIC"));
      }
    }
  }
  return dump_problem;
}

void JitSymbols::load(Process& entry, std::uint32_t pid) {
  entry.loaded = true;
  std::string dump_problem = read_dump(entry);
  std::optional<std::string> text;
  if (const auto* copy = carried(perf_map_embedded_kind, entry.map_path)) {
    text.emplace(reinterpret_cast<const char*>(copy->data()), copy->size());
  } else {
    text = sys::read_regular_file(locator_.jit_map_path(pid, options_.jit_map_dir));
  }
  if (text) {
    entry.map.parse(*text);
    if (!dump_problem.empty()) {
      warn_(fmt::format("{}; the JIT frames of pid {} are named from its perf map", dump_problem,
                        pid));
    }
  } else if (!entry.dump) {
    entry.problem =
        fmt::format("no perf-{}.map for pid {} ({}: {})", pid, pid,
                    locator_.jit_map_path(pid, options_.jit_map_dir), std::strerror(errno));
    if (!dump_problem.empty()) entry.problem = dump_problem;
    missing_(entry.map_path, entry.problem);
    entry.warning = fmt::format(
        "{}; its JIT frames stay unresolved (record the runtime with perfscope "
        "record --jit, or start it with perf map output, e.g. node "
        "--perf-basic-prof)",
        entry.problem);
    warn_(entry.warning);
  }
}

void JitSymbols::index_dump(Process& entry) {
  entry.event_times.clear();
  for (const JitCode& code : entry.dump->code()) entry.event_times.push_back(code.from);
  std::sort(entry.event_times.begin(), entry.event_times.end());
}

bool JitSymbols::reread_dump(Process& entry) {
  if (!growing_ || !entry.dump_on_disk) return false;
  auto now = std::chrono::steady_clock::now();
  if (now - entry.dump_checked < std::chrono::seconds(1)) return false;
  entry.dump_checked = now;
  std::error_code error;
  std::string path = locator_.jit_file_path(entry.dump_path);
  std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error || size <= entry.dump->size()) return false;
  try {
    Jitdump grown = Jitdump::map_file(path);
    entry.earlier_dumps.push_back(std::move(*entry.dump));
    entry.dump = std::move(grown);
  } catch (const Error&) {
    return false;  // gone meanwhile: the dump read before still names what it named
  }
  index_dump(entry);
  ++entry.rereads;
  return true;
}

std::uint64_t JitSymbols::epoch(std::uint32_t pid, std::uint64_t address, std::uint64_t time) {
  if (dumps_ == 0) return 0;
  auto found = processes_.find(pid);
  if (found == processes_.end() || found->second->dump_path.empty()) return 0;
  Process& entry = *found->second;
  if (!entry.loaded) load(entry, pid);
  if (!entry.dump) return 0;
  // While dumps grow, every JIT answer holds until the next reading (a miss may become a name).
  std::uint64_t reading = growing_ && entry.dump_on_disk ? entry.rereads + 1 : 0;
  if (!entry.time_comparable || !entry.dump->contested(address)) return reading;
  return (reading << 32) + 1 +
         static_cast<std::uint64_t>(
             std::upper_bound(entry.event_times.begin(), entry.event_times.end(), time) -
             entry.event_times.begin());
}

const JitCode* JitSymbols::code_at(std::uint32_t pid, std::uint64_t address, std::uint64_t time) {
  Process& entry = process(pid);
  if (!entry.loaded) load(entry, pid);
  if (!entry.dump) return nullptr;
  return entry.dump->find(address, entry.time_comparable ? time : 0);
}

const Jitdump* JitSymbols::jitdump(std::uint32_t pid) {
  Process& entry = process(pid);
  if (!entry.loaded) load(entry, pid);
  return entry.dump ? &*entry.dump : nullptr;
}

std::string_view JitSymbols::demangled(Process& entry, std::string_view name) {
  if (!options_.demangle || !name.starts_with("_Z")) return name;
  // The names are NUL-free views into one buffer; the demangler wants a C string.
  std::string text = demangle_symbol(std::string(name).c_str());
  if (text.empty()) return name;
  return display_(entry.demangled.emplace_back(std::move(text)));
}

SymbolizedAddress JitSymbols::resolve(std::uint32_t pid, std::uint64_t address, std::uint64_t time,
                                      SymbolizerStatistics& statistics) {
  ++statistics.lookups;
  Process& entry = process(pid);
  if (!entry.loaded) {
    load(entry, pid);
    if (entry.dump || !entry.map.empty()) ++statistics.files_opened;
    statistics.symbols_loaded += entry.map.size() + (entry.dump ? entry.dump->code().size() : 0);
  }
  if (entry.dump) {
    const JitCode* code = entry.dump->find(address, entry.time_comparable ? time : 0);
    if (!code && reread_dump(entry)) {
      code = entry.dump->find(address, entry.time_comparable ? time : 0);
    }
    if (code) {
      SymbolizedAddress result;
      result.dso = entry.dump_path;
      result.symbol = demangled(entry, code->name);
      result.offset = address - code->start;
      result.size = code->size;
      if (const JitLine* line = code->line_of(address)) result.source = {line->file, line->line};
      return result;
    }
  }
  auto found = entry.cache.find(address);
  if (found != entry.cache.end()) {
    ++statistics.cache_hits;
    return found->second;
  }
  SymbolizedAddress& result = entry.cache[address];
  result.dso = entry.dump && entry.map.empty() ? std::string_view(entry.dump_path)
                                               : std::string_view(entry.map_path);
  JitSymbolMap::Hit hit;
  if (!entry.problem.empty()) {
    result.unresolved_reason = entry.problem;
  } else if (entry.map.find(address, hit)) {
    result.symbol = demangled(entry, hit.name);
    result.offset = address - hit.start;
    result.size = hit.end - hit.start;
  } else {
    result.unresolved_reason = jit_outside_reason;
  }
  return result;
}

}  // namespace perfscope
