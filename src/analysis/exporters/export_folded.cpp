// Folded stacks as FlameGraph's stackcollapse-perf.pl writes them by default, so that
// flamegraph.pl, inferno and speedscope treat our output like theirs: the command name first
// (spaces made '_'), function names tidied (no argument lists, ';' made ':', no quotes, control
// bytes and invalid UTF-8 escaped as core/safe_text.hpp's folded_safe: one stack a line),
// unresolved frames named by their DSO ("[libc.so.6]"), kernel frames "_[k]", inlined
// frames "_[i]". In a profile with off-CPU samples, time events are weighted by nanoseconds.
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "analysis/exporters/exporter_common.hpp"
#include "perfscope/analysis/exporters/profile_exporters.hpp"

namespace perfscope {

namespace {

std::string tidy_function_name(std::string_view name) {
  std::string tidy(name);
  std::replace(tidy.begin(), tidy.end(), ';', ':');
  // Argument lists go (overloads merge, as in stackcollapse-perf), but not the parentheses of
  // "(anonymous namespace)" nor those inside Go names such as "pkg.(*T).method".
  bool go_style = tidy.find(".(") != std::string::npos && tidy.find(").") != std::string::npos;
  if (!go_style) {
    constexpr std::string_view anonymous = "(anonymous namespace)";
    for (std::size_t at = tidy.find('('); at != std::string::npos; at = tidy.find('(', at + 1)) {
      if (std::string_view(tidy).substr(at).starts_with(anonymous)) continue;
      if (at != 0) tidy.erase(at);
      break;
    }
  }
  std::erase_if(tidy, [](char c) { return c == '"' || c == '\''; });
  return folded_safe(tidy);
}

std::string folded_frame_name(const Profile& profile, const ProfileFrame& frame) {
  const ProfileFunction& function = profile.functions[frame.function];
  std::string name;
  if (function.resolved) {
    name = tidy_function_name(function.name);
  } else if (function.dso != no_index) {
    name = "[";
    name += folded_safe(detail::short_dso_name(profile.dsos[function.dso].path));
    name += "]";
  } else {
    name = "[unknown]";
  }
  if (frame.kernel) {
    name += "_[k]";
  } else if (frame.inlined) {
    name += "_[i]";
  }
  return name;
}

std::string folded_comm(std::string_view comm) {
  if (comm.empty()) return "[unknown]";
  std::string name = folded_safe(comm);
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

struct StackKey {
  std::uint32_t stack, thread, event;
  bool operator==(const StackKey&) const = default;
};
struct StackKeyHash {
  std::size_t operator()(const StackKey& key) const noexcept {
    std::uint64_t h =
        (std::uint64_t{key.stack} << 32) ^ (std::uint64_t{key.thread} << 8) ^ key.event;
    return std::hash<std::uint64_t>{}(h * 0x9e3779b97f4a7c15ull);
  }
};

}  // namespace

void write_folded(const Profile& profile, std::ostream& out) {
  // Counts of different events do not add up; with several, each event is its own root.
  bool event_roots = export_detail::events_with_samples(profile) > 1;

  // With off-CPU samples the time events weigh their nanoseconds: a blocked interval counts
  // for how long it lasted, and on-CPU time compares with it.
  std::vector<bool> by_time(profile.events.size(), false);
  if (export_detail::has_off_cpu_samples(profile)) {
    for (std::size_t e = 0; e < profile.events.size(); ++e) {
      by_time[e] = export_detail::is_clock_event(profile.events[e].name);
    }
  }
  std::unordered_map<StackKey, std::uint64_t, StackKeyHash> counts;
  export_detail::for_each_sample_group(profile, [&](const ProfileSampleGroup& group) {
    bool time = group.event < by_time.size() && by_time[group.event];
    counts[StackKey{group.stack, group.thread, event_roots ? group.event : 0u}] +=
        time ? group.period : group.samples;
  });

  std::vector<std::string> frame_names(profile.frames.size());
  std::vector<bool> frame_named(profile.frames.size(), false);
  std::vector<std::uint32_t> chain;
  std::vector<std::pair<std::string, std::uint64_t>> lines;
  lines.reserve(counts.size());
  for (const auto& [key, count] : counts) {
    std::string line;
    if (event_roots) {
      line += '[';
      line += key.event < profile.events.size() ? folded_safe(profile.events[key.event].name) : "?";
      line += "];";
    }
    line += folded_comm(key.thread < profile.threads.size() ? profile.threads[key.thread].comm
                                                            : std::string_view{});
    chain.clear();
    for (std::uint32_t s = key.stack; s != no_index; s = profile.stacks[s].parent) {
      chain.push_back(profile.stacks[s].frame);
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (!frame_named[*it]) {
        frame_names[*it] = folded_frame_name(profile, profile.frames[*it]);
        frame_named[*it] = true;
      }
      line += ';';
      line += frame_names[*it];
    }
    lines.emplace_back(std::move(line), count);
  }
  std::sort(lines.begin(), lines.end());

  export_detail::TextSink sink(out);
  for (std::size_t i = 0; i < lines.size();) {
    std::uint64_t count = 0;
    std::size_t j = i;
    // Different stacks can fold to the same text (two addresses in one function).
    for (; j < lines.size() && lines[j].first == lines[i].first; ++j) count += lines[j].second;
    sink.append(lines[i].first);
    sink.format(" {}\n", count);
    i = j;
  }
  sink.finish();
}

}  // namespace perfscope
