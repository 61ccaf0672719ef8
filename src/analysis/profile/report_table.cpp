#include "perfscope/analysis/profile/report_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <stdexcept>
#include <unordered_map>

#include "analysis/path_names.hpp"
#include "analysis/profile/flat_index_map.hpp"

namespace perfscope {

namespace {

using detail::FlatIndexMap;

using detail::file_name_of;

// The samples of one event folded by everything a row key can depend on.
struct SampleGroup {
  std::uint32_t stack = no_index, thread = 0, cpu = no_index;
  std::uint64_t period = 0, samples = 0;
  ThreadState state = ThreadState::on_cpu;
  std::uint64_t time = 0;  // the start of the samples' time quantum (with the time key only)
};

// A sample time rounded down to its quantum as perf's time key prints it: seconds, to the
// microsecond or (--ns) the nanosecond.
std::string quantum_text(std::uint64_t time, bool nanoseconds) {
  return nanoseconds ? fmt::format("{}.{:09}", time / 1'000'000'000, time % 1'000'000'000)
                     : fmt::format("{}.{:06}", time / 1'000'000'000, time % 1'000'000'000 / 1000);
}

class TableBuilder {
 public:
  TableBuilder(const Profile& profile, const ReportOptions& options, ReportTable& table)
      : profile_(profile), options_(options), table_(table) {
    for (ReportSortKey key : options.sort) {
      if (key == ReportSortKey::dso || key == ReportSortKey::sym || key == ReportSortKey::srcline ||
          key == ReportSortKey::srcfile) {
        frame_keys_ = true;
      }
    }
  }

  void add(const SampleGroup& group) {
    ++stamp_;
    // The sample's own row is its real function's, as perf's: the calls inlined at the sampled
    // address are entries of the chain above it (and rows of their own with children).
    std::uint32_t real = group.stack;
    while (real != no_index && profile_.frames[profile_.stacks[real].frame].inlined &&
           profile_.stacks[real].parent != no_index) {
      real = profile_.stacks[real].parent;
    }
    std::uint32_t self_row =
        row_of(group, real == no_index ? no_index : profile_.stacks[real].frame);
    ReportRow& self = table_.rows[self_row];
    self.self_period += group.period;
    self.self_samples += group.samples;
    if (!table_.children) {
      self.total_period += group.period;
      self.total_samples += group.samples;
      self.contributions.push_back({group.stack, group.stack, group.period, true});
      return;
    }
    // Every row the stack passes through gets the samples once (recursion counts once), as
    // perf's cumulative entries do. The row of the sample's own frame is anchored at the leaf:
    // its tree shows the whole chain. Any other row is anchored at the frame perf meets first
    // walking the chain in the tree's order: the outermost for caller trees (which then show
    // that frame's callees), the innermost for callee trees (which show its callers).
    touched_.clear();
    bool caller = table_.call_graph == ReportCallGraph::caller;
    row_stamp_[self_row] = stamp_;
    touched_.push_back({self_row, group.stack, 0});
    std::uint32_t depth = 0;  // of the node below: 0 is the leaf
    for (std::uint32_t node = group.stack; node != no_index;
         node = profile_.stacks[node].parent, ++depth) {
      std::uint32_t row = row_of(group, profile_.stacks[node].frame);
      if (row_stamp_[row] != stamp_) {
        row_stamp_[row] = stamp_;
        row_slot_[row] = static_cast<std::uint32_t>(touched_.size());
        touched_.push_back({row, node, depth});
      } else if (caller && row != self_row) {
        touched_[row_slot_[row]].node = node;
        touched_[row_slot_[row]].depth = depth;
      }
    }
    for (const Touched& t : touched_) {
      ReportRow& r = table_.rows[t.row];
      r.total_period += group.period;
      r.total_samples += group.samples;
      bool own = t.row == self_row;
      r.contributions.push_back({group.stack, t.node, group.period, own});
      // The length of the chain the row's tree gets from this stack (perf's max_depth).
      std::uint32_t chain = t.node == no_index ? 0 : own || !caller ? depth - t.depth : t.depth + 1;
      r.chain_depth = std::max(r.chain_depth, chain);
    }
  }

 private:
  std::uint32_t comm_id(const std::string& comm) {
    auto found = comm_ids_.find(comm);
    if (found != comm_ids_.end()) return found->second;
    auto id = static_cast<std::uint32_t>(comm_ids_.size());
    comm_ids_.emplace(comm, id);
    return id;
  }

