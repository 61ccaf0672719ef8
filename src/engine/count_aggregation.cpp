#include "perfscope/engine/count_aggregation.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <tuple>

#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

std::optional<int> read_int_file(const std::string& path) {
  auto text = sys::read_text_file(path);
  if (!text) return std::nullopt;
  std::string_view view(*text);
  while (!view.empty() && (view.back() == '\n' || view.back() == ' ')) view.remove_suffix(1);
  int value = 0;
  auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (error != std::errc() || end != view.data() + view.size()) return std::nullopt;
  return value;
}

int required_id(const std::string& path) {
  auto value = read_int_file(path);
  if (!value) {
    throw Error(ENOENT, fmt::format("cannot read the CPU topology file {}", path),
                "per-core and per-socket counts need /sys/devices/system/cpu/cpuN/topology "
                "(mount sysfs, or count with -A / without aggregation).");
  }
  return *value;
}

// The node of each CPU from node*/cpulist; CPUs in no node (no NUMA in sysfs) are node 0.
std::map<int, int> read_nodes(const std::string& sysfs_root) {
  std::map<int, int> node_of;
  std::error_code error;
  std::filesystem::directory_iterator nodes(sysfs_root + "/devices/system/node", error);
  if (error) return node_of;
  for (const auto& entry : nodes) {
    std::string name = entry.path().filename().string();
    if (name.size() < 5 || name.compare(0, 4, "node") != 0) continue;
    int node = 0;
    auto [end, bad] = std::from_chars(name.data() + 4, name.data() + name.size(), node);
    if (bad != std::errc() || end != name.data() + name.size()) continue;
    auto list = sys::read_text_file(entry.path().string() + "/cpulist");
    if (!list) continue;
    std::string_view text(*list);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    if (text.empty()) continue;  // a memory-only node
    for (int cpu : parse_cpu_list(text)) node_of[cpu] = node;
  }
  return node_of;
}

std::string thread_name(pid_t tid) {
  auto comm = sys::read_text_file(fmt::format("/proc/{}/comm", tid));
  if (!comm) return {};
  while (!comm->empty() && comm->back() == '\n') comm->pop_back();
  return *comm;
}

bool cpu_wide(Target::Kind kind) {
  return kind == Target::Kind::cpus || kind == Target::Kind::cgroup;
}

}  // namespace

std::string_view aggregation_name(Aggregation mode) noexcept {
  switch (mode) {
    case Aggregation::global: return "global";
    case Aggregation::cpu: return "cpu";
    case Aggregation::core: return "core";
    case Aggregation::die: return "die";
    case Aggregation::socket: return "socket";
    case Aggregation::node: return "node";
    case Aggregation::thread: return "thread";
  }
  return "";
}

std::vector<CpuLocation> read_cpu_topology(const std::vector<int>& cpus,
                                           const std::string& sysfs_root) {
  std::map<int, int> node_of = read_nodes(sysfs_root);
  std::vector<CpuLocation> topology;
  topology.reserve(cpus.size());
  for (int cpu : cpus) {
    std::string dir = fmt::format("{}/devices/system/cpu/cpu{}/topology/", sysfs_root, cpu);
    CpuLocation where;
    where.cpu = cpu;
    where.core = required_id(dir + "core_id");
    where.socket = required_id(dir + "physical_package_id");
    where.die = read_int_file(dir + "die_id").value_or(0);  // before Linux 5.2: one die
    auto node = node_of.find(cpu);
    where.node = node == node_of.end() ? 0 : node->second;
    topology.push_back(where);
  }
  return topology;
}

std::string aggregate_label(Aggregation mode, const CpuLocation& where) {
  switch (mode) {
    case Aggregation::cpu: return fmt::format("CPU{}", where.cpu);
    case Aggregation::core: return fmt::format("S{}-D{}-C{}", where.socket, where.die, where.core);
    case Aggregation::die: return fmt::format("S{}-D{}", where.socket, where.die);
    case Aggregation::socket: return fmt::format("S{}", where.socket);
    case Aggregation::node: return fmt::format("N{}", where.node);
    case Aggregation::global:
    case Aggregation::thread: break;
  }
  return {};
}

