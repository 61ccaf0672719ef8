#include "perfscope/analysis/live/live_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <unordered_map>

#include "analysis/path_names.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/safe_text.hpp"

namespace perfscope {

namespace {

namespace misc = abi::record_misc;

constexpr std::uint32_t none = 0xffffffffu;
// Weights below this (in samples) are faded out: after 18 refreshes at 7/8 one sample is 0.09.
constexpr double faded = 0.1;

struct CellKey {
  std::uint32_t comm = 0, pid = 0, function = 0;
  bool operator==(const CellKey&) const = default;
};

struct CellHash {
  std::size_t operator()(const CellKey& key) const noexcept {
    std::uint64_t a = (std::uint64_t{key.comm} << 32 | key.pid) * 0x9e3779b97f4a7c15ULL;
    return static_cast<std::size_t>(a ^ (std::uint64_t{key.function} * 0xc2b2ae3d27d4eb4fULL) ^
                                    (a >> 29));
  }
};

struct PairHash {
  std::size_t operator()(std::uint64_t key) const noexcept {
    return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ULL) ^ (key >> 31));
  }
};

std::uint64_t node_key(std::uint32_t parent, std::uint32_t function) noexcept {
  return std::uint64_t{parent} << 32 | function;
}

using detail::file_name_of;

}  // namespace

std::vector<LiveSortKey> parse_live_sort_keys(const std::string& text) {
  std::vector<LiveSortKey> keys;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string key = text.substr(start, comma - start);
    LiveSortKey parsed;
    if (key == "comm") {
      parsed = LiveSortKey::comm;
    } else if (key == "pid") {
      parsed = LiveSortKey::pid;
    } else if (key == "dso") {
      parsed = LiveSortKey::dso;
    } else if (key == "sym" || key == "symbol") {
      parsed = LiveSortKey::sym;
    } else {
      throw std::invalid_argument(fmt::format(
          "--sort '{}': unknown key '{}'; top sorts by comm, pid, dso and sym (e.g. --sort "
          "comm,dso,sym)",
          text, key));
    }
    if (std::find(keys.begin(), keys.end(), parsed) != keys.end()) {
      throw std::invalid_argument(
          fmt::format("--sort '{}': the key '{}' is given twice; name each once", text, key));
    }
    keys.push_back(parsed);
    start = comma + 1;
  }
  return keys;
}

struct LiveProfile::State {
  explicit State(LiveProfileOptions given)
      : options(std::move(given)), resolver(resolver_options()) {
    for (LiveSortKey key : options.sort) {
      keep_comm |= key == LiveSortKey::comm || key == LiveSortKey::pid;
      keep_pid |= key == LiveSortKey::pid;
    }
    ips.reserve(256);
    frames.reserve(256);
    // The runtimes being watched are still writing their jitdumps.
    resolver.symbolizer().set_jit_files_growing(true);
  }

  StackResolverOptions resolver_options() const {
    StackResolverOptions resolved = options.resolver;
    resolved.callchains = options.callchains;
    return resolved;
  }

  struct Function {
    std::uint32_t dso = 0;
    std::string name;
    bool kernel = false;
  };
  struct Cell {
    CellKey key;
    double self = 0;
    double children = 0;
    std::uint64_t stamp = 0;  // the last sample that counted it as a child
  };
  struct Node {
    std::uint32_t parent = none;  // the callee's node (leaf side); none for a leaf
    std::uint32_t function = 0;
    double weight = 0;
  };
  struct ThreadComm {
    std::uint64_t epoch = 0;
    std::uint32_t comm = 0;
  };

  LiveProfileOptions options;
  EventSwitch event_switch;  // --switch-on/--switch-off
  StackResolver resolver;
  bool keep_comm = false, keep_pid = false;

  std::vector<std::string> dsos;
  std::unordered_map<std::string, std::uint32_t> dso_index;
  std::vector<Function> functions;
  std::unordered_map<std::string, std::uint32_t> function_index;
  std::vector<std::uint32_t> address_function;  // by ResolvedAddress::id
  std::string scratch;
  std::vector<std::string> comms;
  std::unordered_map<std::string, std::uint32_t> comm_index;
  std::unordered_map<std::uint32_t, ThreadComm> thread_comms;
  std::uint64_t comm_epoch = 1;

