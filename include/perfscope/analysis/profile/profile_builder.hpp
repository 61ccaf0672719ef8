// ProfileBuilder: records in, a Profile out. It resolves each sample's stack (the call chain's
// context markers, DWARF unwinding of recorded stacks, symbols) and aggregates; `report`, every
// exporter's input and the embedded Profiler are built by it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/event_switch.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/sample_selection.hpp"
#include "perfscope/analysis/profile/profile.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

// Which samples go into the profile; empty lists match everything.
struct ProfileFilter {
  std::vector<std::string> comms;
  std::vector<std::uint32_t> pids, tids;
  std::vector<std::string> dsos;     // of the sampled (leaf) frame: full path or file name
  std::vector<std::string> symbols;  // of the sampled (leaf) frame
  // perf's --symbol-filter: the sampled (leaf) function's name contains this text.
  std::string symbol_part;
  std::optional<std::uint32_t> event;  // index into the recording's events
  // Samples taken in [from, to) ns; an off-CPU sample when any of its interval is.
  std::uint64_t from = 0, to = ~std::uint64_t{0};
  // perf's --time ranges (both ends included), with the same rule for off-CPU intervals.
  TimeRanges times;
  std::vector<bool> cpus;  // perf's --cpu, by CPU number; empty: every CPU
  // perf's --switch-on/--switch-off: left out of the totals too, as --time.
  EventSwitchWindows switches;
  // perf's --hide-unresolved: only samples whose leaf frame has a symbol (the others are left
  // out entirely, totals included, as perf leaves them out).
  bool resolved_only = false;
  // Whether a sample passes by its leaf frame's function (what must be symbolized first).
  bool by_leaf_function() const noexcept {
    return !dsos.empty() || !symbols.empty() || !symbol_part.empty() || resolved_only;
  }
};

struct ProfileOptions {
  SymbolizerOptions symbols;
  bool callchains = true;  // keep call chains (else every stack is its leaf alone)
  // Every sample in Profile::samples (the exporters want their times); false folds them into
  // Profile::sample_groups instead, all a report table needs, in a fraction of the memory.
  bool keep_samples = true;
  // With keep_samples false: Profile::timeline keeps each sample's group, time and period, 8 to
  // 12 bytes a sample beside the groups (what time ranges need: perfscope view).
  bool keep_sample_times = false;
  ProfileFilter filter;
  // One function per symbol (its file and start address), as perf keeps one row per symbol:
  // two overloads that print the same short name, or two JIT compilations of one function, stay
  // apart. True merges the functions that print the same name in the same file (report
  // --group-by-name).
  bool group_functions_by_name = false;
  // perf report --max-stack: the sample's ip and at most max_stack - 1 callers of each chain;
  // 0 keeps whole chains.
  std::uint32_t max_stack = 0;
  // build_profile's threads (--threads): 0 the CPUs the process may use where the recording is
  // large enough to gain (analysis_threads), 1 the calling thread alone. The profile is the
  // same whatever the number.
  std::size_t threads = 0;
};

struct ProfilePart;  // profile_parts.hpp: build_profile's workers' partial profiles

// Builds a Profile from records fed one at a time, in time order: the recording's events first
// (add_event), then every record. `perfscope report` feeds it a PerfDataReader; the in-process
// profiler feeds it the records of a live SamplingSession.
class ProfileBuilder {
 public:
  explicit ProfileBuilder(ProfileOptions options = {});
  ~ProfileBuilder();
  ProfileBuilder(const ProfileBuilder&) = delete;
  ProfileBuilder& operator=(const ProfileBuilder&) = delete;

  // Declares event number `index` (in add order) with its name and how its records parse.
  void add_event(std::string name, const ParseConfig& config);
  // One record of event `event`. Never throws on malformed records (they are counted).
  void observe(const RecordView& view, std::uint32_t event);
  // The recording's carried files and kernel release (StackResolver::set_recording_files).
  void set_recording_files(const PerfDataFeatures& features);
  // Whether the recording's sample times can be compared with jitdumps' (StackResolver).
  void set_sample_clock(std::span<const abi::PerfEventAttr> attrs);
  // Samples the caller read and left out of the profile (build_profile's sieve): they count
  // toward summary.samples_read, which lost samples are measured against, and nowhere else.
  void add_samples_read(std::uint64_t count) noexcept;
  // The finished profile; the builder is spent.
  Profile finish();
  // For build_profile's workers: the samples observed from now on are of chunk `chunk` of the
  // walk; and the builder's part of the profile, to be merged (merge_profile_parts).
  void begin_chunk(std::uint64_t chunk);
  ProfilePart finish_part();
  // The profile of the records observed since the start or the last call, and a new one begun:
  // what the builder knows of tasks, mappings and symbols carries over (continuous profiling
  // hands out one profile per interval). Each profile's tables hold only what its samples use.
  Profile finish_interval();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Reads every record of `reader` in time order into a Profile (header features into the
// summary, the reader's notes into its warnings). `keep`, when given, sieves the records before
// they are ordered (PerfDataReader::RecordSieve): it may leave out samples that decode, which
// then count in summary.samples_read only (the caller counts what else it needs of them), and
// must keep every other record.
Profile build_profile(const PerfDataReader& reader, const ProfileOptions& options = {},
                      const PerfDataReader::RecordSieve& keep = {});
// The same from the records a caller picked: `walk` hands them to its visitor in time order
// (PerfDataReader::for_each_record_ordered_at). `samples_left_out`: samples that decode and that
// the caller counted itself; they count in summary.samples_read only.
using RecordWalk = std::function<std::optional<PerfDataError>(const PerfDataReader::Visitor&)>;
Profile build_profile(const PerfDataReader& reader, const ProfileOptions& options,
                      const RecordWalk& walk, std::uint64_t samples_left_out);

}  // namespace perfscope
