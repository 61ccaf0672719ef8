#include "perfscope/analysis/view/profile_view.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "analysis/exporters/exporter_common.hpp"
#include "perfscope/analysis/profile/off_cpu_profile.hpp"

namespace perfscope {

namespace {

using export_detail::TextSink;

struct TreeNode {
  std::uint32_t function = no_index;  // no_index: the root
  std::uint64_t total = 0, self = 0;
  std::vector<std::uint32_t> children;
};

class TreeBuilder {
 public:
  TreeBuilder() { nodes_.emplace_back(); }

  // Adds `weight` along `path` (function indexes from the root down).
  void add(const std::vector<std::uint32_t>& path, std::uint64_t weight) {
    std::uint32_t at = 0;
    nodes_[0].total += weight;
    for (std::uint32_t function : path) {
      std::uint64_t key = (std::uint64_t{at} << 32) | function;
      auto found = child_of_.find(key);
      std::uint32_t child = 0;
      if (found == child_of_.end()) {
        child = static_cast<std::uint32_t>(nodes_.size());
        nodes_.push_back(TreeNode{function, 0, 0, {}});
        nodes_[at].children.push_back(child);
        child_of_.emplace(key, child);
      } else {
        child = found->second;
      }
      nodes_[child].total += weight;
      at = child;
    }
    nodes_[at].self += weight;
  }

  const std::vector<TreeNode>& nodes() const noexcept { return nodes_; }