  std::vector<Cell> cells;
  std::unordered_map<CellKey, std::uint32_t, CellHash> cell_index;
  std::vector<Node> nodes;
  std::unordered_map<std::uint64_t, std::uint32_t, PairHash> node_index;

  // Tasks that exited in this interval and in the one before (forgotten at the next refresh).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> exited_now, exited_before;

  SampleRecord sample;
  std::vector<StackAddress> ips;
  std::vector<std::uint32_t> frames;
  std::uint64_t stamp = 0;
  LiveTotals totals;

  // `name` is looked up as it is (the caller's reused buffer); a copy is made only when new.
  std::uint32_t intern(std::vector<std::string>& names,
                       std::unordered_map<std::string, std::uint32_t>& index,
                       const std::string& name) {
    auto found = index.find(name);
    if (found != index.end()) return found->second;
    auto id = static_cast<std::uint32_t>(names.size());
    names.push_back(name);
    index.emplace(name, id);
    return id;
  }

  // Formats and interns the function of a resolution seen for the first time; afterwards its
  // cache id answers. The text is built in reused buffers: a function met again in another
  // process (a new resolution of a known name) allocates nothing.
  std::uint32_t function_of(const ResolvedAddress& resolved) {
    if (resolved.id != ResolvedAddress::no_id && resolved.id < address_function.size() &&
        address_function[resolved.id] != none) {
      return address_function[resolved.id];
    }
    std::string_view dso = resolved.dso.empty()            ? std::string_view("[unknown]")
                           : resolved.dso.starts_with('/') ? file_name_of(resolved.dso)
                                                           : resolved.dso;
    scratch.clear();
    append_terminal_safe(scratch, dso);
    std::uint32_t dso_id = intern(dsos, dso_index, scratch);
    // The key: dso id, mode, name; the name alone is what is kept.
    scratch.clear();
    fmt::format_to(std::back_inserter(scratch), "{}\n{}\n", dso_id, resolved.kernel ? 'k' : '.');
    std::size_t name_at = scratch.size();
    if (resolved.symbol.symbol.empty()) {
      fmt::format_to(std::back_inserter(scratch), "0x{:016x}",
                     resolved.kernel ? resolved.address.ip : resolved.dso_address);
    } else {
      append_terminal_safe(scratch, resolved.symbol.symbol);
    }
    auto found = function_index.find(scratch);
    std::uint32_t function = 0;
    if (found != function_index.end()) {
      function = found->second;
    } else {
      function = static_cast<std::uint32_t>(functions.size());
      functions.push_back({dso_id, scratch.substr(name_at), resolved.kernel});
      function_index.emplace(scratch, function);
    }
    if (resolved.id != ResolvedAddress::no_id) {
      if (resolved.id >= address_function.size()) {
        address_function.resize(std::max<std::size_t>(resolved.id + 1, address_function.size() * 2),
                                none);
      }
      address_function[resolved.id] = function;
    }
    return function;
  }

  std::uint32_t comm_of(std::uint32_t tid) {
    ThreadComm& cached = thread_comms[tid];
    if (cached.epoch == comm_epoch) return cached.comm;
    std::string_view comm = resolver.maps().comm_of(tid);
    std::string name = comm.empty() ? fmt::format(":{}", tid) : terminal_safe(comm);
    cached = {comm_epoch, intern(comms, comm_index, name)};
    return cached.comm;
  }

  Cell& cell_of(const CellKey& key) {
    auto [where, inserted] = cell_index.try_emplace(key, static_cast<std::uint32_t>(cells.size()));
    if (inserted) cells.push_back({key, 0, 0, 0});
    return cells[where->second];
  }

  std::uint32_t node_of(std::uint32_t parent, std::uint32_t function) {
    auto [where, inserted] = node_index.try_emplace(node_key(parent, function),
                                                    static_cast<std::uint32_t>(nodes.size()));
    if (inserted) nodes.push_back({parent, function, 0});
    return where->second;
  }

