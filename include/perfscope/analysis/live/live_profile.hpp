// LiveProfile: the model behind `perfscope top`. Samples arrive from a RecordingSession (it is a
// RecordingSink) and are named at once through the StackResolver, so that a process that exits
// keeps its names; they add to a histogram whose weights decay at each refresh (perf top's 7/8),
// so that what stopped burning CPU fades out. A snapshot turns the histogram into rows by the
// sort keys (comm, pid, dso, sym), filtered by symbol or DSO text; with call chains, the callers
// of each row's function form a tree (leaf first, as perf top -g --no-children draws it) and the
// callees and callers of one function can be listed (the call-graph view).
//
// Hot path: record() decodes into a reused SampleRecord, walks and names the stack into reused
// vectors, and finds each frame's histogram cell by numbers (address id → function → cell): once
// every address has been seen, a sample allocates nothing and nothing throws. Snapshots, decay
// and the compaction of faded cells run at refresh time and may allocate.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/event_switch.hpp"
#include "perfscope/analysis/profile/stack_resolver.hpp"
#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

enum class LiveSortKey { comm, pid, dso, sym };

// "comm,dso,sym" → keys; throws std::invalid_argument naming the unknown key and the known ones.
std::vector<LiveSortKey> parse_live_sort_keys(const std::string& text);

struct LiveProfileOptions {
  StackResolverOptions resolver;
  // Keep the samples' callers: children (inclusive) weights, caller trees and the call-graph
  // view. Without it every sample is its ip alone.
  bool callchains = false;
  // The part of every weight kept at each end_interval(): perf top's 7/8 (about a tenth of a
  // sample left after 18 refreshes); 0 forgets everything at each refresh (perf top -z).
  double decay = 7.0 / 8.0;
  // The row keys, in column order (perf top's default: dso,sym).
  std::vector<LiveSortKey> sort{LiveSortKey::dso, LiveSortKey::sym};
  // A machine whose processes come and go (a build) gives the resolver new addresses to cache
  // for every process: past this many the cache is dropped at a refresh (named functions stay;
  // live processes' addresses are named again, from the symbolizer's per-file tables).
  std::size_t address_cache_limit = std::size_t{1} << 17;
};

// One row of a snapshot. Shares are percent of the decayed total weight of all samples.
struct LiveRow {
  std::string comm;       // with the comm or pid key (terminal-safe)
  std::uint32_t pid = 0;  // with the pid key
  std::string dso;        // file name, "[kernel.kallsyms]", "[vdso]", "[unknown]" (terminal-safe)
  std::string symbol;     // function, or the address in hex when unnamed (terminal-safe)
  bool kernel = false;
  double self = 0;      // percent: samples whose leaf is this row
  double children = 0;  // percent: samples with this row anywhere in the stack (callchains)
  double weight = 0;    // the decayed self weight itself (samples)
  // The function of the row with the sym key, for caller_tree() and call_graph(); no_function
  // without it.
  static constexpr std::uint32_t no_function = 0xffffffffu;
  std::uint32_t function = no_function;
};

struct LiveSnapshotOptions {
  std::string symbol_filter;      // rows whose symbol contains this text (empty: all)
  std::string dso_filter;         // rows whose DSO contains this text (empty: all)
  bool sort_by_children = false;  // order by children instead of self (perf top -g --children)
  double percent_limit = 0;       // leave out rows below this share (of the ordering column)
  std::size_t max_rows = 0;       // 0: every row
};

struct LiveSnapshot {
  std::vector<LiveRow> rows;          // by share, largest first
  double total_weight = 0;            // the decayed weight of every sample (before filters)
  std::size_t rows_before_limit = 0;  // rows that passed the filters
};

// A function met in a caller tree or the call-graph view.
struct LiveCallEntry {
  std::string dso;
  std::string symbol;
  bool kernel = false;
  double percent = 0;  // of the selected function's weight (see caller_tree, call_graph)
  std::uint32_t function = LiveRow::no_function;
  std::vector<LiveCallEntry> callers;  // caller_tree only: the next level up
};

struct LiveCallGraph {
  double self = 0;      // percent of all samples: the function is the leaf
  double children = 0;  // percent of all samples: the function is anywhere in the stack
  std::vector<LiveCallEntry> callers;  // who calls it: percent of the function's inclusive weight
  std::vector<LiveCallEntry> callees;  // what it calls: percent of the function's inclusive weight
};

struct LiveTotals {
  std::uint64_t samples = 0;                  // since the start
  std::uint64_t kernel_samples = 0;           // since the start
  std::uint64_t undecodable = 0;              // samples the decoder refused (counted, left out)
  std::uint64_t interval_samples = 0;         // since the last end_interval()
  std::uint64_t interval_kernel_samples = 0;  // since the last end_interval()
  std::size_t cells = 0;                      // histogram cells alive
  std::size_t tree_nodes = 0;                 // caller-tree nodes alive
  std::size_t functions = 0;                  // distinct functions named so far (kept for good)
  std::uint64_t exited_tasks = 0;             // tasks forgotten one refresh after their EXIT
  std::uint64_t cache_resets = 0;             // times the address cache passed its limit
};

class LiveProfile final : public RecordingSink {
 public:
  explicit LiveProfile(LiveProfileOptions options = {});
  ~LiveProfile() override;
  LiveProfile(const LiveProfile&) = delete;
  LiveProfile& operator=(const LiveProfile&) = delete;

  // RecordingSink: samples add to the histogram; COMM, FORK, MMAP and MMAP2 update the process
  // state names are found in. Never throws.
  void record(const RecordView& view, std::size_t event, const ParseConfig& config) override;

  // Ends a refresh interval: every weight is multiplied by the decay factor, cells and caller
  // nodes that faded below a tenth of a sample are dropped, the interval counters restart.
  // Tasks that exited before the previous refresh are forgotten (their late samples have been
  // read by now; their rows keep their names), and the address cache is dropped past its limit.
  // perf top's --switch-on/--switch-off: samples are taken only while the switch is on.
  void set_event_switch(EventSwitch event_switch);
  void end_interval();

  LiveSnapshot snapshot(const LiveSnapshotOptions& options = {}) const;
  // The callers of `function` as a tree, leaf first: each level's entries are its callers, with
  // percent of the weight of samples whose leaf is `function`; entries under `min_percent` are
  // left out, and levels beyond `depth`.
  std::vector<LiveCallEntry> caller_tree(std::uint32_t function, double min_percent = 0.5,
                                         std::size_t depth = 8) const;
  // Callers and callees of `function` one level away, from every stack it appears in.
  LiveCallGraph call_graph(std::uint32_t function) const;

  LiveTotals totals() const noexcept;
  const LiveProfileOptions& options() const noexcept;
  StackResolver& resolver() noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace perfscope
