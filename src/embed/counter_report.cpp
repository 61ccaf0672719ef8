#include "perfscope/embed/counter_report.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "perfscope/core/event_names.hpp"

namespace perfscope {

namespace {

// Text cells that may hold commas or quotes (event names such as "{cycles,instructions}").
std::string csv_cell(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

}  // namespace

std::string_view count_status_name(const EventCount& count) noexcept {
  if (!count.supported) return "not supported";
  switch (count.scaled.status) {
    case CountStatus::counted: return "counted";
    case CountStatus::multiplexed: return "multiplexed";
    case CountStatus::not_counted: return "not counted";
  }
  return "not counted";
}

CounterReport make_counter_report(std::string region, std::vector<EventCount> counts,
                                  std::uint64_t elapsed_ns, std::uint64_t runs) {
  CounterReport report;
  report.region = std::move(region);
  report.elapsed_ns = elapsed_ns;
  report.runs = runs;
  for (auto& count : counts) count.scaled = scale(count.reading);
  report.metrics.resize(counts.size());
  std::vector<EventCount> same_group;
  std::vector<std::size_t> positions;
  std::size_t groups = 0;
  for (const auto& count : counts) groups = std::max(groups, count.group + 1);
  for (std::size_t group = 0; group < groups; ++group) {
    same_group.clear();
    positions.clear();
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (counts[i].group != group) continue;
      same_group.push_back(counts[i]);
      positions.push_back(i);
    }
    for (std::size_t j = 0; j < same_group.size(); ++j) {
      report.metrics[positions[j]] = derived_metric(same_group, j, static_cast<double>(elapsed_ns));
    }
  }
  report.counts = std::move(counts);
  return report;
}

const EventCount* CounterReport::find(std::string_view name) const noexcept {
  for (const auto& count : counts) {
    if (count.name == name) return &count;
  }
  for (const auto& count : counts) {
    if (event_name_without_modifiers(count.name) == name) return &count;
  }
  return nullptr;
}

double CounterReport::value(std::string_view name) const noexcept {
  const EventCount* count = find(name);
  return count && count->supported ? count->scaled.value : 0.0;
}

std::string CounterReport::table() const { return format_table({this, 1}); }
std::string CounterReport::json() const { return format_json({this, 1}); }
std::string CounterReport::csv() const { return format_csv({this, 1}); }

std::string format_table(std::span<const CounterReport> reports) {
  std::string out;
  for (const auto& report : reports) {
    fmt::format_to(
        std::back_inserter(out), "{} ({} run{}, {:.3f} ms):\n",
        report.region.empty() ? std::string("totals") : fmt::format("region '{}'", report.region),
        report.runs, report.runs == 1 ? "" : "s", static_cast<double>(report.elapsed_ns) / 1e6);
    for (std::size_t i = 0; i < report.counts.size(); ++i) {
      const EventCount& count = report.counts[i];
      std::string value;
      if (!count.supported || count.scaled.status == CountStatus::not_counted) {
        value = fmt::format("<{}>", count_status_name(count));
      } else if (is_time_event(count)) {
        value = fmt::format("{:.3f} msec", count.scaled.value / 1e6);
      } else {
        value = fmt::format("{:.0f}", count.scaled.value * count.scale);
        if (!count.unit.empty()) value += " " + count.unit;
      }
      std::string line = fmt::format("  {:>20}  {:<28}", value, count.name);
      if (const auto& metric = report.metrics[i]) {
        line += fmt::format(" # {:>8.2f} {:<20}", metric->value, metric->unit);
      }
      if (count.scaled.status == CountStatus::multiplexed) {
        line += fmt::format(" ({:.2f}%)", 100.0 * count.scaled.fraction_running);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line;
      out += '\n';
    }
  }
  return out;
}

std::string format_json(std::span<const CounterReport> reports) {
  nlohmann::json regions = nlohmann::json::array();
  for (const auto& report : reports) {
    nlohmann::json events = nlohmann::json::array();
    for (std::size_t i = 0; i < report.counts.size(); ++i) {
      const EventCount& count = report.counts[i];
      nlohmann::json event = {{"name", count.name},
                              {"group", count.group},
                              {"value", count.scaled.value * count.scale},
                              {"raw", count.reading.value},
                              {"enabled_ns", count.reading.enabled},
                              {"running_ns", count.reading.running},
                              {"fraction_running", count.scaled.fraction_running},
                              {"status", count_status_name(count)},
                              {"unit", count.unit}};
      if (const auto& metric = report.metrics[i]) {
        event["metric"] = metric->value;
        event["metric_unit"] = metric->unit;
      }
      events.push_back(std::move(event));
    }
    regions.push_back({{"region", report.region},
                       {"runs", report.runs},
                       {"elapsed_ns", report.elapsed_ns},
                       {"events", std::move(events)}});
  }
  return nlohmann::json{{"regions", std::move(regions)}}.dump(2) + "\n";
}

std::string format_csv(std::span<const CounterReport> reports) {
  std::string out =
      "region,runs,elapsed_ns,event,group,value,raw,enabled_ns,running_ns,fraction_running,"
      "status,metric,metric_unit\n";
  for (const auto& report : reports) {
    for (std::size_t i = 0; i < report.counts.size(); ++i) {
      const EventCount& count = report.counts[i];
      const auto& metric = report.metrics[i];
      fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{:.17g},{},{},{},{:.6f},{},{},{}\n",
                     csv_cell(report.region), report.runs, report.elapsed_ns, csv_cell(count.name),
                     count.group, count.scaled.value * count.scale, count.reading.value,
                     count.reading.enabled, count.reading.running, count.scaled.fraction_running,
                     count_status_name(count),
                     metric ? fmt::format("{:.17g}", metric->value) : std::string(),
                     metric ? csv_cell(metric->unit) : std::string());
    }
  }
  return out;
}

}  // namespace perfscope