  void observe_sample(const RecordView& view, const ParseConfig& config) {
    DecodeError error;
    if (!decode_sample(view, config, sample, error)) {
      ++totals.undecodable;
      return;
    }
    std::uint16_t cpumode = view.header.misc & misc::cpumode_mask;
    bool kernel = is_kernel_cpumode(cpumode);
    ++totals.samples;
    ++totals.interval_samples;
    totals.kernel_samples += kernel;
    totals.interval_kernel_samples += kernel;
    resolver.walk_from_sample_ip(sample, cpumode, ips, config.branch_sample_type);
    frames.clear();
    for (const StackAddress& ip : ips)
      frames.push_back(function_of(resolver.resolve(sample.pid, ip)));
    CellKey key;
    key.comm = keep_comm ? comm_of(sample.tid) : 0;
    key.pid = keep_pid ? sample.pid : 0;
    key.function = frames.front();
    ++stamp;
    Cell& leaf = cell_of(key);
    leaf.self += 1;
    leaf.children += 1;
    leaf.stamp = stamp;
    for (std::size_t i = 1; i < frames.size(); ++i) {
      key.function = frames[i];
      Cell& cell = cell_of(key);
      if (cell.stamp != stamp) {  // a recursive function counts once per sample
        cell.stamp = stamp;
        cell.children += 1;
      }
    }
    if (options.callchains) {
      std::uint32_t node = none;
      for (std::uint32_t function : frames) {
        node = node_of(node, function);
        nodes[node].weight += 1;
      }
    }
  }

  void compact() {
    std::size_t dead_cells =
        static_cast<std::size_t>(std::count_if(cells.begin(), cells.end(), [](const Cell& cell) {
          return cell.self < faded && cell.children < faded;
        }));
    if (dead_cells != 0 && dead_cells * 4 >= cells.size()) {
      std::vector<Cell> kept;
      kept.reserve(cells.size() - dead_cells);
      cell_index.clear();
      for (const Cell& cell : cells) {
        if (cell.self < faded && cell.children < faded) continue;
        cell_index.emplace(cell.key, static_cast<std::uint32_t>(kept.size()));
        kept.push_back(cell);
      }
      cells = std::move(kept);
    }
    std::size_t dead_nodes = static_cast<std::size_t>(std::count_if(
        nodes.begin(), nodes.end(), [](const Node& node) { return node.weight < faded; }));
    if (dead_nodes != 0 && dead_nodes * 4 >= nodes.size()) {
      // A node's callers were created after it: one pass in index order remaps every parent.
      std::vector<std::uint32_t> moved(nodes.size(), none);
      std::vector<Node> kept;
      node_index.clear();
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        Node node = nodes[i];
        if (node.weight < faded) continue;
        if (node.parent != none) {
          node.parent = moved[node.parent];
          if (node.parent == none) continue;  // its callee faded first
        }
        moved[i] = static_cast<std::uint32_t>(kept.size());
        node_index.emplace(node_key(node.parent, node.function), moved[i]);
        kept.push_back(node);
      }
      nodes = std::move(kept);
    }
  }

  double total_weight() const {
    double total = 0;
    for (const Cell& cell : cells) total += cell.self;
    return total;
  }

  bool contains(std::string_view text, const std::string& part) const {
    return part.empty() || text.find(part) != std::string_view::npos;
  }

  LiveCallEntry entry(std::uint32_t function, double percent) const {
    const Function& named = functions[function];
    return {dsos[named.dso], named.name, named.kernel, percent, function, {}};
  }

  static void sort_entries(std::vector<LiveCallEntry>& entries) {
    std::sort(entries.begin(), entries.end(), [](const LiveCallEntry& a, const LiveCallEntry& b) {
      if (a.percent != b.percent) return a.percent > b.percent;
      return a.symbol < b.symbol;
    });
  }
};

LiveProfile::LiveProfile(LiveProfileOptions options)
    : state_(std::make_unique<State>(std::move(options))) {}

LiveProfile::~LiveProfile() = default;

void LiveProfile::set_event_switch(EventSwitch event_switch) {
  state_->event_switch = event_switch;
}