  // "file:line" and "file" texts, interned together (one never equals the other).
  std::uint32_t source_text_id(std::string text) {
    auto found = srcline_ids_.find(text);
    if (found != srcline_ids_.end()) return found->second;
    auto id = static_cast<std::uint32_t>(srclines_.size());
    srclines_.push_back(text);
    srcline_ids_.emplace(std::move(text), id);
    return id;
  }
  std::string_view source_file(const ProfileFrame& frame) const {
    return options_.full_source_path ? std::string_view(frame.source_file)
                                     : file_name_of(frame.source_file);
  }
  std::uint32_t srcline_id(const ProfileFrame& frame) {
    return source_text_id(frame.source_file.empty()
                              ? std::string("??:0")
                              : fmt::format("{}:{}", source_file(frame), frame.line));
  }
  std::uint32_t srcfile_id(const ProfileFrame& frame) {
    return source_text_id(frame.source_file.empty() ? std::string("[unknown]")
                                                    : std::string(source_file(frame)));
  }

  // The function of the first frame from the sample's own up its callers whose name matches
  // perf's parent pattern; no_index when none does. Each function is matched once.
  std::uint32_t parent_of(std::uint32_t stack) {
    static const std::regex pattern("^sys_|^do_page_fault");
    for (std::uint32_t node = stack; node != no_index; node = profile_.stacks[node].parent) {
      std::uint32_t function = profile_.frames[profile_.stacks[node].frame].function;
      if (function >= parent_match_.size()) parent_match_.resize(function + 1, 0);
      if (parent_match_[function] == 0) {
        parent_match_[function] =
            std::regex_search(profile_.functions[function].name, pattern) ? 1 : 2;
      }
      if (parent_match_[function] == 1) return function;
    }
    return no_index;
  }

  // The row of a group's frame: its key words folded through one interning table per key.
  std::uint32_t row_of(const SampleGroup& group, std::uint32_t frame_index) {
    const ProfileThread& thread = profile_.threads[group.thread];
    const ProfileFrame* frame = frame_index == no_index ? nullptr : &profile_.frames[frame_index];
    const ProfileFunction* function = frame ? &profile_.functions[frame->function] : nullptr;
    std::uint64_t chain = 0;  // the interned prefix of the key so far
    for (ReportSortKey key : options_.sort) {
      std::uint64_t value = 0;
      switch (key) {
        case ReportSortKey::comm: value = comm_id(thread.comm); break;
        case ReportSortKey::pid:
          value = std::uint64_t{thread.pid} << 32 | comm_id(thread.comm);
          break;
        case ReportSortKey::tid:
          value = std::uint64_t{thread.tid} << 32 | comm_id(thread.comm);
          break;
        case ReportSortKey::dso: value = function ? function->dso : no_index; break;
        case ReportSortKey::sym:
          value = frame ? std::uint64_t{frame->function} << 1 | (frame->inlined ? 1 : 0) : no_index;
          break;
        case ReportSortKey::cpu: value = group.cpu; break;
        case ReportSortKey::srcline: value = frame ? srcline_id(*frame) : no_index; break;
        case ReportSortKey::state: value = static_cast<std::uint8_t>(group.state); break;
        case ReportSortKey::srcfile: value = frame ? srcfile_id(*frame) : no_index; break;
        case ReportSortKey::parent: value = parent_of(group.stack); break;
        case ReportSortKey::time: value = group.time; break;
      }
      chain = prefixes_.insert(chain, value, static_cast<std::uint32_t>(prefixes_.size()) + 1);
    }
    std::uint32_t row = rows_.find(chain, 0);
    if (row != FlatIndexMap::absent) return row;
    row = static_cast<std::uint32_t>(table_.rows.size());
    rows_.insert(chain, 0, row);
    ReportRow out;
    for (ReportSortKey key : options_.sort) {
      switch (key) {
        case ReportSortKey::comm: out.keys.push_back(thread.comm); break;
        case ReportSortKey::pid:
          out.keys.push_back(fmt::format("{:>7}:{}", thread.pid, thread.comm));
          break;
        case ReportSortKey::tid:
          out.keys.push_back(fmt::format("{:>7}:{}", thread.tid, thread.comm));
          break;
        case ReportSortKey::dso: {
          std::string_view path = function && function->dso != no_index
                                      ? std::string_view(profile_.dsos[function->dso].path)
                                      : std::string_view("[unknown]");
          // perf's short name: the last component of every path, relative ones too.
          out.keys.push_back(detail::short_dso_name(path));
          break;
        }
        case ReportSortKey::sym:
          out.keys.push_back(fmt::format(
              "[{}] {}{}", frame && frame->kernel ? 'k' : '.',
              function ? std::string_view(function->name) : std::string_view("[unknown]"),
              frame && frame->inlined ? " (inlined)" : ""));
          break;
        case ReportSortKey::cpu:
          out.keys.push_back(group.cpu == no_index ? std::string("-")
                                                   : fmt::format("{:03}", group.cpu));
          break;
        case ReportSortKey::srcline:
          out.keys.push_back(frame ? srclines_[srcline_id(*frame)] : std::string("??:0"));
          break;
        case ReportSortKey::state: out.keys.emplace_back(thread_state_name(group.state)); break;
        case ReportSortKey::srcfile:
          out.keys.push_back(frame ? srclines_[srcfile_id(*frame)] : std::string("[unknown]"));
          break;
        case ReportSortKey::parent: {
          std::uint32_t parent = parent_of(group.stack);
          out.keys.push_back(parent == no_index ? std::string("[other]")
                                                : profile_.functions[parent].name);
          break;
        }
        case ReportSortKey::time:
          out.keys.push_back(quantum_text(group.time, options_.nanoseconds));
          break;
      }
    }
    if (frame_keys_ && frame) {
      out.function = frame->function;
      out.kernel = frame->kernel;
    }
    table_.rows.push_back(std::move(out));
    row_stamp_.push_back(0);
    row_slot_.push_back(0);
    return row;
  }

