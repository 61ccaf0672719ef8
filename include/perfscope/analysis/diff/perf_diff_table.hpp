// perf diff's own table, as perf 6.1 prints it and scripts parse it: Baseline, the computed
// column (-c delta-abs, delta, ratio or wdiff:W1,W2), optional periods (-p) and formulas (-F),
// the sort keys; rows ordered by the computed value (or by Baseline with -o 0), perf's blanks and
// N/A where a row is on one side only, and perf's -t, -b, -q and --percentage.
//
// perfscope's own diff table (render_profile_diff) adds New, Ratio of shares, p-values and the
// reasons a row appeared; this one is for what was written against perf's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "perfscope/analysis/diff/profile_diff.hpp"

namespace perfscope {

enum class PerfDiffCompute { delta_abs, delta, ratio, wdiff };

struct PerfDiffLayout {
  PerfDiffCompute compute = PerfDiffCompute::delta_abs;      // perf's default
  std::int64_t wdiff_base_weight = 0, wdiff_new_weight = 0;  // wdiff:W1,W2
  bool show_period = false;                                  // -p: Base period and Period columns
  bool show_formula = false;      // -F: how each computed value was computed
  bool baseline_only = false;     // -b: only the rows both recordings have
  bool sort_by_baseline = false;  // -o 0: by Baseline (the default orders by the computed value)
  // --percentage relative: shares of what the filters kept (perf diff's default is absolute:
  // of each recording's whole event count).
  bool relative_percentages = false;
  bool quiet = false;           // -q: the rows alone, no headers
  std::string field_separator;  // -t: columns joined by it, no dotted line
};

// Parses -c's value: "delta", "delta-abs", "ratio" or "wdiff:W1,W2" (non-zero integers).
// Throws std::invalid_argument naming what was wrong ("cycles" needs LBR cycle counts, which
// perfscope's recordings do not have).
void parse_perf_diff_compute(std::string_view text, PerfDiffLayout& layout);

// The rows' self shares only (perf diff has no inclusive columns): throws std::invalid_argument
// for a diff made with children.
std::string render_perf_diff(const ProfileDiff& diff, const PerfDiffLayout& layout,
                             bool raw_names = false);

}  // namespace perfscope
