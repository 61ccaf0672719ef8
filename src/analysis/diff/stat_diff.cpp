#include "perfscope/analysis/diff/stat_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "perfscope/core/safe_text.hpp"

namespace perfscope {

namespace {

std::string names_of(const StatFile& file) {
  std::string out;
  for (const auto& event : file.events) {
    if (!out.empty()) out += ", ";
    out += event.name;
  }
  return out.empty() ? std::string("none") : out;
}

const StatFileEvent* find_event(const StatFile& file, std::string_view name) {
  for (const auto& event : file.events) {
    if (event.name == name) return &event;
  }
  return nullptr;
}

// Whether a comparison crosses a threshold: significant, and its estimate beyond the limit
// in the threshold's direction.
bool crosses(const StatThreshold& threshold, const CountComparison& comparison) {
  if (std::isnan(comparison.change_percent)) return false;
  if (threshold.increase) {
    return comparison.verdict == CountVerdict::slower &&
           comparison.change_percent > threshold.percent;
  }
  return comparison.verdict == CountVerdict::faster &&
         comparison.change_percent < threshold.percent;
}

std::string value_text(double value, std::string_view unit) {
  if (std::isnan(value)) return "-";
  if (!unit.empty()) return fmt::format("{:.3f} {}", value, unit);
  return std::fabs(value) >= 1000 ? fmt::format("{:.0f}", value) : fmt::format("{:.2f}", value);
}

std::string percent_text(double value) {
  return std::isnan(value) ? std::string("-") : fmt::format("{:+.2f}", value);
}

nlohmann::json number(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
}

nlohmann::json side_json(const RepeatSummary& summary) {
  return {
      {"runs", summary.runs}, {"mean", number(summary.mean)}, {"stddev", number(summary.stddev)}};
}

}  // namespace

StatThreshold parse_stat_threshold(std::string_view text) {
  StatThreshold threshold;
  threshold.text = std::string(text);
  auto fail = [&]() -> StatThreshold {
    throw std::invalid_argument(fmt::format(
        "--fail-if '{}': the form is EVENT>+P% (fail on a significant increase of more than P "
        "%) or EVENT<-P% (a significant decrease), e.g. 'task-clock>+3%'",
        text));
  };
  std::size_t op = text.find_first_of("<>");
  if (op == std::string_view::npos || op == 0) return fail();
  threshold.event = std::string(text.substr(0, op));
  threshold.increase = text[op] == '>';
  std::string_view number_text = text.substr(op + 1);
  if (!number_text.ends_with('%')) return fail();
  number_text.remove_suffix(1);
  std::string digits(number_text);
  char* end = nullptr;
  double value = std::strtod(digits.c_str(), &end);
  if (digits.empty() || end != digits.c_str() + digits.size() || !std::isfinite(value)) {
    return fail();
  }
  if ((threshold.increase && value < 0) || (!threshold.increase && value > 0)) {
    throw std::invalid_argument(
        fmt::format("--fail-if '{}': '>' takes an increase (+P%), '<' a decrease (-P%)", text));
  }
  threshold.percent = value;
  return threshold;
}

bool StatDiff::regression() const noexcept {
  return std::any_of(events.begin(), events.end(),
                     [](const StatEventDiff& event) { return !event.failed.empty(); });
}

StatDiff diff_stat_files(const StatFile& base, const StatFile& current,
                         const StatDiffOptions& options) {
  StatDiff diff;
  diff.base_path = base.path;
  diff.current_path = current.path;
  diff.base_target = base.target;
  diff.current_target = current.target;
  diff.base_runs = base.runs;
  diff.current_runs = current.runs;
  diff.confidence = options.confidence;
  for (const auto& event : base.events) {
    const StatFileEvent* other = find_event(current, event.name);
    if (!other) {
      diff.only_in_base.push_back(event.name);
      continue;
    }
    StatEventDiff out;
    out.name = event.name;
    out.unit = event.unit;
    out.comparison = compare_counts(event.summary, other->summary, options.confidence);
    out.resolve_percent = options.resolve_percent;
    for (const auto& threshold : options.thresholds) {
      if (threshold.event != event.name) continue;
      if (threshold.percent != 0) out.resolve_percent = std::fabs(threshold.percent);
      if (crosses(threshold, out.comparison)) out.failed.push_back(threshold.text);
    }
    out.repeats_needed =
        repeats_to_resolve(event.summary, other->summary, out.resolve_percent, options.confidence);
    diff.events.push_back(std::move(out));
  }
  for (const auto& event : current.events) {
    if (!find_event(base, event.name)) diff.only_in_current.push_back(event.name);
  }
  bool only_elapsed = diff.events.size() == 1 && diff.events[0].name == "elapsed";
  if (diff.events.empty() || (only_elapsed && base.events.size() + current.events.size() > 2)) {
    throw std::runtime_error(fmt::format(
        "'{}' and '{}' count different events ({}: {}; {}: {}): record both with the same -e",
        base.path, current.path, base.path, names_of(base), current.path, names_of(current)));
  }
  for (const auto& threshold : options.thresholds) {
    if (!find_event(base, threshold.event) || !find_event(current, threshold.event)) {
      throw std::runtime_error(
          fmt::format("--fail-if '{}': no event '{}' in both files (the events compared: {})",
                      threshold.text, threshold.event, [&] {
                        std::string names;
                        for (const auto& event : diff.events)
                          names += (names.empty() ? "" : ", ") + event.name;
                        return names;
                      }()));
    }
  }
  return diff;
}

std::string render_stat_diff(const StatDiff& diff, bool raw_names) {
  auto shown = [raw_names](std::string_view text) {
    return raw_names ? std::string(text) : terminal_safe(text);
  };
  fmt::memory_buffer out;
  auto line = [&](std::string_view text) {
    out.append(text);
    out.push_back('\n');
  };
  int level = static_cast<int>(std::lround(diff.confidence * 100));
  fmt::format_to(std::back_inserter(out), "# BASE: {} ({} run{} of {})\n", shown(diff.base_path),
                 diff.base_runs, diff.base_runs == 1 ? "" : "s", shown(diff.base_target));
  fmt::format_to(std::back_inserter(out), "# NEW:  {} ({} run{} of {})\n", shown(diff.current_path),
                 diff.current_runs, diff.current_runs == 1 ? "" : "s", shown(diff.current_target));
  fmt::format_to(std::back_inserter(out),
                 "# change: (NEW mean - BASE mean) / BASE mean, with its {} % confidence interval "
                 "(Welch's t-test);\n# every count is a cost (more is slower); repeats: runs per "
                 "side that would resolve a change of the size shown (80 % power)\n",
                 level);
  line("#");
  std::vector<std::array<std::string, 7>> rows;
  rows.push_back({"event", "BASE mean", "NEW mean", "change %", fmt::format("{} % CI", level),
                  "verdict", "repeats"});
  for (const auto& event : diff.events) {
    const CountComparison& c = event.comparison;
    std::string ci = std::isnan(c.ci_low_percent)
                         ? std::string("-")
                         : fmt::format("[{}, {}]", percent_text(c.ci_low_percent),
                                       percent_text(c.ci_high_percent));
    std::string repeats = event.repeats_needed ? fmt::format("{} for {:g} %", *event.repeats_needed,
                                                             event.resolve_percent)
                                               : std::string("-");
    rows.push_back({shown(event.name), value_text(c.base.mean, shown(event.unit)),
                    value_text(c.current.mean, event.unit), percent_text(c.change_percent), ci,
                    count_verdict_name(c.verdict), repeats});
  }
  std::array<std::size_t, 7> widths{};
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string text = r == 0 ? "# " : "  ";
    for (std::size_t c = 0; c < rows[r].size(); ++c) {
      if (c != 0) text += "  ";
      // The event and the verdict read left to right; numbers line up on the right.
      bool left = c == 0 || c == 5 || c == 6;
      text += left ? fmt::format("{:<{}}", rows[r][c], widths[c])
                   : fmt::format("{:>{}}", rows[r][c], widths[c]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    line(text);
  }
  for (const auto& event : diff.events) {
    if (event.comparison.verdict == CountVerdict::too_few_runs) {
      fmt::format_to(std::back_inserter(out),
                     "# {}: a verdict needs 2 or more runs on each side (stat -r N, N >= 5 "
                     "recommended)\n",
                     shown(event.name));
    }
    for (const auto& failed : event.failed) {
      fmt::format_to(std::back_inserter(out),
                     "# REGRESSION {}: {} % ({}), beyond the threshold and significant\n",
                     shown(failed), percent_text(event.comparison.change_percent),
                     count_verdict_name(event.comparison.verdict));
    }
  }
  if (!diff.only_in_base.empty() || !diff.only_in_current.empty()) {
    auto join = [&](const std::vector<std::string>& names) {
      std::string text;
      for (const auto& name : names) text += (text.empty() ? "" : ", ") + shown(name);
      return text.empty() ? std::string("none") : text;
    };
    fmt::format_to(std::back_inserter(out), "# not compared: only in BASE: {}; only in NEW: {}\n",
                   join(diff.only_in_base), join(diff.only_in_current));
  }
  return fmt::to_string(out);
}

std::string stat_diff_json(const StatDiff& diff) {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& event : diff.events) {
    const CountComparison& c = event.comparison;
    events.push_back({
        {"name", event.name},
        {"unit", event.unit},
        {"base", side_json(c.base)},
        {"new", side_json(c.current)},
        {"difference", number(c.difference)},
        {"ci", {number(c.ci_low), number(c.ci_high)}},
        {"change_percent", number(c.change_percent)},
        {"ci_percent", {number(c.ci_low_percent), number(c.ci_high_percent)}},
        {"degrees_of_freedom", number(c.degrees_of_freedom)},
        {"p_value", number(c.p_value)},
        {"verdict", count_verdict_name(c.verdict)},
        {"resolve_percent", event.resolve_percent},
        {"repeats_needed",
         event.repeats_needed ? nlohmann::json(*event.repeats_needed) : nlohmann::json()},
        {"failed_thresholds", event.failed},
    });
  }
  nlohmann::json document = {
      {"schema", "perfscope-stat-diff"},
      {"version", 1},
      {"confidence", diff.confidence},
      {"base", {{"path", diff.base_path}, {"target", diff.base_target}, {"runs", diff.base_runs}}},
      {"new",
       {{"path", diff.current_path}, {"target", diff.current_target}, {"runs", diff.current_runs}}},
      {"events", std::move(events)},
      {"only_in_base", diff.only_in_base},
      {"only_in_new", diff.only_in_current},
      {"regression", diff.regression()},
  };
  return document.dump(1) + "\n";
}

}  // namespace perfscope
