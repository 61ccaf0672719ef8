#include "perfscope/analysis/diff/profile_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "analysis/path_names.hpp"

namespace perfscope {

namespace {

using detail::file_name_of;

// One profile's table of one event, with what the explanations need to know about it.
struct SideTable {
  const Profile* profile = nullptr;
  ReportTable table;
  std::map<std::vector<std::string>, std::vector<std::uint32_t>> rows_by_keys;
  std::set<std::string, std::less<>> dsos;  // file names of the DSOs with samples
  // Function name -> the DSOs it has self samples in.
  std::unordered_map<std::string, std::set<std::string>> function_dsos;

  std::string dso_of(const ReportRow& row) const {
    if (row.function == no_index) return {};
    const ProfileFunction& function = profile->functions[row.function];
    if (function.dso == no_index) return "[unknown]";
    return std::string(file_name_of(profile->dsos[function.dso].path));
  }
};

SideTable side_table(const Profile& profile, std::uint32_t event,
                     const ProfileDiffOptions& options) {
  SideTable side;
  side.profile = &profile;
  ReportOptions report;
  report.sort = options.sort;
  // The inclusive shares are computed whenever there are chains: a row without samples of its
  // own may still be on the stacks, which the explanations say.
  report.children = profile.events[event].has_callchains;
  report.call_graph = ReportCallGraph::none;
  side.table = build_report_table(profile, event, report);
  for (std::uint32_t r = 0; r < side.table.rows.size(); ++r) {
    const ReportRow& row = side.table.rows[r];
    side.rows_by_keys[row.keys].push_back(r);
    if (row.self_period == 0 || row.function == no_index) continue;
    std::string dso = side.dso_of(row);
    side.dsos.insert(dso);
    side.function_dsos[profile.functions[row.function].name].insert(dso);
  }
  return side;
}

// The function that called the row's function in most of the row's own samples.
std::string top_caller(const Profile& profile, const ReportRow& row) {
  if (row.function == no_index) return {};
  std::unordered_map<std::uint32_t, std::uint64_t> periods;
  for (const auto& contribution : row.contributions) {
    if (!contribution.self) continue;
    std::uint32_t node = contribution.leaf;
    while (node != no_index &&
           profile.frames[profile.stacks[node].frame].function != row.function) {
      node = profile.stacks[node].parent;
    }
    while (node != no_index &&
           profile.frames[profile.stacks[node].frame].function == row.function) {
      node = profile.stacks[node].parent;
    }
    if (node != no_index)
      periods[profile.frames[profile.stacks[node].frame].function] += contribution.period;
  }
  std::uint32_t best = no_index;
  std::uint64_t best_period = 0;
  for (const auto& [function, period] : periods) {
    if (period > best_period || (period == best_period && function < best)) {
      best = function;
      best_period = period;
    }
  }
  if (best == no_index) return {};
  return fmt::format("called from {} ({:.0f} % of its samples)", profile.functions[best].name,
                     100.0 * static_cast<double>(best_period) /
                         static_cast<double>(std::max<std::uint64_t>(row.self_period, 1)));
}

// Why a row is in one profile only. `here`: the side with the row, `there`: the other side;
// `there_name`: "NEW" or "BASE".
std::string explain(const SideTable& here, const ReportRow& row, const SideTable& there,
                    const ProfileDiffSide& there_side, std::string_view there_name, bool children,
                    bool appeared) {
  std::vector<std::string> parts;
  // A row of a few samples can be missing from the other side by chance: with share p, the
  // other side's n samples hold about p * n of it, and none with probability e^(-p * n).
  double percent = here.table.percent(children ? row.total_period : row.self_period);
  std::uint64_t samples = children ? row.total_samples : row.self_samples;
  double expected = percent / 100.0 * static_cast<double>(there.table.samples);
  bool rare = expected < 3;
  if (!children && there_side.total_period > 0) {
    parts.push_back(fmt::format(
        "no samples of its own in {}, but on its stacks ({:.2f} % inclusive): its time is now "
        "in its callees",
        there_name, there_side.total_percent));
  } else if (row.function != no_index) {
    const ProfileFunction& function = here.profile->functions[row.function];
    std::string dso = here.dso_of(row);
    if (!dso.empty() && !there.dsos.contains(dso)) {
      parts.push_back(fmt::format("nothing in {} was sampled in {}", dso, there_name));
    } else if (!function.resolved) {
      parts.push_back(
          "an unresolved address: it matches only the same offset in the same DSO, and a "
          "rebuild moves code (give both binaries symbols)");
    } else if (auto other = there.function_dsos.find(function.name);
               other != there.function_dsos.end() && !other->second.contains(dso)) {
      parts.push_back(
          fmt::format("{} samples {} in {}", there_name, function.name, *other->second.begin()));
    } else if (!rare) {
      parts.push_back(fmt::format("no samples in {}: {}", there_name,
                                  appeared
                                      ? "newly run, renamed, or no longer inlined"
                                      : "not run any more, renamed, or inlined into a caller"));
    }
  } else if (!rare) {
    parts.push_back(fmt::format("no samples in {}", there_name));
  }
  if (rare) {
    parts.push_back(fmt::format(
        "{} sample{} in {}: at that share {}'s {} samples would hold about {:.1f}, so the "
        "difference may be chance",
        samples, samples == 1 ? "" : "s", appeared ? "NEW" : "BASE", there_name,
        there.table.samples, expected));
  }
  if (appeared) {
    std::string caller = top_caller(*here.profile, row);
    if (!caller.empty()) parts.push_back(std::move(caller));
  }
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : "; ") + part;
  return text;
}

void add_side(ProfileDiffSide& side, const ReportTable& table, const ReportRow& row) {
  side.self_period += row.self_period;
  side.total_period += row.total_period;
  side.self_samples += row.self_samples;
  side.total_samples += row.total_samples;
  side.self_percent = table.percent(side.self_period);
  side.total_percent = table.percent(side.total_period);
}

// The two-sided p-value of the difference between two binomial proportions, `hits` of `tries`
// on each side (the pooled two-proportion z-test).
double two_proportion_p_value(std::uint64_t base_hits, std::uint64_t base_tries,
                              std::uint64_t current_hits, std::uint64_t current_tries) {
  if (base_tries == 0 || current_tries == 0) return 1;
  const double n1 = static_cast<double>(base_tries), n2 = static_cast<double>(current_tries);
  const double p1 = static_cast<double>(base_hits) / n1;
  const double p2 = static_cast<double>(current_hits) / n2;
  const double pooled = static_cast<double>(base_hits + current_hits) / (n1 + n2);
  const double error = std::sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
  if (error == 0) return p1 == p2 ? 1 : 0;
  return std::erfc(std::fabs(p2 - p1) / error / std::sqrt(2.0));
}

std::string mean_period_text(std::uint64_t period, std::uint64_t samples, std::string_view event) {
  double mean =
      static_cast<double>(period) / static_cast<double>(std::max<std::uint64_t>(samples, 1));
  bool clock = event.starts_with("cpu-clock") || event.starts_with("task-clock");
  if (clock) return fmt::format("{:.0f} us", mean / 1000.0);
  return fmt::format("{:.0f} events", mean);
}

}  // namespace

