// CounterReport: the counts of one region (or of a Counters' whole run), scaled for
// multiplexing, with the figures derived from counts of the same group, printable as a table,
// JSON or CSV.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/engine/counting_session.hpp"
#include "perfscope/engine/derived_metrics.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

struct PERFSCOPE_EXPORT CounterReport {
  std::string region;            // the region's name; empty for the totals of a Counters
  std::uint64_t runs = 0;        // regions accumulated (start/stop pairs for totals)
  std::uint64_t elapsed_ns = 0;  // wall time the counters were enabled, summed over the runs
  // One per event in the order of the event string: raw reading (value, time enabled and
  // running), and the scaled count with its fraction running.
  std::vector<EventCount> counts;
  // Beside counts[i]: IPC, miss ratios, GHz, CPUs utilized, rates; computed only from events of
  // counts[i]'s own group, so that both counts cover the same time on the PMU.
  std::vector<std::optional<DerivedMetric>> metrics;

  // The count of the event named `name` (as written in the event string, or its base name
  // without modifiers); nullptr when there is none.
  const EventCount* find(std::string_view name) const noexcept;
  // Its scaled value; 0 when absent or not counted.
  double value(std::string_view name) const noexcept;

  std::string table() const;  // perf-stat-like lines
  std::string json() const;   // one object (see format_json)
  std::string csv() const;    // header and one line per event
};

// Scales every reading of `counts` (in place) and derives the metrics group by group. The
// readings are sums of deltas: value, enabled and running add up over regions and threads, so
// that value * enabled / running corrects the whole for the time the group was multiplexed out.
PERFSCOPE_EXPORT CounterReport make_counter_report(std::string region,
                                                   std::vector<EventCount> counts,
                                                   std::uint64_t elapsed_ns, std::uint64_t runs);

// Several reports (every region of a Counters): a table per report; a JSON object
// {"regions": [{"region", "runs", "elapsed_ns", "events": [{"name", "group", "value", "raw",
// "enabled_ns", "running_ns", "fraction_running", "status", "unit", "metric",
// "metric_unit"}]}]}; CSV with the columns
// region,runs,elapsed_ns,event,group,value,raw,enabled_ns,running_ns,fraction_running,status,
// metric,metric_unit.
PERFSCOPE_EXPORT std::string format_table(std::span<const CounterReport> reports);
PERFSCOPE_EXPORT std::string format_json(std::span<const CounterReport> reports);
PERFSCOPE_EXPORT std::string format_csv(std::span<const CounterReport> reports);

// "counted", "multiplexed", "not counted", or "not supported" (the event could not be opened).
PERFSCOPE_EXPORT std::string_view count_status_name(const EventCount& count) noexcept;

}  // namespace perfscope