  const Profile& profile_;
  const ReportOptions& options_;
  ReportTable& table_;
  bool frame_keys_ = false;
  FlatIndexMap prefixes_{256};
  FlatIndexMap rows_{256};
  std::unordered_map<std::string, std::uint32_t> comm_ids_, srcline_ids_;
  std::vector<std::string> srclines_;       // source lines and files, interned
  std::vector<std::uint8_t> parent_match_;  // by function: 0 unknown, 1 matches, 2 does not
  std::vector<std::uint64_t> row_stamp_;
  std::vector<std::uint32_t> row_slot_;
  std::uint64_t stamp_ = 0;
  struct Touched {
    std::uint32_t row, node, depth;
  };
  std::vector<Touched> touched_;
};

// The source lines call-graph entries name ("file.cpp:42"), numbered from 1 in first-seen order.
struct CallGraphLines {
  bool enabled = false;
  std::unordered_map<std::string, std::uint32_t> ids;
  std::vector<std::string> texts;

  std::uint32_t id_of(const ProfileFrame& frame) {
    if (!enabled || frame.source_file.empty()) return 0;
    std::string text = fmt::format("{}:{}", file_name_of(frame.source_file), frame.line);
    auto [found, inserted] = ids.try_emplace(text, static_cast<std::uint32_t>(texts.size() + 1));
    if (inserted) texts.push_back(std::move(text));
    return found->second;
  }
};

// A frame of a call tree: its function, whether it is a call inlined there (perf keeps the two
// apart and marks the inlined one), and with source lines its line (bits 33 and up).
std::uint64_t tree_key(const ProfileFrame& frame, CallGraphLines& lines) {
  return std::uint64_t{lines.id_of(frame)} << 33 | std::uint64_t{frame.function} << 1 |
         (frame.inlined ? 1 : 0);
}
std::uint32_t function_of_key(std::uint64_t key) { return static_cast<std::uint32_t>(key >> 1); }

// A call tree below one row, merged by function as perf merges its call chains.
struct CallTree {
  struct Node {
    std::uint64_t function = no_index;  // tree_key()
    std::uint64_t period = 0;
    std::vector<std::uint32_t> children;
  };
  std::vector<Node> nodes{Node{}};  // 0: the root, above the row's own frame

  void add(const std::vector<std::uint64_t>& path, std::uint64_t period) {
    std::uint32_t node = 0;
    nodes[0].period += period;
    for (std::uint64_t function : path) {
      std::uint32_t next = no_index;
      for (std::uint32_t child : nodes[node].children) {
        if (nodes[child].function == function) {
          next = child;
          break;
        }
      }
      if (next == no_index) {
        next = static_cast<std::uint32_t>(nodes.size());
        nodes.push_back(Node{function, 0, {}});
        nodes[node].children.push_back(next);
      }
      nodes[next].period += period;
      node = next;
    }
  }

