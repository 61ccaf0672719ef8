// How `perfscope stat` prints: perf-style text, a JSON document (JSON lines for intervals), or
// CSV. The formats are documented in docs/USER_GUIDE.md and stable within a schema version.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/core/running_statistics.hpp"
#include "perfscope/engine/count_aggregation.hpp"
#include "perfscope/engine/counting_session.hpp"

namespace perfscope::cli {

// csv: perfscope's columns with a header row (--csv); perf_csv: perf stat -x's layout, no header
// (value, unit, event, [variance,] run time, percentage running, metric value, metric unit), for
// the scripts written against perf.
// perf_json: perf stat -j's lines, one JSON object an event (and an aggregate, an interval).
enum class StatFormat { text, json, csv, perf_csv, perf_json };

struct StatResult {
  std::string target;                        // "'sleep 1'", "system wide", ...
  std::string header_target;                 // as perf's header says it: "'system wide'", ...
  std::vector<std::string> command;          // empty without a command
  std::vector<EventCount> counts;            // of the last run (or the only one)
  std::vector<RunningStatistics> per_event;  // scaled values over runs
  RunningStatistics elapsed_ns;
  // Each run's scaled value per event (runs it was not counted in left out) and elapsed time:
  // JSON's "values" and "elapsed_values_ns", what `perfscope diff` tests differences with.
  std::vector<std::vector<double>> per_event_values;
  std::vector<double> elapsed_values_ns;
  double user_seconds = 0;
  double system_seconds = 0;
  // The command is what was counted (not the period of a -p/-t/-a/-C/-G target): its user and
  // system time are printed, as perf prints them.
  bool command_is_target = false;
  int runs = 1;
  bool run_table = false;  // --table: each run's elapsed time before the final result
  int exit_status = 0;
  bool has_exit_status = false;
  // -A/--per-*: the counts of each CPU, core, die, socket, node or thread (counts holds the
  // totals either way).
  Aggregation aggregation = Aggregation::global;
  std::vector<AggregateCounts> aggregates;
  // perf stat -x's --summary after -I: each totals row starts with this field ("summary",
  // right-aligned in the time column's 16); empty: no such field.
  std::string csv_row_label;
};

// `separator` separates CSV fields (perf stat -x).
void print_stat(std::FILE* out, StatFormat format, const StatResult& result,
                std::string_view separator = ",");

// One interval: `seconds` since start, counts of that interval only.
void print_stat_interval(std::FILE* out, StatFormat format, double seconds,
                         const std::vector<EventCount>& counts, double interval_ns,
                         bool first_interval, std::string_view separator = ",");

}  // namespace perfscope::cli
