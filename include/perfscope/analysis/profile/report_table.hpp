// The report table: a Profile aggregated the way `perf report` shows it (one row per distinct
// value of the sort keys, with its share of the event's period, self and inclusive), and its
// text rendering with perf's call-graph layout below each row.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/analysis/profile/profile.hpp"

namespace perfscope {

// state: why an off-CPU sample's thread was off the CPU (on-cpu for on-CPU samples).
// srcfile: the source file alone; parent: the first caller whose name matches the parent pattern
// (perf's "^sys_|^do_page_fault": the system call or fault a sample came through), "[other]"
// when none does.
enum class ReportSortKey { comm, pid, tid, dso, sym, cpu, srcline, state, srcfile, parent, time };

// "comm,dso,sym" -> keys; "symbol" is sym, as perf spells it. perf's output fields overhead,
// period and sample order the rows (by share, the default, or by sample count: see
// report_orders_by_samples) without grouping them. Throws std::invalid_argument naming the unknown
// key and the known ones.
std::vector<ReportSortKey> parse_report_sort_keys(std::string_view text);
// Whether `text` (a --sort value) orders the rows by their sample counts (perf's "sample" key
// before "overhead" and "period").
bool report_orders_by_samples(std::string_view text);
// The key's name ("dso") and its column title in the table ("Shared Object").
std::string_view report_sort_key_name(ReportSortKey key) noexcept;
std::string_view report_sort_key_title(ReportSortKey key) noexcept;

// Which way call trees below a row go: from the row's function to its callees (caller: the
// outermost function at the top), to its callers (callee), or no tree.
enum class ReportCallGraph { caller, callee, none };

struct ReportOptions {
  std::vector<ReportSortKey> sort{ReportSortKey::comm, ReportSortKey::dso, ReportSortKey::sym};
  // Inclusive ("Children") and "Self" columns; nullopt: when the event has call chains (perf's
  // default).
  std::optional<bool> children;
  // nullopt: caller with children, callee without (perf's defaults).
  std::optional<ReportCallGraph> call_graph;
  double percent_limit = 0;       // rows below this share are not shown
  double call_graph_limit = 0.5;  // tree branches below this share of the event are not shown
  bool show_samples = true;       // the Samples column
  // perf's -t: columns separated by it instead of padded apart (each still padded to its width,
  // as perf pads them), no dotted line; values containing it have '.' for it.
  std::string field_separator;
  bool show_period = false;  // the Period column (each row's own period sum, as perf's)
  // Each call-graph entry names its source line too ("leaf_fn known_answer.cpp:42", as perf's
  // -g ...,address shows them), and entries of one function on different lines stay apart. Needs
  // a profile built with source lines (SymbolizerOptions::source_lines).
  bool source_lines_in_call_graph = false;
  bool order_by_samples = false;  // --sort sample: the most samples first, not the largest share
  // perf's --time as given: the Samples line says " (time slices: TEXT)", as perf's does.
  std::string time_slices;
  // Columns perf leaves out because a filter keeps one value of theirs, said in the header
  // instead ("# comm: sqlite3"): {"comm", "sqlite3"}.
  std::vector<std::pair<std::string, std::string>> elided;
  // perf's --percentage relative: shares (and the header's counts) of what the filters kept,
  // not of everything the event recorded (absolute, perf's default).
  bool relative_percentages = false;
  // The time key: sample times rounded down to this many ns (perf's --time-quantum, 100 ms),
  // printed in seconds to the microsecond, or with `nanoseconds` (--ns) to the nanosecond. It
  // needs a profile that kept its samples (ProfileOptions::keep_samples).
  std::uint64_t time_quantum_ns = 100'000'000;
  bool nanoseconds = false;
  // srcline and srcfile name a source file by its whole path as the debug information gives it
  // (perf's --full-source-path), not by its name alone.
  bool full_source_path = false;
};

struct ReportRow {
  std::vector<std::string> keys;      // the display text of each sort key
  std::uint32_t function = no_index;  // of the row's frames, when the keys name one function
  bool kernel = false;
  std::uint64_t self_period = 0, self_samples = 0;
  std::uint64_t total_period = 0, total_samples = 0;  // inclusive: with the callees' samples
  // The sample stacks behind the row: `leaf` is the sample's stack, `anchor` the node of it
  // that holds the row's frame. `self`: the row is the sample's own (its function, below any
  // calls inlined at the sampled address); its caller tree shows the whole chain, as perf's.
  struct Contribution {
    std::uint32_t leaf = no_index, anchor = no_index;
    std::uint64_t period = 0;
    bool self = false;
  };
  std::vector<Contribution> contributions;
  // The longest chain of frames the row's call tree holds: with children, perf puts the row
  // with the longer one first among rows of equal share in caller trees (the shorter in callee
  // trees), so that callers come above their callees.
  std::uint32_t chain_depth = 0;
};

struct ReportTable {
  std::uint32_t event = 0;
  std::uint64_t period = 0, samples = 0;  // of the event, after filters
  std::uint64_t percent_base = 0;         // of the event before filters (perf's "absolute")
  bool children = false;
  ReportCallGraph call_graph = ReportCallGraph::none;
  std::vector<ReportRow> rows;  // largest first (inclusive share with children, else self)

  double percent(std::uint64_t row_period) const noexcept {
    std::uint64_t base = std::max(percent_base, period);
    return base == 0 ? 0.0 : 100.0 * static_cast<double>(row_period) / static_cast<double>(base);
  }
};

// The table of one event of the profile.
ReportTable build_report_table(const Profile& profile, std::uint32_t event,
                               const ReportOptions& options);

// perf report --stdio's layout: the header (samples, event, lost and throttle counts, DWARF
// unwinding), then each event's table with its call trees.
std::string render_report(const Profile& profile, const ReportOptions& options);

}  // namespace perfscope