  void sort(const Profile& profile) {
    for (auto& node : nodes) {
      // Equal branches as perf's callchain tree holds them: the later DSO first, then the
      // function that starts higher.
      std::sort(node.children.begin(), node.children.end(), [&](std::uint32_t a, std::uint32_t b) {
        if (nodes[a].period != nodes[b].period) return nodes[a].period > nodes[b].period;
        const ProfileFunction& x = profile.functions[function_of_key(nodes[a].function)];
        const ProfileFunction& y = profile.functions[function_of_key(nodes[b].function)];
        if (x.dso != y.dso) return x.dso + 1 > y.dso + 1;
        if (x.start != y.start) return x.start > y.start;
        return a < b;
      });
    }
  }
};

// perf's stdio call graph ("graph" mode: each branch's share of the event's whole period).
class GraphPrinter {
 public:
  GraphPrinter(const Profile& profile, const CallTree& tree, const CallGraphLines& lines,
               std::uint64_t total, std::uint64_t min_period, std::uint64_t row_period,
               bool skip_first, fmt::memory_buffer& out)
      : profile_(profile),
        tree_(tree),
        lines_(lines),
        total_(total),
        row_period_(row_period),
        min_period_(min_period),
        skip_first_(skip_first),
        out_(out) {}

  // False when no branch is large enough to show.
  bool print() {
    std::vector<std::uint32_t> top = visible(tree_.nodes[0].children);
    if (top.empty()) return false;
    std::size_t margin = 0;
    std::size_t start = out_.size();
    // One chain without percentages when one branch holds all of the row (perf's
    // need_percent_display); otherwise branches with theirs.
    if (top.size() == 1 && tree_.nodes[top[0]].period == row_period_) {
      std::vector<std::uint32_t> chain = compressed(top[0]);
      bool printed = false;
      for (std::size_t i = 0; i < chain.size(); ++i) {
        // perf leaves the first frame out when the table is sorted by symbol first (it is
        // usually the row's own symbol), whichever frame that is.
        if (i == 0 && skip_first_) continue;
        if (!printed) {
          left_margin(margin);
          out_.append(std::string_view("|\n"));
          left_margin(margin);
          out_.append(std::string_view("---"));
          printed = true;
        } else {
          left_margin(margin + 3);
        }
        name(tree_.nodes[chain[i]].function);
        out_.push_back('\n');
      }
      if (printed) margin += 3;
      print_children(tree_.nodes[chain.back()].children, 1, 1, margin);
    } else {
      print_children(tree_.nodes[0].children, 1, 1, margin);
    }
    return out_.size() != start;
  }

 private:
  std::vector<std::uint32_t> visible(const std::vector<std::uint32_t>& children) const {
    std::vector<std::uint32_t> out;
    for (std::uint32_t child : children) {
      if (tree_.nodes[child].period >= min_period_) out.push_back(child);
    }
    return out;
  }

  // A node and the single-child nodes below it that no sample ends at: one chain of frames.
  std::vector<std::uint32_t> compressed(std::uint32_t node) const {
    std::vector<std::uint32_t> chain{node};
    for (;;) {
      const auto& n = tree_.nodes[chain.back()];
      if (n.children.size() != 1) break;
      const auto& child = tree_.nodes[n.children[0]];
      if (child.period != n.period) break;
      chain.push_back(n.children[0]);
    }
    return chain;
  }

  void left_margin(std::size_t margin) {
    for (std::size_t i = 0; i < 12 + margin; ++i) out_.push_back(' ');
  }

  void name(std::uint64_t key) {
    out_.append(std::string_view(profile_.functions[function_of_key(key)].name));
    if (std::uint64_t line = key >> 33; line != 0) {
      out_.push_back(' ');
      out_.append(std::string_view(lines_.texts[line - 1]));
    }
    if (key & 1) out_.append(std::string_view(" (inlined)"));
  }

  void print_children(const std::vector<std::uint32_t>& all, int depth, std::uint64_t mask,
                      std::size_t margin) {
    std::vector<std::uint32_t> children = visible(all);
    for (std::size_t c = 0; c < children.size(); ++c) {
      std::uint64_t new_mask = mask;
      if (c + 1 == children.size()) new_mask &= ~(1ULL << (depth - 1));
      // The separator keeps the old mask: the level's pipe runs down to its last child.
      left_margin(margin);
      for (int i = 0; i < depth; ++i) {
        out_.append(std::string_view((mask >> i) & 1 ? "|          " : "           "));
      }
      out_.push_back('\n');
      std::vector<std::uint32_t> chain = compressed(children[c]);
      for (std::size_t j = 0; j < chain.size(); ++j) {
        left_margin(margin);
        for (int i = 0; i < depth; ++i) {
          out_.push_back((new_mask >> i) & 1 ? '|' : ' ');
          if (j == 0 && i == depth - 1) {
            fmt::format_to(std::back_inserter(out_), "--{:.2f}%--",
                           100.0 * static_cast<double>(tree_.nodes[children[c]].period) /
                               static_cast<double>(total_));
          } else {
            out_.append(std::string_view("          "));
          }
        }
        name(tree_.nodes[chain[j]].function);
        out_.push_back('\n');
      }
      if (depth < 63) {
        print_children(tree_.nodes[chain.back()].children, depth + 1, new_mask | (1ULL << depth),
                       margin);
      }
    }
  }