 private:
  std::vector<TreeNode> nodes_;
  std::unordered_map<std::uint64_t, std::uint32_t> child_of_;
};

}  // namespace

std::string json_quoted(std::string_view text) {
  std::ostringstream out;
  TextSink sink(out);
  sink.json_string(text);
  sink.finish();
  return out.str();
}

ProfileView::ProfileView(Profile profile) : profile_(std::move(profile)) {
  if (!profile_.samples.empty() || profile_.timeline.size() != profile_.summary.samples) {
    throw std::invalid_argument(
        "ProfileView needs a profile built with ProfileView::profile_options() (sample groups "
        "and their times)");
  }
  // Wall time: the on-CPU clock events and the off-CPU one, as report --wall merges them.
  std::vector<bool> members(profile_.events.size(), false);
  bool off_cpu = false;
  for (std::uint32_t i = 0; i < profile_.events.size(); ++i) {
    const ProfileEvent& event = profile_.events[i];
    if (event.name == wall_time_event_name) continue;
    if (event.off_cpu) {
      members[i] = off_cpu = event.samples != 0;
    } else if (event_period_is_ns(event.name)) {
      // (Even without samples: a program that only waited has a wall time too.)
      members[i] = true;
      if (!wall_clock_event_) wall_clock_event_ = i;
    }
  }
  if (!off_cpu || !wall_clock_event_) {
    wall_clock_event_.reset();
    return;
  }
  ProfileEvent wall;
  wall.name = std::string(wall_time_event_name);
  for (std::uint32_t i = 0; i < profile_.events.size(); ++i) {
    if (!members[i]) continue;
    wall.samples += profile_.events[i].samples;
    wall.period += profile_.events[i].period;
    wall.period_read += profile_.events[i].period_read;
    wall.samples_read += profile_.events[i].samples_read;
    wall.has_callchains |= profile_.events[i].has_callchains;
  }
  wall_event_ = static_cast<std::uint32_t>(profile_.events.size());
  profile_.events.push_back(std::move(wall));
  members.push_back(false);
  wall_members_ = std::move(members);
}

bool ProfileView::event_selected(std::uint32_t event, std::uint32_t selected) const noexcept {
  if (event == selected) return true;
  return wall_event_ && selected == *wall_event_ && event < wall_members_.size() &&
         wall_members_[event];
}

ProfileOptions ProfileView::profile_options() {
  ProfileOptions options;
  options.keep_samples = false;
  options.keep_sample_times = true;
  return options;
}

std::vector<bool> ProfileView::groups_selected(const ViewSelection& selection) const {
  std::vector<bool> selected(profile_.sample_groups.size(), false);
  for (std::size_t i = 0; i < selected.size(); ++i) {
    const ProfileSampleGroup& group = profile_.sample_groups[i];
    if (!event_selected(group.event, selection.event)) continue;
    const ProfileThread& thread = profile_.threads[group.thread];
    if (selection.pid && thread.pid != *selection.pid) continue;
    if (selection.tid && thread.tid != *selection.tid) continue;
    if (!selection.comm.empty() && thread.comm != selection.comm) continue;
    if (!selection.dso.empty()) {
      if (group.stack == no_index) continue;
      const ProfileFunction& leaf =
          profile_.functions[profile_.frames[profile_.stacks[group.stack].frame].function];
      if (leaf.dso == no_index || profile_.dsos[leaf.dso].path != selection.dso) continue;
    }
    selected[i] = true;
  }
  return selected;
}

template <typename Visit>
void ProfileView::for_each_selected(const ViewSelection& selection, Visit&& visit) const {
  const std::vector<bool> selected = groups_selected(selection);
  profile_.timeline.for_each([&](std::uint32_t group, std::uint64_t time, std::uint64_t period) {
    if (!selected[group]) return;
    // An off-CPU interval is in the range when any of it is.
    const bool off_cpu = profile_.events[profile_.sample_groups[group].event].off_cpu;
    std::uint64_t begin = off_cpu && time >= period ? time - period : time;
    if (time < selection.from || begin >= selection.to) return;
    visit(profile_.sample_groups[group], time, period);
  });
}

std::string ProfileView::summary_json() const {
  std::ostringstream out;
  TextSink sink(out);
  sink.append("{\"events\":[");
  for (std::size_t i = 0; i < profile_.events.size(); ++i) {
    const ProfileEvent& event = profile_.events[i];
    if (i != 0) sink.put(',');
    sink.append("{\"name\":");
    sink.json_string(event.name);
    const bool wall = wall_event_ && i == *wall_event_;
    const bool in_wall = i < wall_members_.size() && wall_members_[i];
    sink.format(",\"samples\":{},\"period\":{},\"off_cpu\":{},\"wall\":{},\"in_wall\":{}}}",
                event.samples, event.period, event.off_cpu, wall, in_wall);
  }
  sink.append("],\"threads\":[");
  for (std::size_t i = 0; i < profile_.threads.size(); ++i) {
    const ProfileThread& thread = profile_.threads[i];
    if (i != 0) sink.put(',');
    sink.format("{{\"pid\":{},\"tid\":{},\"comm\":", thread.pid, thread.tid);
    sink.json_string(thread.comm);
    sink.put('}');
  }
  sink.append("],\"dsos\":[");
  for (std::size_t i = 0; i < profile_.dsos.size(); ++i) {
    if (i != 0) sink.put(',');
    sink.json_string(profile_.dsos[i].path);
  }
  const ProfileSummary& summary = profile_.summary;
  sink.format("],\"first_time\":{},\"last_time\":{},\"samples\":{},\"lost\":{},\"warnings\":[",
              summary.first_time, summary.last_time, summary.samples,
              std::max(summary.lost, summary.lost_samples));
  for (std::size_t i = 0; i < summary.warnings.size(); ++i) {
    if (i != 0) sink.put(',');
    sink.json_string(summary.warnings[i]);
  }
  sink.append("]}");
  sink.finish();
  return out.str();
}

std::string ProfileView::tree_json(const ViewSelection& selection,
                                   const ViewTreeOptions& options) const {
  // The selection's weight per stack, then each stack once along its path.
  std::vector<std::uint64_t> weight_of_stack(profile_.stacks.size(), 0);
  std::uint64_t samples = 0, unstacked = 0;
  for_each_selected(selection,
                    [&](const ProfileSampleGroup& group, std::uint64_t, std::uint64_t period) {
                      ++samples;
                      if (group.stack == no_index) {
                        unstacked += period;
                      } else {
                        weight_of_stack[group.stack] += period;
                      }
                    });
  TreeBuilder tree;
  std::vector<std::uint32_t> path;
  for (std::uint32_t stack = 0; stack < weight_of_stack.size(); ++stack) {
    if (weight_of_stack[stack] == 0) continue;
    path.clear();
    profile_.for_each_frame(stack,
                            [&](const ProfileFrame& frame) { path.push_back(frame.function); });
    if (!options.inverted) std::reverse(path.begin(), path.end());
    tree.add(path, weight_of_stack[stack]);
  }
  if (unstacked != 0) tree.add({}, unstacked);

  const std::vector<TreeNode>& nodes = tree.nodes();
  const std::uint64_t total = nodes[0].total;
  const auto least = static_cast<std::uint64_t>(options.min_share * static_cast<double>(total));
  std::uint64_t pruned = 0;
  std::ostringstream out;
  TextSink sink(out);
  // Depth-first, children heaviest first, with an explicit stack: call chains can be deep.
  struct Visit {
    std::uint32_t node;
    std::size_t next_child;
  };
  std::vector<Visit> visits{{0, 0}};
  std::vector<std::vector<std::uint32_t>> ordered(1);
  // What a node's pruned children weigh together: its last child, "(other)", so that the shown
  // children add up to the node (otherwise a third of a graph can be blank).
  std::vector<std::uint64_t> other_weight(1, 0);
  constexpr std::uint32_t other_node = no_index;
  auto sorted_children = [&](std::uint32_t node, std::uint64_t& other) {
    std::vector<std::uint32_t> children;
    other = 0;
    for (std::uint32_t child : nodes[node].children) {
      if (nodes[child].total >= least && nodes[child].total != 0) {
        children.push_back(child);
      } else {
        ++pruned;
        other += nodes[child].total;
      }
    }
    std::sort(children.begin(), children.end(),
              [&](std::uint32_t a, std::uint32_t b) { return nodes[a].total > nodes[b].total; });
    if (other != 0) children.push_back(other_node);
    return children;
  };
  auto open_node = [&](std::uint32_t node) {
    const TreeNode& entry = nodes[node];
    sink.append("{\"name\":");
    if (entry.function == no_index) {
      sink.json_string("all");
      sink.append(",\"dso\":\"\"");
    } else {
      const ProfileFunction& function = profile_.functions[entry.function];
      sink.json_string(function.name);
      sink.append(",\"dso\":");
      sink.json_string(function.dso == no_index
                           ? std::string_view("[unknown]")
                           : std::string_view(profile_.dsos[function.dso].path));
    }
    sink.format(",\"total\":{},\"self\":{},\"children\":[", entry.total, entry.self);
  };
  sink.format("{{\"weight\":{},\"samples\":{},\"root\":", total, samples);
  open_node(0);
  ordered[0] = sorted_children(0, other_weight[0]);
  while (!visits.empty()) {
    Visit& visit = visits.back();
    const std::size_t level = visits.size() - 1;
    std::vector<std::uint32_t>& children = ordered[level];
    if (visit.next_child == children.size()) {
      sink.append("]}");
      visits.pop_back();
      continue;
    }
    if (visit.next_child != 0) sink.put(',');
    std::uint32_t child = children[visit.next_child++];
    if (child == other_node) {
      sink.format(
          "{{\"name\":\"(other)\",\"dso\":\"\",\"other\":true,\"total\":{0},\"self\":{0},"
          "\"children\":[]}}",
          other_weight[level]);
      continue;
    }
    open_node(child);
    visits.push_back({child, 0});
    if (ordered.size() < visits.size()) {
      ordered.emplace_back();
      other_weight.push_back(0);
    }
    ordered[visits.size() - 1] = sorted_children(child, other_weight[visits.size() - 1]);
  }
  sink.format(",\"pruned\":{}}}", pruned);
  sink.finish();
  return out.str();
}

std::string ProfileView::stack_chart_json(const ViewSelection& selection,
                                          std::size_t max_runs) const {
  ViewSelection chosen = selection;
  if (!chosen.tid) {
    // The thread that weighs most in the selection.
    std::vector<std::uint64_t> weight(profile_.threads.size(), 0);
    for_each_selected(selection, [&](const ProfileSampleGroup& group, std::uint64_t,
                                     std::uint64_t period) { weight[group.thread] += period; });
    auto heaviest = std::max_element(weight.begin(), weight.end());
    if (heaviest == weight.end() || *heaviest == 0) {
      return "{\"tid\":null,\"runs\":[],\"stacks\":[],\"functions\":[]}";
    }
    chosen.tid = profile_.threads[static_cast<std::size_t>(heaviest - weight.begin())].tid;
  }
  // The stacks the runs use by function (frames at different addresses of one function are one
  // box, as in Firefox Profiler's stack chart), each once, ancestors first.
  std::unordered_map<std::uint32_t, std::uint32_t> stack_index, function_index;
  std::map<std::pair<std::int64_t, std::uint32_t>, std::uint32_t> by_function;
  std::vector<std::pair<std::int64_t, std::uint32_t>> stacks;  // parent (or -1), function
  std::vector<std::uint32_t> functions;
  auto function_of = [&](std::uint32_t function) {
    auto [at, added] =
        function_index.emplace(function, static_cast<std::uint32_t>(functions.size()));
    if (added) functions.push_back(function);
    return at->second;
  };
  std::vector<std::uint32_t> chain;
  auto compact = [&](std::uint32_t stack) -> std::int64_t {
    if (stack == no_index) return -1;
    if (auto known = stack_index.find(stack); known != stack_index.end()) return known->second;
    chain.clear();
    for (std::uint32_t s = stack; s != no_index; s = profile_.stacks[s].parent) chain.push_back(s);
    std::int64_t parent = -1;
    for (std::size_t i = chain.size(); i-- > 0;) {
      std::pair<std::int64_t, std::uint32_t> key{
          parent, function_of(profile_.frames[profile_.stacks[chain[i]].frame].function)};
      auto [at, added] = by_function.emplace(key, static_cast<std::uint32_t>(stacks.size()));
      if (added) stacks.push_back(key);
      parent = at->second;
    }
    stack_index.emplace(stack, static_cast<std::uint32_t>(parent));
    return parent;
  };
  struct Run {
    std::uint64_t start, end;
    std::int64_t stack;  // into `stacks`; -1: no stack
    std::uint64_t samples;
  };
  std::vector<Run> runs;
  bool truncated = false;
  std::uint32_t thread = no_index;
  for_each_selected(chosen,
                    [&](const ProfileSampleGroup& group, std::uint64_t time, std::uint64_t) {
                      thread = group.thread;
                      std::int64_t stack = compact(group.stack);
                      if (!runs.empty() && runs.back().stack == stack) {
                        runs.back().end = time;
                        ++runs.back().samples;
                      } else if (runs.size() < max_runs) {
                        runs.push_back({time, time, stack, 1});
                      } else {
                        truncated = true;
                      }
                    });
  std::ostringstream out;
  TextSink sink(out);
  const ProfileThread* owner = thread == no_index ? nullptr : &profile_.threads[thread];
  sink.format("{{\"tid\":{},\"comm\":", *chosen.tid);
  sink.json_string(owner ? std::string_view(owner->comm) : std::string_view());
  sink.format(",\"from\":{},\"to\":{},\"truncated\":{},\"runs\":[",
              runs.empty() ? 0 : runs.front().start, runs.empty() ? 0 : runs.back().end, truncated);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i != 0) sink.put(',');
    sink.format("[{},{},{},{}]", runs[i].start, runs[i].end, runs[i].stack, runs[i].samples);
  }
  sink.append("],\"stacks\":[");
  for (std::size_t i = 0; i < stacks.size(); ++i) {
    if (i != 0) sink.put(',');
    sink.format("[{},{}]", stacks[i].first, stacks[i].second);
  }
  sink.append("],\"functions\":[");
  for (std::size_t i = 0; i < functions.size(); ++i) {
    const ProfileFunction& function = profile_.functions[functions[i]];
    if (i != 0) sink.put(',');
    sink.put('[');
    sink.json_string(function.name);
    sink.put(',');
    sink.json_string(function.dso == no_index ? std::string_view("[unknown]")
                                              : std::string_view(profile_.dsos[function.dso].path));
    sink.put(']');
  }
  sink.append("]}");
  sink.finish();
  return out.str();
}

