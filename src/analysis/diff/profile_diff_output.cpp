// The text and JSON forms of a profile diff.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "perfscope/analysis/diff/profile_diff.hpp"
#include "perfscope/core/safe_text.hpp"

namespace perfscope {

namespace {

std::string compact_count(std::uint64_t count) {
  if (count < 1000) return fmt::format("{}", count);
  if (count < 1000000) return fmt::format("{:.1f}K", static_cast<double>(count) / 1e3);
  return fmt::format("{:.1f}M", static_cast<double>(count) / 1e6);
}

std::string share(const ProfileDiffSide& side, double percent) {
  return side.present || percent > 0 ? fmt::format("{:.2f}%", percent) : std::string();
}

nlohmann::json side_json(const ProfileDiffSide& side) {
  return {{"present", side.present},
          {"self_percent", side.self_percent},
          {"total_percent", side.total_percent},
          {"self_samples", side.self_samples},
          {"total_samples", side.total_samples},
          {"self_period", side.self_period},
          {"total_period", side.total_period}};
}

// Two significant digits ("0.31", "4.2e-05"), below double's reach "<1e-300"; "*" after a
// change beyond the table's noise.
std::string p_value_text(const ProfileDiffRow& row) {
  std::string text =
      row.p_value < 1e-300 ? std::string("<1e-300") : fmt::format("{:.2g}", row.p_value);
  if (row.significant) text += '*';
  return text;
}

const char* status_name(ProfileDiffStatus status) {
  switch (status) {
    case ProfileDiffStatus::changed: return "changed";
    case ProfileDiffStatus::appeared: return "appeared";
    case ProfileDiffStatus::disappeared: return "disappeared";
  }
  return "";
}

}  // namespace

std::string render_profile_diff(const ProfileDiff& diff, const std::string& base_name,
                                const std::string& current_name, bool raw_names) {
  auto shown = [raw_names](std::string_view text) {
    return raw_names ? std::string(text) : terminal_safe(text);
  };
  fmt::memory_buffer out;
  auto line = [&](std::string_view text) {
    out.append(text);
    out.push_back('\n');
  };
  auto described = [](const std::string& name, const std::string& command) {
    return command.empty() ? name : fmt::format("{} ({})", name, command);
  };
  fmt::format_to(std::back_inserter(out), "# BASE: {}\n# NEW:  {}\n",
                 shown(described(base_name, diff.base_command)),
                 shown(described(current_name, diff.current_command)));
  line(
      "# Compared by share: each row's % of its own recording's event count, so recordings of "
      "different lengths, sampling rates or periods compare. Delta: NEW % - BASE % (points); "
      "Ratio: NEW % / BASE %. p-value: the chance of a change this large by sampling alone "
      "(a two-proportion test of the samples); * marks a change beyond the noise of the whole "
      "table (p-value x rows < 0.05).");
  line(
      "# Rows match by the text of their keys: DSOs by file name, symbols by name (not by "
      "address or build id).");
  if (!diff.only_in_base.empty() || !diff.only_in_current.empty()) {
    auto join = [&](const std::vector<std::string>& names) {
      std::string text;
      for (const auto& name : names) text += (text.empty() ? "" : ", ") + shown(name);
      return text.empty() ? std::string("none") : text;
    };
    fmt::format_to(std::back_inserter(out),
                   "# Not compared: events only in BASE: {}; only in NEW: {}\n",
                   join(diff.only_in_base), join(diff.only_in_current));
  }
  line("#");
  for (const auto& event : diff.events) {
    fmt::format_to(std::back_inserter(out), "# Event '{}'\n", shown(event.name));
    fmt::format_to(std::back_inserter(out),
                   "# BASE: {} samples, event count {}; NEW: {} samples, event count {}\n",
                   compact_count(event.base_samples), event.base_period,
                   compact_count(event.current_samples), event.current_period);
    if (!event.rate_note.empty())
      fmt::format_to(std::back_inserter(out), "# {}\n", event.rate_note);
    line("#");

    std::vector<std::string> titles;
    if (diff.children) {
      titles = {"Base Incl", "New Incl",   "Delta Incl", "Base Self",
                "New Self",  "Delta Self", "Ratio",      "p-value"};
    } else {
      titles = {"Baseline", "New", "Delta", "Ratio", "p-value"};
    }
    std::size_t numeric = titles.size();
    for (ReportSortKey key : diff.sort) titles.emplace_back(report_sort_key_title(key));
    std::vector<std::vector<std::string>> cells;
    for (const auto& row : event.rows) {
      std::vector<std::string> cell;
      std::string ratio = row.status == ProfileDiffStatus::disappeared ? std::string("gone")
                          : row.ratio ? fmt::format("{:.3f}", *row.ratio)
                                      : std::string("new");
      if (diff.children) {
        cell = {share(row.base, row.base.total_percent),
                share(row.current, row.current.total_percent),
                fmt::format("{:+.2f}%", row.total_delta),
                share(row.base, row.base.self_percent),
                share(row.current, row.current.self_percent),
                fmt::format("{:+.2f}%", row.self_delta),
                ratio,
                p_value_text(row)};
      } else {
        cell = {share(row.base, row.base.self_percent),
                share(row.current, row.current.self_percent),
                fmt::format("{:+.2f}%", row.self_delta), ratio, p_value_text(row)};
      }
      for (const std::string& key : row.keys) cell.push_back(shown(key));
      cells.push_back(std::move(cell));
    }
    std::vector<std::size_t> widths(titles.size());
    for (std::size_t c = 0; c < titles.size(); ++c) {
      widths[c] = titles[c].size();
      for (const auto& cell : cells) widths[c] = std::max(widths[c], cell[c].size());
    }
    auto emit = [&](std::string_view lead, const std::vector<std::string>& values) {
      std::string text(lead);
      for (std::size_t c = 0; c < values.size(); ++c) {
        if (c != 0) text += "  ";
        text += c < numeric ? fmt::format("{:>{}}", values[c], widths[c])
                            : fmt::format("{:<{}}", values[c], widths[c]);
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      line(text);
    };
    emit("# ", titles);
    std::vector<std::string> dots;
    for (std::size_t width : widths) dots.emplace_back(width, '.');
    emit("# ", dots);
    line("#");
    std::size_t key_column = 2;
    for (std::size_t c = 0; c < numeric; ++c) key_column += widths[c] + 2;
    for (std::size_t r = 0; r < event.rows.size(); ++r) {
      emit("  ", cells[r]);
      const ProfileDiffRow& row = event.rows[r];
      if (row.status != ProfileDiffStatus::changed) {
        fmt::format_to(std::back_inserter(out), "{:{}}^ {}: {}\n", "", key_column,
                       status_name(row.status), shown(row.explanation));
      }
    }
    line("");
  }
  return fmt::to_string(out);
}

std::string profile_diff_json(const ProfileDiff& diff, const std::string& base_name,
                              const std::string& current_name) {
  nlohmann::json sort = nlohmann::json::array();
  for (ReportSortKey key : diff.sort) sort.push_back(report_sort_key_name(key));
  nlohmann::json events = nlohmann::json::array();
  for (const auto& event : diff.events) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : event.rows) {
      nlohmann::json keys = nlohmann::json::object();
      for (std::size_t k = 0; k < diff.sort.size() && k < row.keys.size(); ++k) {
        keys[std::string(report_sort_key_name(diff.sort[k]))] = row.keys[k];
      }
      rows.push_back({{"keys", std::move(keys)},
                      {"status", status_name(row.status)},
                      {"base", side_json(row.base)},
                      {"new", side_json(row.current)},
                      {"delta", row.delta},
                      {"self_delta", row.self_delta},
                      {"total_delta", row.total_delta},
                      {"ratio", row.ratio ? nlohmann::json(*row.ratio) : nlohmann::json()},
                      {"p_value", row.p_value},
                      {"significant", row.significant},
                      {"explanation", row.explanation}});
    }
    events.push_back(
        {{"name", event.name},
         {"base", {{"samples", event.base_samples}, {"period", event.base_period}}},
         {"new", {{"samples", event.current_samples}, {"period", event.current_period}}},
         {"rate_note", event.rate_note},
         {"rows", std::move(rows)}});
  }
  nlohmann::json document = {
      {"schema", "perfscope-profile-diff"},
      {"version", 1},
      {"compared_by", "share"},
      {"base", {{"path", base_name}, {"command", diff.base_command}}},
      {"new", {{"path", current_name}, {"command", diff.current_command}}},
      {"sort", std::move(sort)},
      {"children", diff.children},
      {"events", std::move(events)},
      {"only_in_base", diff.only_in_base},
      {"only_in_new", diff.only_in_current},
  };
  // Symbol names are raw bytes from ELF files: invalid UTF-8 is replaced, never an exception.
  return document.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace perfscope