  const Profile& profile_;
  const CallTree& tree_;
  const CallGraphLines& lines_;
  std::uint64_t total_, row_period_, min_period_;
  bool skip_first_;
  fmt::memory_buffer& out_;
};

CallTree call_tree(const Profile& profile, const ReportRow& row, ReportCallGraph order,
                   bool children, CallGraphLines& lines) {
  CallTree tree;
  std::vector<std::uint64_t> path;
  for (const auto& contribution : row.contributions) {
    path.clear();
    if (contribution.anchor == no_index) continue;
    bool toward_callers = order == ReportCallGraph::callee;
    if (toward_callers) {
      // The row's frame, then its callers out to the outermost.
      for (std::uint32_t node = contribution.anchor; node != no_index;
           node = profile.stacks[node].parent) {
        path.push_back(tree_key(profile.frames[profile.stacks[node].frame], lines));
      }
    } else {
      // Caller order: the whole stack from the outermost down to the leaf for the samples of
      // the row's own frame (perf's self entry); for the samples of its callees (children),
      // from the row's frame down to the leaf.
      bool whole = !children || contribution.self;
      std::uint32_t stop = whole ? no_index : profile.stacks[contribution.anchor].parent;
      for (std::uint32_t node = contribution.leaf; node != stop;
           node = profile.stacks[node].parent) {
        path.push_back(tree_key(profile.frames[profile.stacks[node].frame], lines));
      }
      std::reverse(path.begin(), path.end());
    }
    tree.add(path, contribution.period);
  }
  tree.sort(profile);
  return tree;
}

std::string scaled_count(std::uint64_t count) {
  char unit = ' ';
  static constexpr char units[] = {'K', 'M', 'G', 'T'};
  for (char next : units) {
    if (count <= 1000) break;  // perf's convert_unit: exactly 1000 stays "1000 "
    count /= 1000;
    unit = next;
  }
  return fmt::format("{}{}", count, unit);
}

// A row's cell in column `c`: its share, its sample count, its period or a key's text.
std::string cell_text(const ReportTable& table, const ReportRow& row, std::size_t c,
                      std::size_t key_base, std::size_t samples_column, std::size_t period_column) {
  if (c == samples_column) return fmt::format("{}", row.self_samples);
  if (c == period_column) return fmt::format("{}", row.self_period);
  if (c >= key_base) return row.keys[c - key_base];
  std::uint64_t period = (table.children && c == 0) ? row.total_period : row.self_period;
  return fmt::format("{:.2f}%", table.percent(period));
}

// perf's -t table: the titles right-aligned over numbers and left-aligned over keys, each padded
// to its column's width, the separator between columns, no dotted line; a value's percentage or
// count after a space, padded to the width; the last column unpadded when it is the symbol, whose
// text perf does not pad. The separator's first character inside a value becomes '.' (perf's
// repsep_snprintf).
void print_separated_columns(const ReportTable& table, const std::vector<std::string>& titles,
                             const std::vector<std::size_t>& widths, std::size_t key_base,
                             std::size_t samples_column, std::size_t period_column,
                             bool last_is_symbol, const std::string& separator,
                             fmt::memory_buffer& out) {
  auto append = [&](std::string_view text) { out.append(text); };
  auto pad_to = [&](std::size_t printed, std::size_t width) {
    if (printed < width) out.append(std::string(width - printed, ' '));
  };
  append("# ");
  for (std::size_t c = 0; c < titles.size(); ++c) {
    if (c != 0) append(separator);
    if (c < key_base) pad_to(titles[c].size(), widths[c]);
    append(titles[c]);
    if (c >= key_base) pad_to(titles[c].size(), widths[c]);
  }
  out.push_back('\n');
  for (const auto& row : table.rows) {
    for (std::size_t c = 0; c < titles.size(); ++c) {
      if (c != 0) append(separator);
      std::string text = cell_text(table, row, c, key_base, samples_column, period_column);
      if (c < key_base) {
        text.insert(0, 1, ' ');
      } else {
        std::replace(text.begin(), text.end(), separator.front(), '.');
      }
      append(text);
      if (c + 1 != titles.size() || !last_is_symbol) pad_to(text.size(), widths[c]);
    }
    out.push_back('\n');
  }
}

}  // namespace

ReportTable build_report_table(const Profile& profile, std::uint32_t event,
                               const ReportOptions& options) {
  ReportTable table;
  table.event = event;
  bool has_chains = event < profile.events.size() && profile.events[event].has_callchains;
  table.children = options.children.value_or(has_chains);
  table.call_graph = options.call_graph.value_or(!has_chains      ? ReportCallGraph::none
                                                 : table.children ? ReportCallGraph::caller
                                                                  : ReportCallGraph::callee);

  // Samples folded by (stack, thread, cpu) first: the rows are then computed per group.
  std::vector<SampleGroup> groups;
  FlatIndexMap group_index(4096);
  // The state rides in the stack's word, below it; with the time key, that word and the
  // sample's quantum are interned into one.
  const bool by_time = std::find(options.sort.begin(), options.sort.end(), ReportSortKey::time) !=
                       options.sort.end();
  const std::uint64_t quantum = std::max<std::uint64_t>(options.time_quantum_ns, 1);
  FlatIndexMap timed_stacks(by_time ? 4096 : 1);
  auto stack_and_state = [&](std::uint32_t stack, ThreadState state, std::uint64_t time = 0) {
    std::uint64_t word = std::uint64_t{stack} << 8 | static_cast<std::uint8_t>(state);
    if (!by_time) return word;
    return std::uint64_t{
        timed_stacks.insert(word, time, static_cast<std::uint32_t>(timed_stacks.size()))};
  };
  for (const ProfileSample& sample : profile.samples) {
    if (sample.event != event) continue;
    std::uint64_t b = std::uint64_t{sample.thread} << 32 | sample.cpu;
    auto index = static_cast<std::uint32_t>(groups.size());
    std::uint64_t time = by_time ? sample.time / quantum * quantum : 0;
    std::uint32_t found =
        group_index.insert(stack_and_state(sample.stack, sample.state, time), b, index);
    if (found == index) {
      groups.push_back({sample.stack, sample.thread, sample.cpu, 0, 0, sample.state, time});
    }
    groups[found].period += sample.period;
    groups[found].samples += 1;
    table.period += sample.period;
    table.samples += 1;
  }
  for (const ProfileSampleGroup& folded : profile.sample_groups) {
    if (folded.event != event) continue;
    std::uint64_t b = std::uint64_t{folded.thread} << 32 | folded.cpu;
    auto index = static_cast<std::uint32_t>(groups.size());
    std::uint32_t found = group_index.insert(stack_and_state(folded.stack, folded.state), b, index);
    if (found == index) {
      groups.push_back({folded.stack, folded.thread, folded.cpu, 0, 0, folded.state});
    }
    groups[found].period += folded.period;
    groups[found].samples += folded.samples;
    table.period += folded.period;
    table.samples += folded.samples;
  }
  if (event < profile.events.size() && !options.relative_percentages) {
    table.percent_base = profile.events[event].period_read;
  }
  TableBuilder builder(profile, options, table);
  for (const SampleGroup& group : groups) builder.add(group);

  auto primary = [&](const ReportRow& row) {
    return table.children ? row.total_period : row.self_period;
  };
  if (options.percent_limit > 0) {
    std::erase_if(table.rows, [&](const ReportRow& row) {
      return table.percent(primary(row)) < options.percent_limit;
    });
  }
  std::erase_if(table.rows, [&](const ReportRow& row) { return primary(row) == 0; });
  // perf's order: the larger share first; with children, on equal shares the caller above
  // its callee (the longer chain first in caller trees, the shorter in callee trees); then the
  // larger self share, then the keys.
  bool depth_order = table.children && table.call_graph != ReportCallGraph::none;
  std::sort(table.rows.begin(), table.rows.end(), [&](const ReportRow& a, const ReportRow& b) {
    if (options.order_by_samples) {
      std::uint64_t samples_a = table.children ? a.total_samples : a.self_samples;
      std::uint64_t samples_b = table.children ? b.total_samples : b.self_samples;
      if (samples_a != samples_b) return samples_a > samples_b;
    }
    if (primary(a) != primary(b)) return primary(a) > primary(b);
    if (depth_order && a.chain_depth != b.chain_depth) {
      return table.call_graph == ReportCallGraph::caller ? a.chain_depth > b.chain_depth
                                                         : a.chain_depth < b.chain_depth;
    }
    if (a.self_period != b.self_period) return a.self_period > b.self_period;
    // The keys' texts, a function's by its name alone as perf's sort__sym_sort compares them
    // ("[k] elf_load" before "[.] handle_amd"), an address without a function after the named.
    for (std::size_t k = 0; k < a.keys.size() && k < b.keys.size(); ++k) {
      std::string_view left = a.keys[k], right = b.keys[k];
      if (k < options.sort.size() && options.sort[k] == ReportSortKey::sym && left.size() > 4 &&
          right.size() > 4 && left[0] == '[' && right[0] == '[') {
        left.remove_prefix(4);
        right.remove_prefix(4);
        bool left_unnamed = left.starts_with("0x"), right_unnamed = right.starts_with("0x");
        if (left_unnamed != right_unnamed) return right_unnamed;
      }
      // Times as numbers: the shorter text is the earlier.
      if (k < options.sort.size() && options.sort[k] == ReportSortKey::time &&
          left.size() != right.size()) {
        return left.size() < right.size();
      }
      if (left != right) return left < right;
    }
    return a.keys.size() < b.keys.size();
  });
  return table;
}

std::string render_report(const Profile& profile, const ReportOptions& options) {
  fmt::memory_buffer out;
  auto line = [&](std::string_view text) {
    out.append(text);
    out.push_back('\n');
  };
  const ProfileSummary& summary = profile.summary;
  line("#");
  for (const auto& [column, value] : options.elided) {
    fmt::format_to(std::back_inserter(out), "# {}: {}\n", column, value);
  }
  if (!options.elided.empty()) line("#");
  // LOST records count what the kernel could not write as it happened; LOST_SAMPLES records
  // (perf record writes one per event and CPU at the end, from PERF_FORMAT_LOST) count the
  // kernel's whole total, those included: adding the two counted most losses twice.
  fmt::format_to(std::back_inserter(out), "# Total Lost Samples: {}\n",
                 std::max(summary.lost, summary.lost_samples));
  if (summary.lost != 0) {
    fmt::format_to(std::back_inserter(out),
                   "# Lost: {} records the kernel could not write (raise --mmap-pages or lower "
                   "the frequency)\n",
                   summary.lost);
  }
  if (summary.throttle != 0) {
    fmt::format_to(std::back_inserter(out),
                   "# Throttled: {} times (the kernel lowered the rate: "
                   "kernel.perf_cpu_time_max_percent)\n",
                   summary.throttle);
  }
  if (summary.stacks_walked != 0) {
    const StackSources& sources = summary.stack_sources;
    std::string from;
    auto add = [&](std::uint64_t samples, std::string_view what) {
      if (samples == 0) return;
      if (!from.empty()) from += ", ";
      from += fmt::format("{} ({} samples)", what, samples);
    };
    add(sources.frame_pointers, "frame pointers");
    add(sources.dwarf_while_recording, "DWARF unwound while recording");
    add(sources.dwarf_unwound_here, "DWARF unwound here");
    add(sources.lbr, "LBR call stacks");
    std::uint64_t tenths = summary.stacks_reaching_start * 1000 / summary.stacks_walked;
    fmt::format_to(std::back_inserter(out),
                   "# Stacks: {}; {} of {} reach a thread's first frame ({}.{} %)\n",
                   from.empty() ? std::string("kernel call chains") : from,
                   summary.stacks_reaching_start, summary.stacks_walked, tenths / 10, tenths % 10);
  }
  if (summary.dwarf_unwinding && summary.unwinding.samples != 0) {
    const UnwindStatistics& u = summary.unwinding;
    // Rounded down: 35636 of 35637 is 99.9 %, never 100.0 % unless every stack is complete.
    std::uint64_t tenths = u.samples == 0 ? 0 : u.complete * 1000 / u.samples;
    std::string jit =
        u.jit_unwinding_info == 0
            ? std::string()
            : fmt::format("; {} through JIT code by the unwinding information of its jitdump",
                          u.jit_unwinding_info);
    fmt::format_to(std::back_inserter(out),
                   "# DWARF unwinding: {} of {} stacks complete ({}.{} %){}\n", u.complete,
                   u.samples, tenths / 10, tenths % 10, jit);
  }
  for (const auto& warning : summary.warnings) {
    fmt::format_to(std::back_inserter(out), "# warning: {}\n", warning);
  }
  for (const auto& note : summary.notes) fmt::format_to(std::back_inserter(out), "# {}\n", note);
  line("#");

  CallGraphLines lines;
  lines.enabled = options.source_lines_in_call_graph;
  for (std::uint32_t event = 0; event < profile.events.size(); ++event) {
    ReportTable table = build_report_table(profile, event, options);
    if (table.samples == 0 && profile.events.size() > 1) continue;
    // perf's counts of the event: every sample the filters hid included (perf's default
    // --percentage absolute); --time and --cpu left out.
    const ProfileEvent& counted = profile.events[event];
    fmt::format_to(
        std::back_inserter(out), "# Samples: {} of event '{}'{}\n",
        scaled_count(options.relative_percentages ? table.samples
                                                  : std::max(counted.samples_read, table.samples)),
        counted.name,
        options.time_slices.empty() ? std::string()
                                    : fmt::format(" (time slices: {})", options.time_slices));
    fmt::format_to(
        std::back_inserter(out), "# Event count (approx.): {}\n",
        options.relative_percentages ? table.period : std::max(counted.period_read, table.period));
    line("#");

    // Column widths: the widest of title and values.
    std::vector<std::string> titles;
    std::vector<std::size_t> widths;
    if (table.children) {
      titles = {"Children", "Self"};
      widths = {8, 8};
    } else {
      titles = {"Overhead"};
      widths = {8};
    }
    // perf -n's Samples and --show-total-period's Period: the row's own count, with --children
    // too (as perf's), at least 12 wide. Returns the column's index.
    auto add_count_column = [&](const char* title, std::uint64_t ReportRow::*count) {
      titles.emplace_back(title);
      std::size_t width = 12;
      for (const auto& row : table.rows) {
        width = std::max(width, fmt::formatted_size("{}", row.*count));
      }
      widths.push_back(width);
      return titles.size() - 1;
    };
    std::size_t samples_column =
        options.show_samples ? add_count_column("Samples", &ReportRow::self_samples) : no_index;
    std::size_t period_column =
        options.show_period ? add_count_column("Period", &ReportRow::self_period) : no_index;
    std::size_t key_base = titles.size();
    for (std::size_t k = 0; k < options.sort.size(); ++k) {
      titles.emplace_back(report_sort_key_title(options.sort[k]));
      std::size_t width = titles.back().size();
      // perf's time column is as wide as a time of five digits' seconds.
      if (options.sort[k] == ReportSortKey::time) width = options.nanoseconds ? 16 : 12;
      for (const auto& row : table.rows) width = std::max(width, row.keys[k].size());
      widths.push_back(width);
    }
    auto padded = [&](std::string_view text, std::size_t width, bool right, bool last) {
      std::size_t pad = text.size() < width ? width - text.size() : 0;
      if (right) out.append(std::string(pad, ' '));
      out.append(text);
      if (!right && !last) out.append(std::string(pad, ' '));
    };
    const std::string& separator = options.field_separator;
    if (!separator.empty()) {
      bool last_is_symbol = !options.sort.empty() && options.sort.back() == ReportSortKey::sym;
      print_separated_columns(table, titles, widths, key_base, samples_column, period_column,
                              last_is_symbol, separator, out);
      continue;
    }
    out.append(std::string_view("# "));
    for (std::size_t c = 0; c < titles.size(); ++c) {
      if (c != 0) out.append(std::string_view("  "));
      padded(titles[c], widths[c], c < key_base, c + 1 == titles.size());
    }
    out.push_back('\n');
    out.append(std::string_view("# "));
    for (std::size_t c = 0; c < titles.size(); ++c) {
      if (c != 0) out.append(std::string_view("  "));
      out.append(std::string(widths[c], '.'));
    }
    out.push_back('\n');
    line("#");

    bool sym_first = !options.sort.empty() && options.sort.front() == ReportSortKey::sym;
    std::uint64_t min_period = static_cast<std::uint64_t>(options.call_graph_limit / 100.0 *
                                                          static_cast<double>(table.period));
    for (const auto& row : table.rows) {
      out.append(std::string_view("  "));
      for (std::size_t c = 0; c < titles.size(); ++c) {
        if (c != 0) out.append(std::string_view("  "));
        std::string text = cell_text(table, row, c, key_base, samples_column, period_column);
        padded(text, widths[c], c < key_base, c + 1 == titles.size());
      }
      out.push_back('\n');
      if (table.call_graph != ReportCallGraph::none) {
        CallTree tree = call_tree(profile, row, table.call_graph, table.children, lines);
        if (GraphPrinter(profile, tree, lines, table.period, std::max<std::uint64_t>(min_period, 1),
                         table.children ? row.total_period : row.self_period, sym_first, out)
                .print()) {
          out.push_back('\n');
        }
      }
    }
  }
  return fmt::to_string(out);
}

}  // namespace perfscope