std::string ProfileView::timeline_json(const ViewSelection& selection, std::uint32_t buckets,
                                       std::uint32_t max_threads) const {
  buckets = std::clamp<std::uint32_t>(buckets, 1, 4000);
  std::uint64_t from = selection.from, to = selection.to;
  if (from == 0 && to == std::numeric_limits<std::uint64_t>::max()) {
    from = profile_.summary.first_time;
    to = profile_.summary.last_time + 1;
  }
  if (to <= from) to = from + 1;
  const double span = static_cast<double>(to - from) / buckets;
  std::vector<std::vector<double>> lanes(profile_.threads.size());
  std::vector<double> weight(profile_.threads.size(), 0);
  // Off-CPU (and wall time): each thread's lane again per state it was in (sleeping, waiting
  // for I/O, preempted, ..., and for wall time on the CPU), indexed by ThreadState.
  const bool off_cpu = selection.event < profile_.events.size() &&
                       (profile_.events[selection.event].off_cpu || selection.event == wall_event_);
  constexpr std::size_t states = static_cast<std::size_t>(ThreadState::other) + 1;
  std::vector<std::vector<double>> state_lanes(off_cpu ? profile_.threads.size() * states : 0);
  for_each_selected(
      selection, [&](const ProfileSampleGroup& group, std::uint64_t time, std::uint64_t period) {
        std::vector<double>& lane = lanes[group.thread];
        if (lane.empty()) lane.assign(buckets, 0.0);
        auto bucket_of = [&](std::uint64_t at) {
          if (at <= from) return std::uint32_t{0};
          auto index = static_cast<std::uint32_t>(static_cast<double>(at - from) / span);
          return std::min(index, buckets - 1);
        };
        auto value = static_cast<double>(period);
        weight[group.thread] += value;
        std::vector<double>* state_lane = nullptr;
        if (off_cpu) {
          state_lane =
              &state_lanes[group.thread * states + static_cast<std::size_t>(group.state) % states];
          if (state_lane->empty()) state_lane->assign(buckets, 0.0);
        }
        if (!profile_.events[group.event].off_cpu || period == 0) {
          lane[bucket_of(time)] += value;
          if (state_lane) (*state_lane)[bucket_of(time)] += value;
          return;
        }
        // An interval: its time in each span it covers, in its thread's lane and its state's.
        std::uint64_t begin = time >= period ? time - period : 0;
        begin = std::max(begin, from);
        std::uint64_t end = std::min(time, to);
        for (std::uint32_t b = bucket_of(begin); b <= bucket_of(end) && end > begin; ++b) {
          double bucket_begin = static_cast<double>(from) + b * span;
          double overlap = std::min<double>(static_cast<double>(end), bucket_begin + span) -
                           std::max<double>(static_cast<double>(begin), bucket_begin);
          if (overlap > 0) {
            lane[b] += overlap;
            (*state_lane)[b] += overlap;
          }
        }
      });
  std::vector<std::uint32_t> threads;
  for (std::uint32_t i = 0; i < lanes.size(); ++i) {
    if (!lanes[i].empty()) threads.push_back(i);
  }
  std::sort(threads.begin(), threads.end(), [&](std::uint32_t a, std::uint32_t b) {
    return weight[a] != weight[b] ? weight[a] > weight[b] : a < b;
  });
  if (threads.size() > max_threads) threads.resize(max_threads);
  std::ostringstream out;
  TextSink sink(out);
  sink.format("{{\"from\":{},\"to\":{},\"buckets\":{},\"threads\":[", from, to, buckets);
  for (std::size_t i = 0; i < threads.size(); ++i) {
    const ProfileThread& thread = profile_.threads[threads[i]];
    if (i != 0) sink.put(',');
    sink.format("{{\"pid\":{},\"tid\":{},\"comm\":", thread.pid, thread.tid);
    sink.json_string(thread.comm);
    sink.format(",\"weight\":{:.0f},\"lane\":[", weight[threads[i]]);
    auto write_lane = [&](const std::vector<double>& lane) {
      for (std::uint32_t b = 0; b < buckets; ++b) {
        if (b != 0) sink.put(',');
        sink.format("{:.0f}", lane[b]);
      }
    };
    write_lane(lanes[threads[i]]);
    sink.append("],\"states\":{");
    bool first_state = true;
    for (std::size_t state = 0; off_cpu && state < states; ++state) {
      const std::vector<double>& state_lane = state_lanes[threads[i] * states + state];
      if (state_lane.empty()) continue;
      if (!first_state) sink.put(',');
      first_state = false;
      sink.json_string(thread_state_name(static_cast<ThreadState>(state)));
      sink.append(":[");
      write_lane(state_lane);
      sink.put(']');
    }
    sink.append("}}");
  }
  sink.append("]}");
  sink.finish();
  return out.str();
}

