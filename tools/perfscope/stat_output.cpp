#include "stat_output.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

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

std::string text_line(const std::vector<EventCount>& counts, std::size_t i, double elapsed_ns,
                      const RunningStatistics* statistics) {
  const EventCount& count = counts[i];
  if (!count.supported) return fmt::format("{:>18}      {}", "<not supported>", count.name);
  if (count.scaled.status == CountStatus::not_counted) {
    return fmt::format("{:>18}      {}", "<not counted>", count.name);
  }
  double value = statistics ? statistics->mean() : count.scaled.value;
  std::string line =
      fmt::format("{:>18} {:<4} {:<32}", format_value(count, display_value(count, value)),
                  display_unit(count), count.name);
  auto metric = derived_metric(counts, i, elapsed_ns);
  if (metric) {
    line += fmt::format(" # {:>8.3f} {:<22}", metric->value, metric->unit);
  } else if (statistics || count.scaled.status == CountStatus::multiplexed) {
    line += fmt::format(" {:33}", "");
  }
  if (statistics && statistics->count() > 1) {
    line += fmt::format(" ( +- {:5.2f}% )", statistics->relative_error_percent());
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
                     count.name, counted ? format_value(count, display_value(count, value)) : "",
                     display_unit(count), status_name(count), count.reading.enabled,
                     count.reading.running, 100.0 * count.scaled.fraction_running, metric_value,
                     metric_unit, extrapolated);
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
    fmt::print(out, "{}\n", document.dump());
    return;
  }
  if (format == StatFormat::csv) {
    fmt::print(out, "{}\n", csv_header(separator));
    for (std::size_t i = 0; i < result.counts.size(); ++i) {
      fmt::print(out, "{}\n", csv_row(result.counts, i, elapsed_ns, statistics_of(i), separator));
    }
    return;
  }
  fmt::print(out, "\n Performance counter stats for {}{}:\n\n", result.target,
             result.runs > 1 ? fmt::format(" ({} runs)", result.runs) : "");
  for (std::size_t i = 0; i < result.counts.size(); ++i) {
    fmt::print(out, "{}\n", text_line(result.counts, i, elapsed_ns, statistics_of(i)));
  }
  fmt::print(out, "\n{:>18.9f} seconds time elapsed", elapsed_ns / 1e9);
  if (result.runs > 1) {
    fmt::print(out, "  ( +- {:.2f}% )", result.elapsed_ns.relative_error_percent());
  }
  fmt::print(out, "\n\n");
  if (!result.command.empty()) {
    fmt::print(out, "{:>18.9f} seconds user\n{:>18.9f} seconds sys\n\n", result.user_seconds,
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
    fmt::print(out, "{}\n", line.dump());
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