void LiveProfile::record(const RecordView& view, std::size_t event, const ParseConfig& config) {
  State& state = *state_;
  switch (static_cast<abi::RecordType>(view.header.type)) {
    case abi::RecordType::sample:
      if (state.event_switch.active() && !state.event_switch.keeps(event)) return;
      state.observe_sample(view, config);
      return;
    case abi::RecordType::comm:
      ++state.comm_epoch;
      state.resolver.observe(view, config);
      return;
    case abi::RecordType::fork:
    case abi::RecordType::mmap:
    case abi::RecordType::mmap2: state.resolver.observe(view, config); return;
    case abi::RecordType::exit: {
      // pid, ppid, tid, ptid (u32 each) after the header.
      std::uint32_t ids[3];
      if (view.bytes.size() < sizeof(abi::RecordHeader) + sizeof ids) return;
      std::memcpy(ids, view.bytes.data() + sizeof(abi::RecordHeader), sizeof ids);
      state.exited_now.emplace_back(ids[0], ids[2]);
      return;
    }
    default: return;
  }
}

void LiveProfile::end_interval() {
  State& state = *state_;
  state.totals.interval_samples = 0;
  state.totals.interval_kernel_samples = 0;
  for (const auto& [pid, tid] : state.exited_before) {
    state.resolver.forget_task(pid, tid);
    state.thread_comms.erase(tid);
  }
  state.totals.exited_tasks += state.exited_before.size();
  state.exited_before.swap(state.exited_now);
  state.exited_now.clear();
  if (state.resolver.cached_addresses() > state.options.address_cache_limit) {
    state.resolver.clear_address_cache();
    std::fill(state.address_function.begin(), state.address_function.end(), none);
    ++state.totals.cache_resets;
  }
  double decay = std::clamp(state.options.decay, 0.0, 1.0);
  if (decay == 0) {
    state.cells.clear();
    state.cell_index.clear();
    state.nodes.clear();
    state.node_index.clear();
    return;
  }
  if (decay == 1) return;
  for (auto& cell : state.cells) {
    cell.self *= decay;
    cell.children *= decay;
  }
  for (auto& node : state.nodes) node.weight *= decay;
  state.compact();
}

LiveSnapshot LiveProfile::snapshot(const LiveSnapshotOptions& options) const {
  const State& state = *state_;
  LiveSnapshot out;
  out.total_weight = state.total_weight();
  bool by_dso = false, by_sym = false;
  for (LiveSortKey key : state.options.sort) {
    by_dso |= key == LiveSortKey::dso;
    by_sym |= key == LiveSortKey::sym;
  }
  std::unordered_map<CellKey, std::size_t, CellHash> row_of;
  std::vector<LiveRow> rows;
  for (const auto& cell : state.cells) {
    const State::Function& function = state.functions[cell.key.function];
    const std::string& dso = state.dsos[function.dso];
    if (!state.contains(function.name, options.symbol_filter) ||
        !state.contains(dso, options.dso_filter)) {
      continue;
    }
    CellKey key = cell.key;
    if (!by_sym) key.function = by_dso ? none - function.dso : none;
    auto [where, inserted] = row_of.try_emplace(key, rows.size());
    if (inserted) {
      LiveRow row;
      if (state.keep_comm) row.comm = state.comms[cell.key.comm];
      row.pid = cell.key.pid;
      if (by_dso || by_sym) row.dso = dso;
      if (by_sym) {
        row.symbol = function.name;
        row.kernel = function.kernel;
        row.function = cell.key.function;
      }
      rows.push_back(std::move(row));
    }
    LiveRow& row = rows[where->second];
    row.weight += cell.self;
    row.children += cell.children;
  }
  double scale = out.total_weight > 0 ? 100.0 / out.total_weight : 0;
  for (auto& row : rows) {
    row.self = row.weight * scale;
    row.children *= scale;
  }
  bool by_children = options.sort_by_children;
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [&](const LiveRow& row) {
                              double share = by_children ? row.children : row.self;
                              return share <= 0 || share < options.percent_limit;
                            }),
             rows.end());
  std::sort(rows.begin(), rows.end(), [&](const LiveRow& a, const LiveRow& b) {
    double left = by_children ? a.children : a.self, right = by_children ? b.children : b.self;
    if (left != right) return left > right;
    if (a.symbol != b.symbol) return a.symbol < b.symbol;
    if (a.dso != b.dso) return a.dso < b.dso;
    if (a.comm != b.comm) return a.comm < b.comm;
    return a.pid < b.pid;
  });
  out.rows_before_limit = rows.size();
  if (options.max_rows != 0 && rows.size() > options.max_rows) rows.resize(options.max_rows);
  out.rows = std::move(rows);
  return out;
}