ProfileDiff diff_profiles(const Profile& base, const Profile& current,
                          const ProfileDiffOptions& options) {
  ProfileDiff diff;
  diff.sort = options.sort;
  diff.children = options.children;
  diff.base_command = base.summary.command_line;
  diff.current_command = current.summary.command_line;
  auto sampled = [](const Profile& profile) {
    std::vector<std::string> names;
    for (const auto& event : profile.events) {
      if (event.samples != 0) names.push_back(event.name);
    }
    return names;
  };
  std::vector<std::string> base_events = sampled(base), current_events = sampled(current);
  // ":HG" is the suffix perf derives for an event counted in host and guest alike (a recording
  // without event names, such as one cut short before them): the same event as without it.
  auto plain = [](std::string_view name) {
    return name.ends_with(":HG") ? name.substr(0, name.size() - 3) : name;
  };
  auto index_of = [&](const Profile& profile, const std::string& name) {
    for (std::uint32_t e = 0; e < profile.events.size(); ++e) {
      if (profile.events[e].samples != 0 && plain(profile.events[e].name) == plain(name)) {
        return e;
      }
    }
    return no_index;
  };
  auto join = [](const std::vector<std::string>& names) {
    std::string text;
    for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
    return text.empty() ? std::string("no samples") : text;
  };
  for (const auto& name : base_events) {
    if (index_of(current, name) == no_index) diff.only_in_base.push_back(name);
  }
  for (const auto& name : current_events) {
    if (index_of(base, name) == no_index) diff.only_in_current.push_back(name);
  }
  for (const auto& name : base_events) {
    std::uint32_t bi = index_of(base, name), ci = index_of(current, name);
    if (ci == no_index) continue;
    if (options.children &&
        (!base.events[bi].has_callchains || !current.events[ci].has_callchains)) {
      throw std::runtime_error(fmt::format(
          "--children needs call chains in both recordings (event '{}' has {} in BASE and {} in "
          "NEW): record with -g or --call-graph dwarf",
          name, base.events[bi].has_callchains ? "them" : "none",
          current.events[ci].has_callchains ? "them" : "none"));
    }
    SideTable base_side = side_table(base, bi, options);
    SideTable current_side = side_table(current, ci, options);
    ProfileDiffEvent event;
    event.name = name;
    event.base_samples = base_side.table.samples;
    event.current_samples = current_side.table.samples;
    event.base_period = base_side.table.period;
    event.current_period = current_side.table.period;
    event.base_total = std::max(base_side.table.percent_base, base_side.table.period);
    event.current_total = std::max(current_side.table.percent_base, current_side.table.period);
    double base_mean = static_cast<double>(event.base_period) /
                       static_cast<double>(std::max<std::uint64_t>(event.base_samples, 1));
    double current_mean = static_cast<double>(event.current_period) /
                          static_cast<double>(std::max<std::uint64_t>(event.current_samples, 1));
    if (base_mean > 0 && current_mean > 0 &&
        std::max(base_mean, current_mean) > 1.1 * std::min(base_mean, current_mean)) {
      event.rate_note =
          fmt::format("BASE took a sample every {} and NEW every {} (different rates or periods)",
                      mean_period_text(event.base_period, event.base_samples, name),
                      mean_period_text(event.current_period, event.current_samples, name));
    }

    std::map<std::vector<std::string>, ProfileDiffRow> rows;
    for (const auto& row : base_side.table.rows) {
      ProfileDiffRow& out = rows[row.keys];
      out.keys = row.keys;
      add_side(out.base, base_side.table, row);
    }
    for (const auto& row : current_side.table.rows) {
      ProfileDiffRow& out = rows[row.keys];
      out.keys = row.keys;
      add_side(out.current, current_side.table, row);
    }
    for (auto& [keys, row] : rows) {
      auto primary = [&](const ProfileDiffSide& side) {
        return options.children ? side.total_period : side.self_period;
      };
      row.base.present = primary(row.base) != 0;
      row.current.present = primary(row.current) != 0;
      if (!row.base.present && !row.current.present) continue;
      auto primary_percent = [&](const ProfileDiffSide& side) {
        return options.children ? side.total_percent : side.self_percent;
      };
      if (std::max(primary_percent(row.base), primary_percent(row.current)) <
          options.percent_limit) {
        continue;
      }
      row.self_delta = row.current.self_percent - row.base.self_percent;
      row.total_delta = row.current.total_percent - row.base.total_percent;
      row.delta = options.children ? row.total_delta : row.self_delta;
      if (primary_percent(row.base) > 0) {
        row.ratio = primary_percent(row.current) / primary_percent(row.base);
      }
      auto primary_samples = [&](const ProfileDiffSide& side) {
        return options.children ? side.total_samples : side.self_samples;
      };
      row.p_value =
          two_proportion_p_value(primary_samples(row.base), base_side.table.samples,
                                 primary_samples(row.current), current_side.table.samples);
      if (!row.current.present) {
        row.status = ProfileDiffStatus::disappeared;
        const ReportRow& first = base_side.table.rows[base_side.rows_by_keys[keys].front()];
        row.explanation =
            explain(base_side, first, current_side, row.current, "NEW", options.children, false);
      } else if (!row.base.present) {
        row.status = ProfileDiffStatus::appeared;
        const ReportRow& first = current_side.table.rows[current_side.rows_by_keys[keys].front()];
        row.explanation =
            explain(current_side, first, base_side, row.base, "BASE", options.children, true);
      }
      event.rows.push_back(std::move(row));
    }
    for (ProfileDiffRow& row : event.rows) {
      row.significant = row.p_value * static_cast<double>(event.rows.size()) < 0.05;
    }
    std::sort(event.rows.begin(), event.rows.end(),
              [](const ProfileDiffRow& a, const ProfileDiffRow& b) {
                double da = std::fabs(a.delta), db = std::fabs(b.delta);
                if (da != db) return da > db;
                double ma = std::max(a.base.self_percent, a.current.self_percent);
                double mb = std::max(b.base.self_percent, b.current.self_percent);
                if (ma != mb) return ma > mb;
                return a.keys < b.keys;
              });
    diff.events.push_back(std::move(event));
  }
  if (diff.events.empty()) {
    throw std::runtime_error(fmt::format(
        "the recordings have no sampled event in common (BASE: {}; NEW: {}): record both with "
        "the same -e",
        join(base_events), join(current_events)));
  }
  return diff;
}

}  // namespace perfscope
