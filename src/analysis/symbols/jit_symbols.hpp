// JitSymbols: the names of JIT code, per process, from the jitdump the process mapped (its
// recorded MMAP of jit-PID.dump) or else its /tmp/perf-PID.map; each read from the copy the
// recording carries when it has one (the files on disk may be gone, or a later process's).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/symbols/jit_symbol_map.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/symbols/jitdump.hpp"
#include "perfscope/analysis/symbols/symbol_file_locator.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"

namespace perfscope {

class JitSymbols {
 public:
  using Warn = std::function<void(std::string)>;
  using Missing = std::function<void(const std::string& path, const std::string& problem)>;
  // Takes back a warning and the missing file given with it, where what they said stopped
  // being true (a jitdump announced after the process's code was first looked up).
  using Retract = std::function<void(const std::string& warning, const std::string& path)>;
  // A demangled name as the options show it (short names unless parameter lists are asked for).
  using Display = std::function<std::string_view(std::string_view)>;

  JitSymbols(const SymbolizerOptions& options, const SymbolFileLocator& locator, Warn warn,
             Missing missing, Retract retract, Display display);

  // The recording's carried copies (EmbeddedFile kinds perf-map and jitdump).
  void set_recording_files(const std::vector<EmbeddedFile>& files);
  // Whether sample times can be compared with jitdump timestamps: the recording's clock is
  // CLOCK_MONOTONIC, as the runtimes' is.
  void set_sample_clock_monotonic(bool monotonic) noexcept { monotonic_ = monotonic; }
  // Dumps on disk may still grow (Symbolizer::set_jit_files_growing).
  void set_files_growing(bool growing) noexcept { growing_ = growing; }
  // Process `pid` mapped the jitdump `path` (as recorded).
  void add_jitdump(std::uint32_t pid, std::string_view path);

  // The name of `address` in process `pid` at sample time `time`.
  SymbolizedAddress resolve(std::uint32_t pid, std::uint64_t address, std::uint64_t time,
                            SymbolizerStatistics& statistics);
  // A number that changes whenever the code at `address` of `pid` may have: 0 where names do
  // not depend on time (no jitdump, or no two pieces of code ever covered the address).
  std::uint64_t epoch(std::uint32_t pid, std::uint64_t address, std::uint64_t time);
  // The jitdump code at `address` of `pid` at `time` (its bytes, for annotate), or null.
  const JitCode* code_at(std::uint32_t pid, std::uint64_t address, std::uint64_t time);
  // The jitdump of `pid`, read; null when it has none or it cannot be read.
  const Jitdump* jitdump(std::uint32_t pid);

 private:
  struct Process {
    std::string map_path;   // as the recording's machine had it
    std::string dump_path;  // the jitdump it mapped, if any
    bool loaded = false;
    std::string problem;  // why neither names anything
    std::string warning;  // what load() warned of that problem
    std::optional<Jitdump> dump;
    // A dump read from disk may still be growing (top, set_files_growing): read again after a
    // miss, at most once a second. The dumps read before stay, as names handed out point into
    // them.
    bool dump_on_disk = false;
    std::chrono::steady_clock::time_point dump_checked{};
    std::deque<Jitdump> earlier_dumps;
    std::uint64_t rereads = 0;
    std::vector<std::uint64_t> event_times;  // sorted: when code appeared or moved
    bool time_comparable = false;
    JitSymbolMap map;
    std::deque<std::string> demangled;
    std::unordered_map<std::uint64_t, SymbolizedAddress> cache;  // perf map lookups
  };
  Process& process(std::uint32_t pid);
  void load(Process& process, std::uint32_t pid);
  // Reads the dump the process mapped (dump_path), if any; returns why it could not be read.
  std::string read_dump(Process& process);
  // The dump read again when the file grew since (a runtime still writing it); true when it did.
  bool reread_dump(Process& process);
  void index_dump(Process& process);
  const std::vector<std::byte>* carried(std::string_view kind, std::string_view path) const;
  std::string_view demangled(Process& process, std::string_view name);

  const SymbolizerOptions& options_;
  const SymbolFileLocator& locator_;
  Warn warn_;
  Missing missing_;
  Retract retract_;
  Display display_;
  std::size_t dumps_ = 0;  // processes with a jitdump
  bool monotonic_ = true;
  bool growing_ = false;
  std::vector<EmbeddedFile> files_;
  std::unordered_map<std::uint32_t, std::unique_ptr<Process>> processes_;
};

}  // namespace perfscope
