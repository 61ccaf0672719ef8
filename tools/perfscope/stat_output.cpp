#include "stat_output.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "perfscope/core/safe_text.hpp"
#include "perfscope/engine/derived_metrics.hpp"

namespace perfscope::cli {

namespace {

std::string_view status_name(const EventCount& count) {
  if (!count.supported) return "not_supported";
  switch (count.scaled.status) {
    case CountStatus::counted: return "counted";
    case CountStatus::multiplexed: return "multiplexed";
    case CountStatus::not_counted: return "not_counted";
  }
  return "";
}

// A multiplexed count is raw * enabled / running: the share of it that was not measured but
// extrapolated, on the assumption that the event's rate while off the PMU equalled its rate while
// on it, is 1 - running / enabled. One reading cannot bound the error of that assumption (a
// phase the event missed can be any size), so this share is what is reported, and a count more
// than half extrapolated is flagged as low confidence.
constexpr double low_confidence_extrapolated = 0.5;

double extrapolated_fraction(const EventCount& count) {
  return 1.0 - count.scaled.fraction_running;
}

bool low_confidence(const EventCount& count) {
  return count.supported && count.scaled.status == CountStatus::multiplexed &&
         extrapolated_fraction(count) > low_confidence_extrapolated;
}

// An event whose sysfs alias has a .scale or .unit (energy-pkg: Joules) is shown in that unit.
bool alias_scaled(const EventCount& count) { return !count.unit.empty() || count.scale != 1.0; }

// Value in display units: milliseconds for clocks, the alias's unit (its .scale applied) where
// it has one, plain counts otherwise.
double display_value(const EventCount& count, double scaled) {
  if (alias_scaled(count)) return scaled * count.scale;
  return is_time_event(count) ? scaled / 1e6 : scaled;
}

std::string_view display_unit(const EventCount& count) {
  if (alias_scaled(count)) return count.unit;
  return is_time_event(count) ? "msec" : "";
}

std::string format_value(const EventCount& count, double value) {
  if (alias_scaled(count)) return fmt::format("{:.2f}", value);
  if (is_time_event(count)) return fmt::format("{:.2f}", value);
  return fmt::format("{:.0f}", std::round(value));
}

// perf stat --table: each run's elapsed time, its distance from the mean, and a bar of one '#'
// and one more per 5 % of that distance; indented to where the final result's number starts.
void print_run_table(std::FILE* out, const std::vector<double>& runs_ns, double mean_seconds,
                     int digits) {
  std::string mean = fmt::format(" {:>17.{}f}", mean_seconds, digits);
  std::size_t indent = mean.find_first_not_of(' ');
  fmt::print(out, "{:{}}# Table of individual measurements:\n", "", indent);
  for (double run_ns : runs_ns) {
    double run = run_ns / 1e9;
    int bars = 1 + std::abs(static_cast<int>(100.0 * (run - mean_seconds) / run) / 5);
    fmt::print(out, " {:>17.{}f} ({:+.{}f}) {}\n", run, digits, run - mean_seconds, digits,
               std::string(static_cast<std::size_t>(bars), '#'));
  }
  fmt::print(out, "\n{:{}}# Final result:\n", "", indent);
}

std::string text_line(const std::vector<EventCount>& counts, std::size_t i, double elapsed_ns,
                      const RunningStatistics* statistics) {
  const EventCount& count = counts[i];
  // Event names come from sysfs (PMU drivers, vendor files): escaped for the terminal (#22).
  const std::string name = terminal_safe(count.name);
  // perf's columns with the event's unit: "     <not counted> msec task-clock".
  if (!count.supported || count.scaled.status == CountStatus::not_counted) {
    return fmt::format("{:>18} {:<4} {}", count.supported ? "<not counted>" : "<not supported>",
                       display_unit(count), name);
  }
  double value = statistics ? statistics->mean() : count.scaled.value;
  std::string line =
      fmt::format("{:>18} {:<4} {:<32}", format_value(count, display_value(count, value)),
                  display_unit(count), name);
  auto metric = derived_metric(counts, i, elapsed_ns);
  // perf's metric column is 35 wide; the noise of -r follows it, and is left out when it is 0.
  if (metric) {
    line += fmt::format(" # {:>8.3f} {:<23}", metric->value, metric->unit);
  } else if (statistics || count.scaled.status == CountStatus::multiplexed) {
    line += fmt::format(" {:34}", "");
  }
  if (statistics && statistics->count() > 1 && statistics->relative_error_percent() != 0) {
    line += fmt::format("  ( +-{:6.2f}% )", statistics->relative_error_percent());
  }
  if (count.scaled.status == CountStatus::multiplexed) {
    line += fmt::format("  ({:.2f}%{})", 100.0 * count.scaled.fraction_running,
                        low_confidence(count) ? ", low confidence" : "");
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

nlohmann::json event_json(const std::vector<EventCount>& counts, std::size_t i, double elapsed_ns,
                          const RunningStatistics* statistics,
                          const std::vector<double>* values = nullptr) {
  const EventCount& count = counts[i];
  nlohmann::json event = {
      {"name", count.name},
      {"group", count.group},
      {"status", status_name(count)},
      {"supported", count.supported},
  };
  if (!count.supported) {
    event["error"] = count.unsupported_reason;
    return event;
  }
  double value = statistics ? statistics->mean() : count.scaled.value;
  bool counted = count.scaled.status != CountStatus::not_counted;
  event["value"] = counted ? nlohmann::json(display_value(count, value)) : nlohmann::json();
  event["unit"] = display_unit(count);
  if (alias_scaled(count)) event["scale"] = count.scale;
  event["raw_value"] = count.reading.value;
  event["enabled_ns"] = count.reading.enabled;
  event["running_ns"] = count.reading.running;
  event["percent_running"] = 100.0 * count.scaled.fraction_running;
  event["extrapolated_percent"] =
      counted ? nlohmann::json(100.0 * extrapolated_fraction(count)) : nlohmann::json();
  event["low_confidence"] = low_confidence(count);
  if (statistics && statistics->count() > 1) {
    event["stddev"] = display_value(count, statistics->stddev());
    event["relative_error_percent"] = statistics->relative_error_percent();
  }
  if (values && statistics && statistics->count() > 1) {
    nlohmann::json each = nlohmann::json::array();
    for (double run : *values) each.push_back(display_value(count, run));
    event["values"] = std::move(each);
  }
  if (auto metric = derived_metric(counts, i, elapsed_ns)) {
    event["metric"] = {{"value", metric->value}, {"unit", metric->unit}};
  }
  return event;
}

std::string csv_header(std::string_view separator) {
  return fmt::format(
      "event{0}value{0}unit{0}status{0}enabled_ns{0}running_ns{0}percent_running{0}"
      "metric_value{0}metric_unit{0}extrapolated_percent",
      separator);
}

std::string csv_row(const std::vector<EventCount>& counts, std::size_t i, double elapsed_ns,
                    const RunningStatistics* statistics, std::string_view separator) {
  const EventCount& count = counts[i];
  bool counted = count.supported && count.scaled.status != CountStatus::not_counted;
  double value = statistics ? statistics->mean() : count.scaled.value;
  std::string metric_value, metric_unit;
  if (auto metric = derived_metric(counts, i, elapsed_ns)) {
    metric_value = fmt::format("{:.6g}", metric->value);
    metric_unit = metric->unit;
  }
  std::string extrapolated =
      counted ? fmt::format("{:.2f}", 100.0 * extrapolated_fraction(count)) : "";
  return fmt::format("{1}{0}{2}{0}{3}{0}{4}{0}{5}{0}{6}{0}{7:.2f}{0}{8}{0}{9}{0}{10}", separator,
                     csv_field(count.name, separator),
                     counted ? format_value(count, display_value(count, value)) : "",
                     display_unit(count), status_name(count), count.reading.enabled,
                     count.reading.running, 100.0 * count.scaled.fraction_running, metric_value,
                     metric_unit, extrapolated);
}

// One line of perf stat -x: value, unit, event, the variance over runs (with -r), the time the
// event ran in ns, the percentage of the time enabled it ran, the metric value and its unit.
std::string perf_csv_row(const std::vector<EventCount>& counts, std::size_t i, double elapsed_ns,
                         const RunningStatistics* statistics, std::string_view separator) {
  const EventCount& count = counts[i];
  std::string value;
  if (!count.supported) {
    value = "<not supported>";
  } else if (count.scaled.status == CountStatus::not_counted || count.reading.running == 0) {
    value = "<not counted>";  // as perf says of an interval the event did not run in
  } else {
    value = format_value(
        count, display_value(count, statistics ? statistics->mean() : count.scaled.value));
  }
  std::string line = fmt::format("{1}{0}{2}{0}{3}{0}", separator, value, display_unit(count),
                                 csv_field(count.name, separator));
  if (statistics) line += fmt::format("{:.2f}%{}", statistics->relative_error_percent(), separator);
  const bool counted = count.supported && count.scaled.status != CountStatus::not_counted &&
                       count.reading.running != 0;
  line += fmt::format("{1}{0}{2:.2f}{0}", separator, counted ? count.reading.running : 0,
                      counted ? 100.0 * count.scaled.fraction_running : 100.0);
  auto metric = counted ? derived_metric(counts, i, elapsed_ns) : std::nullopt;
  if (metric) {
    line += fmt::format("{1:.3f}{0}{2}", separator, metric->value, metric->unit);
  } else {
    line += separator;
  }
  return line;
}

// One line of perf stat -j: as -x's fields, named, the value with six decimals, the metric
// always there (0 where there is none). `prefix` is what goes first (the interval,
// the aggregate), with its trailing ", ".
std::string perf_json_row(const std::vector<EventCount>& counts, std::size_t i, double elapsed_ns,
                          const RunningStatistics* statistics, std::string_view prefix) {
  const EventCount& count = counts[i];
  const bool counted = count.supported && count.scaled.status != CountStatus::not_counted &&
                       count.reading.running != 0;
  std::string value =
      !count.supported ? "<not supported>"
      : !counted       ? "<not counted>"
                       : fmt::format("{:f}", display_value(count, statistics ? statistics->mean()
                                                                             : count.scaled.value));
  auto quoted = [](std::string_view text) {
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  std::string line =
      fmt::format("{{{}\"counter-value\" : {}, \"unit\" : {}, \"event\" : {}, ", prefix,
                  quoted(value), quoted(display_unit(count)), quoted(count.name));
  if (statistics) {
    line += fmt::format("\"variance\" : {:.2f}, ", statistics->relative_error_percent());
  }
  auto metric = counted ? derived_metric(counts, i, elapsed_ns) : std::nullopt;
  line += fmt::format(
      "\"event-runtime\" : {}, \"pcnt-running\" : {:.2f}, \"metric-value\" : {:f}, "
      "\"metric-unit\" : {}}}",
      counted ? count.reading.running : 0, counted ? 100.0 * count.scaled.fraction_running : 100.0,
      metric ? metric->value : 0.0,
      // perf prints a C null pointer for a counted event with no metric: "(null)", which the
      // scripts that read perf's lines have seen ever since.
      quoted(metric    ? metric->unit
             : counted ? "(null)"
                       : ""));
  return line;
}

// perf -j's key of an aggregate's line: "cpu" : "0", "thread" : "sleep-1234", or the core, die,
// socket or node with the number of CPUs summed.
std::string perf_json_prefix(Aggregation mode, const AggregateCounts& row) {
  auto quoted = [](std::string_view text) {
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  switch (mode) {
    case Aggregation::cpu: {
      std::string_view label = row.label;
      if (label.starts_with("CPU")) label.remove_prefix(3);
      return fmt::format("\"cpu\" : {}, ", quoted(label));
    }
    case Aggregation::thread: return fmt::format("\"thread\" : {}, ", quoted(row.label));
    case Aggregation::core:
    case Aggregation::die:
    case Aggregation::socket:
    case Aggregation::node: {
      std::string_view key = mode == Aggregation::core     ? "core"
                             : mode == Aggregation::die    ? "die"
                             : mode == Aggregation::socket ? "socket"
                                                           : "node";
      return fmt::format("\"{}\" : {}, \"aggregate-number\" : {}, ", key, quoted(row.label),
                         row.units);
    }
    case Aggregation::global: break;
  }
  return {};
}

// perf's prefix of an aggregate's line: the label and, for cores, dies, sockets and nodes, the
// number of CPUs summed (widths as perf 6 prints them).
std::string text_prefix(Aggregation mode, const AggregateCounts& row) {
  switch (mode) {
    case Aggregation::cpu: return fmt::format("{:<10} ", row.label);
    case Aggregation::core: return fmt::format("{:<15} {:>4} ", row.label, row.units);
    case Aggregation::die: return fmt::format("{:<12} {:>4} ", row.label, row.units);
    case Aggregation::socket:
    case Aggregation::node: return fmt::format("{:<6} {:>4} ", row.label, row.units);
    case Aggregation::thread: {
      // comm right-aligned in 16, the tid left-aligned in 8: "         sleep-1234     ".
      std::string comm = row.label.substr(0, row.label.rfind('-'));
      return fmt::format("{:>16}-{:<8} ", comm, row.tid);
    }
    case Aggregation::global: break;
  }
  return {};
}

// perf prints per-CPU and per-thread counts event by event (every CPU's task-clock, then every
// CPU's page-faults), and cores, dies, sockets and nodes aggregate by aggregate.
bool event_major(Aggregation mode) {
  return mode == Aggregation::cpu || mode == Aggregation::thread;
}

// The aggregates' lines in perf's order: calls line(row, event index).
template <class Line>
void for_each_aggregate_line(const StatResult& result, Line&& line) {
  std::size_t events = result.counts.size();
  if (event_major(result.aggregation)) {
    for (std::size_t i = 0; i < events; ++i) {
      for (const auto& row : result.aggregates) line(row, i);
    }
  } else {
    for (const auto& row : result.aggregates) {
      for (std::size_t i = 0; i < events; ++i) line(row, i);
    }
  }
}

bool has_units_column(Aggregation mode) {
  return mode != Aggregation::cpu && mode != Aggregation::thread;
}

}  // namespace

void print_stat(std::FILE* out, StatFormat format, const StatResult& result,
                std::string_view separator) {
  double elapsed_ns = result.elapsed_ns.mean();
  auto statistics_of = [&](std::size_t i) -> const RunningStatistics* {
    return result.runs > 1 && i < result.per_event.size() ? &result.per_event[i] : nullptr;
  };
  if (format == StatFormat::json) {
    nlohmann::json document = {
        {"schema", "perfscope-stat"},
        {"version", 1},
        {"target", result.target},
        {"command", result.command},
        {"runs", result.runs},
        {"elapsed_ns", elapsed_ns},
        {"user_seconds", result.user_seconds},
        {"system_seconds", result.system_seconds},
    };
    if (result.runs > 1) {
      document["elapsed_stddev_ns"] = result.elapsed_ns.stddev();
      document["elapsed_values_ns"] = result.elapsed_values_ns;
    }
    if (result.has_exit_status) document["exit_status"] = result.exit_status;
    nlohmann::json events = nlohmann::json::array();
    for (std::size_t i = 0; i < result.counts.size(); ++i) {
      events.push_back(
          event_json(result.counts, i, elapsed_ns, statistics_of(i),
                     i < result.per_event_values.size() ? &result.per_event_values[i] : nullptr));
    }
    document["events"] = std::move(events);
    if (result.aggregation != Aggregation::global) {
      // Added beside the totals (readers of version 1 see the same "events").
      document["aggregation"] = aggregation_name(result.aggregation);
      nlohmann::json aggregates = nlohmann::json::array();
      for (const auto& row : result.aggregates) {
        nlohmann::json entry = {{"label", row.label}, {"units", row.units}};
        if (row.cpu >= 0) entry["cpu"] = row.cpu;
        if (row.tid >= 0) entry["tid"] = row.tid;
        nlohmann::json row_events = nlohmann::json::array();
        for (std::size_t i = 0; i < row.counts.size(); ++i) {
          row_events.push_back(event_json(row.counts, i, elapsed_ns, nullptr));
        }
        entry["events"] = std::move(row_events);
        aggregates.push_back(std::move(entry));
      }
      document["aggregates"] = std::move(aggregates);
    }
    fmt::print(out, "{}\n",
               document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  if (format == StatFormat::csv && result.aggregation != Aggregation::global) {
    // The aggregate's columns first, as perf -x puts them: label (and CPUs summed).
    std::string_view key = aggregation_name(result.aggregation);
    bool units = has_units_column(result.aggregation);
    fmt::print(out, "{}{}{}{}\n", key, separator, units ? fmt::format("units{}", separator) : "",
               csv_header(separator));
    for_each_aggregate_line(result, [&](const AggregateCounts& row, std::size_t i) {
      fmt::print(out, "{}{}{}{}\n", row.label, separator,
                 units ? fmt::format("{}{}", row.units, separator) : "",
                 csv_row(row.counts, i, elapsed_ns, nullptr, separator));
    });
    return;
  }
  if (format == StatFormat::csv) {
    fmt::print(out, "{}\n", csv_header(separator));
    for (std::size_t i = 0; i < result.counts.size(); ++i) {
      fmt::print(out, "{}\n", csv_row(result.counts, i, elapsed_ns, statistics_of(i), separator));
    }
    return;
  }
  if (format == StatFormat::perf_json) {
    if (result.aggregation != Aggregation::global) {
      for_each_aggregate_line(result, [&](const AggregateCounts& row, std::size_t i) {
        fmt::print(out, "{}\n",
                   perf_json_row(row.counts, i, elapsed_ns, nullptr,
                                 perf_json_prefix(result.aggregation, row)));
      });
      return;
    }
    for (std::size_t i = 0; i < result.counts.size(); ++i) {
      fmt::print(out, "{}\n", perf_json_row(result.counts, i, elapsed_ns, statistics_of(i), ""));
    }
    return;
  }
  if (format == StatFormat::perf_csv) {
    // perf's prefix for an aggregate: its label, and the CPUs summed where that is a column.
    const bool units = has_units_column(result.aggregation);
    if (result.aggregation != Aggregation::global) {
      for_each_aggregate_line(result, [&](const AggregateCounts& row, std::size_t i) {
        fmt::print(out, "{}{}{}{}\n", row.label, separator,
                   units ? fmt::format("{}{}", row.units, separator) : "",
                   perf_csv_row(row.counts, i, elapsed_ns, nullptr, separator));
      });
      return;
    }
    std::string label = result.csv_row_label.empty()
                            ? std::string()
                            : fmt::format("{:>16}{}", result.csv_row_label, separator);
    for (std::size_t i = 0; i < result.counts.size(); ++i) {
      fmt::print(out, "{}{}\n", label,
                 perf_csv_row(result.counts, i, elapsed_ns, statistics_of(i), separator));
    }
    return;
  }
  fmt::print(out, "\n Performance counter stats for {}{}:\n\n",
             result.header_target.empty() ? result.target : result.header_target,
             result.runs > 1 ? fmt::format(" ({} runs)", result.runs) : "");
  if (result.aggregation != Aggregation::global) {
    for_each_aggregate_line(result, [&](const AggregateCounts& row, std::size_t i) {
      fmt::print(out, "{}{}\n", text_prefix(result.aggregation, row),
                 text_line(row.counts, i, elapsed_ns, nullptr));
    });
  } else {
    for (std::size_t i = 0; i < result.counts.size(); ++i) {
      fmt::print(out, "{}\n", text_line(result.counts, i, elapsed_ns, statistics_of(i)));
    }
  }
  // A blank line after the counts; none printed (a null run), none twice.
  if (!result.counts.empty()) fmt::print(out, "\n");
  if (result.runs > 1) {
    // perf's: the mean, +- its standard error, to two digits more than the error's first one.
    const RunningStatistics& elapsed = result.elapsed_ns;
    double error_seconds = elapsed.stddev() / std::sqrt(static_cast<double>(elapsed.count())) / 1e9;
    int digits = error_seconds > 1 || error_seconds <= 0
                     ? 2
                     : static_cast<int>(std::lround(std::ceil(-std::log10(error_seconds)))) + 2;
    if (result.run_table)
      print_run_table(out, result.elapsed_values_ns, elapsed.mean() / 1e9, digits);
    fmt::print(out, " {:>17.{}f} +- {:.{}f} seconds time elapsed", elapsed.mean() / 1e9, digits,
               error_seconds, digits);
    if (elapsed.relative_error_percent() != 0) {
      fmt::print(out, "  ( +-{:6.2f}% )", elapsed.relative_error_percent());
    }
  } else {
    fmt::print(out, "{:>18.9f} seconds time elapsed", elapsed_ns / 1e9);
  }
  fmt::print(out, "\n\n");
  // perf prints the command's user and system time for one run only.
  if (result.command_is_target && result.runs == 1) {
    // perf ends these with two blank lines.
    fmt::print(out, "{:>18.9f} seconds user\n{:>18.9f} seconds sys\n\n\n", result.user_seconds,
               result.system_seconds);
  }
}

void print_stat_interval(std::FILE* out, StatFormat format, double seconds,
                         const std::vector<EventCount>& counts, double interval_ns,
                         bool first_interval, std::string_view separator) {
  if (format == StatFormat::json) {
    nlohmann::json line = {
        {"schema", "perfscope-stat-interval"}, {"version", 1}, {"time_seconds", seconds}};
    nlohmann::json events = nlohmann::json::array();
    for (std::size_t i = 0; i < counts.size(); ++i) {
      events.push_back(event_json(counts, i, interval_ns, nullptr));
    }
    line["events"] = std::move(events);
    fmt::print(out, "{}\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else if (format == StatFormat::perf_json) {
    std::string prefix = fmt::format("\"interval\" : {:.9f}, ", seconds);
    for (std::size_t i = 0; i < counts.size(); ++i) {
      fmt::print(out, "{}\n", perf_json_row(counts, i, interval_ns, nullptr, prefix));
    }
  } else if (format == StatFormat::perf_csv) {
    for (std::size_t i = 0; i < counts.size(); ++i) {
      fmt::print(out, "{:16.9f}{}{}\n", seconds, separator,
                 perf_csv_row(counts, i, interval_ns, nullptr, separator));
    }
  } else if (format == StatFormat::csv) {
    if (first_interval) fmt::print(out, "time{}{}\n", separator, csv_header(separator));
    for (std::size_t i = 0; i < counts.size(); ++i) {
      fmt::print(out, "{:.9f}{}{}\n", seconds, separator,
                 csv_row(counts, i, interval_ns, nullptr, separator));
    }
  } else {
    if (first_interval)
      fmt::print(out, "#{:>15} {:>18} {:<5} {}\n", "time", "counts", "unit", "events");
    for (std::size_t i = 0; i < counts.size(); ++i) {
      fmt::print(out, "{:16.9f}{}\n", seconds, text_line(counts, i, interval_ns, nullptr));
    }
  }
  std::fflush(out);
}

}  // namespace perfscope::cli