Profile ProfileView::selected_profile(const ViewSelection& selection) const {
  Profile selected;
  selected.dsos = profile_.dsos;
  selected.functions = profile_.functions;
  selected.frames = profile_.frames;
  selected.stacks = profile_.stacks;
  selected.threads = profile_.threads;
  selected.events = profile_.events;
  selected.mappings = profile_.mappings;
  selected.summary = profile_.summary;
  selected.sample_groups = profile_.sample_groups;
  for (ProfileSampleGroup& group : selected.sample_groups) group.samples = group.period = 0;
  for (ProfileEvent& event : selected.events) {
    event.samples = event.period = event.period_read = event.samples_read = 0;
  }
  std::uint64_t samples = 0;
  for_each_selected(selection,
                    [&](const ProfileSampleGroup& group, std::uint64_t, std::uint64_t period) {
                      auto index = static_cast<std::size_t>(&group - profile_.sample_groups.data());
                      ++selected.sample_groups[index].samples;
                      selected.sample_groups[index].period += period;
                      ++samples;
                    });
  std::erase_if(selected.sample_groups,
                [](const ProfileSampleGroup& group) { return group.samples == 0; });
  if (wall_event_ && selection.event == *wall_event_) {
    for (ProfileSampleGroup& group : selected.sample_groups) group.event = *wall_event_;
  }
  for (const ProfileSampleGroup& group : selected.sample_groups) {
    ProfileEvent& event = selected.events[group.event];
    event.samples += group.samples;
    event.period += group.period;
    event.period_read += group.period;
    event.samples_read += group.samples;
  }
  selected.summary.samples = selected.summary.samples_read = samples;
  return selected;
}