CpuGrouping group_cpus(Aggregation mode, const std::vector<CpuLocation>& topology) {
  auto key = [mode](const CpuLocation& t) -> std::tuple<int, int, int> {
    switch (mode) {
      case Aggregation::core: return {t.socket, t.die, t.core};
      case Aggregation::die: return {t.socket, t.die, 0};
      case Aggregation::socket: return {t.socket, 0, 0};
      case Aggregation::node: return {t.node, 0, 0};
      default: return {t.cpu, 0, 0};
    }
  };
  std::map<std::tuple<int, int, int>, std::size_t> rows;
  for (const auto& where : topology) rows.emplace(key(where), 0);
  CpuGrouping grouping;
  std::size_t next = 0;
  for (auto& entry : rows) entry.second = next++;
  grouping.labels.resize(rows.size());
  grouping.cpu_counts.assign(rows.size(), 0);
  for (const auto& where : topology) {
    std::size_t row = rows[key(where)];
    grouping.row_of.push_back(row);
    if (grouping.cpu_counts[row]++ == 0) grouping.labels[row] = aggregate_label(mode, where);
  }
  return grouping;
}

CountAggregator::CountAggregator(Aggregation mode, const CountingSession& session,
                                 const std::string& sysfs_root)
    : mode_(mode) {
  const auto& units = session.units();
  unit_to_row_.assign(units.size(), 0);
  std::vector<EventCount> blank = session.events();
  for (auto& count : blank) {
    count.reading = Reading{};
    count.scaled = ScaledCount{};
  }
  if (mode == Aggregation::global) {
    shapes_.push_back({{}, units.size(), -1, -1, blank});
    return;
  }
  if (mode == Aggregation::thread) {
    if (cpu_wide(session.target().kind())) {
      throw std::invalid_argument(
          "--per-thread counts the threads of a task target: give -p PID, -t TID or a command");
    }
    for (std::size_t u = 0; u < units.size(); ++u) {
      pid_t tid = units[u].pid;
      if (tid == 0) tid = ::gettid();
      std::string comm = thread_name(tid);
      // A launched command is still the recorder's copy here, before its exec: it will be
      // called as the kernel names it then, the file's base name in 15 bytes.
      const auto& argv = session.target().argv();
      if (session.target().kind() == Target::Kind::command && !argv.empty()) {
        std::string_view file = argv.front();
        comm = std::string(file.substr(file.rfind('/') + 1).substr(0, 15));
      }
      AggregateCounts row{fmt::format("{}-{}", comm.empty() ? "?" : comm, tid), 1, -1, tid, blank};
      unit_to_row_[u] = shapes_.size();
      shapes_.push_back(std::move(row));
    }
    return;
  }
  if (!cpu_wide(session.target().kind())) {
    throw std::invalid_argument(fmt::format(
        "per-{} counts need CPU-wide counting: add -a (or -C CPUS)",
        mode == Aggregation::cpu ? std::string("CPU") : std::string(aggregation_name(mode))));
  }
  std::vector<int> cpus;
  for (const auto& unit : units) cpus.push_back(unit.cpu);
  std::vector<CpuLocation> topology = read_cpu_topology(cpus, sysfs_root);
  CpuGrouping grouping = group_cpus(mode, topology);
  unit_to_row_ = grouping.row_of;
  for (std::size_t row = 0; row < grouping.labels.size(); ++row) {
    shapes_.push_back({grouping.labels[row], grouping.cpu_counts[row], -1, -1, blank});
  }
  if (mode == Aggregation::cpu) {
    for (std::size_t u = 0; u < units.size(); ++u) shapes_[unit_to_row_[u]].cpu = units[u].cpu;
  }
}

std::vector<AggregateCounts> CountAggregator::read(CountingSession& session) const {
  std::vector<AggregateCounts> rows = shapes_;
  std::vector<Reading> unit_counts;
  for (std::size_t u = 0; u < unit_to_row_.size(); ++u) {
    session.read_unit(u, unit_counts);
    auto& counts = rows[unit_to_row_[u]].counts;
    for (std::size_t i = 0; i < counts.size() && i < unit_counts.size(); ++i) {
      counts[i].reading.value += unit_counts[i].value;
      counts[i].reading.enabled += unit_counts[i].enabled;
      counts[i].reading.running += unit_counts[i].running;
    }
  }
  for (auto& row : rows) {
    for (auto& count : row.counts) count.scaled = scale(count.reading);
  }
  return rows;
}

}  // namespace perfscope