std::vector<LiveCallEntry> LiveProfile::caller_tree(std::uint32_t function, double min_percent,
                                                    std::size_t depth) const {
  const State& state = *state_;
  auto root = state.node_index.find(node_key(none, function));
  if (root == state.node_index.end() || depth == 0) return {};
  std::vector<std::vector<std::uint32_t>> callers(state.nodes.size());
  for (std::size_t i = 0; i < state.nodes.size(); ++i) {
    if (state.nodes[i].parent != none) {
      callers[state.nodes[i].parent].push_back(static_cast<std::uint32_t>(i));
    }
  }
  double base = state.nodes[root->second].weight;
  if (base <= 0) return {};
  // Levels built breadth first: each entry's callers are those of its node.
  struct Pending {
    std::uint32_t node;
    std::vector<LiveCallEntry>* into;
    std::size_t level;
  };
  std::vector<LiveCallEntry> top;
  std::vector<Pending> pending{{root->second, &top, 1}};
  while (!pending.empty()) {
    Pending next = pending.back();
    pending.pop_back();
    for (std::uint32_t caller : callers[next.node]) {
      double percent = state.nodes[caller].weight * 100.0 / base;
      if (percent < min_percent) continue;
      next.into->push_back(state.entry(state.nodes[caller].function, percent));
    }
    State::sort_entries(*next.into);
    if (next.level >= depth) continue;
    for (auto& entry : *next.into) {
      // The entry's node: (this node, its function) is unique among the node's callers.
      auto found = state.node_index.find(node_key(next.node, entry.function));
      if (found != state.node_index.end())
        pending.push_back({found->second, &entry.callers, next.level + 1});
    }
  }
  return top;
}

LiveCallGraph LiveProfile::call_graph(std::uint32_t function) const {
  const State& state = *state_;
  LiveCallGraph graph;
  if (function >= state.functions.size()) return graph;
  double total = state.total_weight();
  double self = 0, inclusive = 0;
  for (const auto& cell : state.cells) {
    if (cell.key.function != function) continue;
    self += cell.self;
    inclusive += cell.children;
  }
  if (total > 0) {
    graph.self = self * 100.0 / total;
    graph.children = inclusive * 100.0 / total;
  }
  std::unordered_map<std::uint32_t, double> callers, callees;
  for (const auto& node : state.nodes) {
    if (node.parent == none) continue;
    const auto& callee = state.nodes[node.parent];
    if (callee.function == function) callers[node.function] += node.weight;
    if (node.function == function) callees[callee.function] += node.weight;
  }
  auto list = [&](const std::unordered_map<std::uint32_t, double>& weights) {
    std::vector<LiveCallEntry> entries;
    for (const auto& [other, weight] : weights) {
      entries.push_back(state.entry(other, inclusive > 0 ? weight * 100.0 / inclusive : 0));
    }
    State::sort_entries(entries);
    return entries;
  };
  graph.callers = list(callers);
  graph.callees = list(callees);
  return graph;
}

LiveTotals LiveProfile::totals() const noexcept {
  LiveTotals totals = state_->totals;
  totals.cells = state_->cells.size();
  totals.tree_nodes = state_->nodes.size();
  totals.functions = state_->functions.size();
  return totals;
}

const LiveProfileOptions& LiveProfile::options() const noexcept { return state_->options; }

StackResolver& LiveProfile::resolver() noexcept { return state_->resolver; }

}  // namespace perfscope