std::string ProfileView::sample_table_json(std::size_t max_cells) const {
  const std::uint64_t from = profile_.summary.first_time;
  const std::uint64_t to = profile_.summary.last_time + 1;
  const double span_all = static_cast<double>(to - from);
  // Weight and samples of each (span, group) at the finest spans; coarser ones add them up.
  struct Cell {
    double weight = 0;
    std::uint64_t samples = 0;
  };
  constexpr std::uint32_t finest = 1024;
  std::vector<std::unordered_map<std::uint32_t, Cell>> spans(finest);
  auto span_of = [&](std::uint64_t time) {
    if (time <= from) return std::uint32_t{0};
    auto index = static_cast<std::uint32_t>(static_cast<double>(time - from) / span_all * finest);
    return std::min(index, finest - 1);
  };
  profile_.timeline.for_each([&](std::uint32_t group, std::uint64_t time, std::uint64_t period) {
    const ProfileSampleGroup& g = profile_.sample_groups[group];
    std::uint32_t last = span_of(time);
    ++spans[last][group].samples;
    if (!profile_.events[g.event].off_cpu || period == 0) {
      spans[last][group].weight += static_cast<double>(period);
      return;
    }
    // An interval: its time in each span it covers.
    std::uint64_t begin = time >= period ? std::max(time - period, from) : from;
    const double width = span_all / finest;
    for (std::uint32_t b = span_of(begin); b <= last; ++b) {
      double span_begin = static_cast<double>(from) + b * width;
      double overlap = std::min(static_cast<double>(time), span_begin + width) -
                       std::max(static_cast<double>(begin), span_begin);
      if (overlap > 0 || b == last) spans[b][group].weight += std::max(overlap, 0.0);
    }
    // What began before the recording's first sample counts in its first span: a group's
    // weight is its samples' whole period, as the server's call trees count it.
    if (time - begin < period)
      spans[0][group].weight += static_cast<double>(period - (time - begin));
  });
  std::uint32_t buckets = finest;
  auto cells = [&] {
    std::size_t count = 0;
    for (const auto& span : spans) count += span.size();
    return count;
  };
  while (cells() > max_cells && buckets > 1) {
    for (std::uint32_t b = 0; b < buckets / 2; ++b) {
      std::unordered_map<std::uint32_t, Cell> merged = std::move(spans[2 * b]);
      for (const auto& [group, cell] : spans[2 * b + 1]) {
        merged[group].weight += cell.weight;
        merged[group].samples += cell.samples;
      }
      spans[b] = std::move(merged);
    }
    buckets /= 2;
    spans.resize(buckets);
  }
  if (cells() > max_cells) return "{}";

  std::ostringstream out;
  TextSink sink(out);
  sink.format("{{\"from\":{},\"to\":{},\"buckets\":{},\"functions\":[", from, to, buckets);
  for (std::size_t i = 0; i < profile_.functions.size(); ++i) {
    const ProfileFunction& function = profile_.functions[i];
    if (i != 0) sink.put(',');
    sink.put('[');
    sink.json_string(function.name);
    sink.format(",{}]", function.dso == no_index ? -1 : static_cast<std::int64_t>(function.dso));
  }
  sink.append("],\"stacks\":[");
  for (std::size_t i = 0; i < profile_.stacks.size(); ++i) {
    const ProfileStack& stack = profile_.stacks[i];
    sink.format("{}{},{}", i == 0 ? "" : ",",
                stack.parent == no_index ? -1 : static_cast<std::int64_t>(stack.parent),
                profile_.frames[stack.frame].function);
  }
  sink.append("],\"groups\":[");
  for (std::size_t i = 0; i < profile_.sample_groups.size(); ++i) {
    const ProfileSampleGroup& group = profile_.sample_groups[i];
    sink.format("{}{},{},{},", i == 0 ? "" : ",",
                group.stack == no_index ? -1 : static_cast<std::int64_t>(group.stack), group.thread,
                group.event);
    sink.json_string(thread_state_name(group.state));
  }
  sink.append("],\"cells\":[");
  bool first = true;
  std::vector<std::pair<std::uint32_t, Cell>> ordered;
  for (std::uint32_t b = 0; b < buckets; ++b) {
    ordered.assign(spans[b].begin(), spans[b].end());
    std::sort(ordered.begin(), ordered.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& [group, cell] : ordered) {
      sink.format("{}{},{},{:.0f},{}", first ? "" : ",", b, group, cell.weight, cell.samples);
      first = false;
    }
  }
  sink.append("]}");
  sink.finish();
  return out.str();
}

}  // namespace perfscope
