// Counts per CPU, core, die, socket, NUMA node or thread (perf stat -A, --per-core,
// --per-socket, --per-die, --per-node, --per-thread): a CountingSession's units read one by one
// and summed by the key each unit maps to. The CPU topology comes from sysfs, under a root that
// tests can point at a fake tree.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/engine/counting_session.hpp"

namespace perfscope {

enum class Aggregation : std::uint8_t { global, cpu, core, die, socket, node, thread };

// "cpu", "core", ...: the key perf's JSON output names the label with ("global" for none).
std::string_view aggregation_name(Aggregation mode) noexcept;

struct CpuLocation {
  int cpu = -1;
  int core = -1;    // topology/core_id
  int die = -1;     // topology/die_id (0 where the kernel has no dies)
  int socket = -1;  // topology/physical_package_id
  int node = -1;    // the node whose cpulist holds the CPU (0 without NUMA in sysfs)
};

// The topology of `cpus` from <sysfs_root>/devices/system/{cpu,node}. Throws perfscope::Error
// naming the file when a CPU's core or package id cannot be read.
std::vector<CpuLocation> read_cpu_topology(const std::vector<int>& cpus,
                                           const std::string& sysfs_root = "/sys");

// perf's label of an aggregate: CPU3, S0-D0-C1, S0-D0, S0, N0, comm-tid.
std::string aggregate_label(Aggregation mode, const CpuLocation& where);

// How CPUs group under a CPU mode (cpu, core, die, socket, node): the aggregates in perf's
// order (by socket, die and core; by node; by CPU), and the aggregate of each given CPU.
struct CpuGrouping {
  std::vector<std::string> labels;      // one per aggregate
  std::vector<std::size_t> cpu_counts;  // CPUs in each aggregate
  std::vector<std::size_t> row_of;      // per entry of the topology: its aggregate
};
CpuGrouping group_cpus(Aggregation mode, const std::vector<CpuLocation>& topology);

struct AggregateCounts {
  std::string label;               // see aggregate_label
  std::size_t units = 0;           // CPUs (or threads) summed: perf's "aggregate-number"
  int cpu = -1;                    // Aggregation::cpu: the CPU
  pid_t tid = -1;                  // Aggregation::thread: the thread
  std::vector<EventCount> counts;  // one per event, in the session's order, scaled
};

class CountAggregator {
 public:
  // Resolves every unit of an opened session to its aggregate: labels and topology are taken
  // now (a thread's name while it lives). Throws std::invalid_argument when the mode needs a
  // CPU-wide target (cpu..node) or a task target (thread) and the session has the other, and
  // perfscope::Error when the topology cannot be read.
  CountAggregator(Aggregation mode, const CountingSession& session,
                  const std::string& sysfs_root = "/sys");

  Aggregation mode() const noexcept { return mode_; }
  // The counts of every aggregate, in perf's order (by socket, die, core, node, cpu or the
  // order the threads were found). Reads the session's groups one by one.
  std::vector<AggregateCounts> read(CountingSession& session) const;

 private:
  Aggregation mode_;
  std::vector<AggregateCounts> shapes_;   // labels, counts named, readings zero
  std::vector<std::size_t> unit_to_row_;  // per session unit
};

}  // namespace perfscope
