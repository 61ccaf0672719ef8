// Counts per CPU, core, die, socket, node and thread: the grouping exactly on a fake sysfs
// topology (2 sockets x 2 dies x 2 cores x 2 threads, 2 NUMA nodes), and the per-CPU and
// per-thread counts of a real session against its totals.
#include "perfscope/engine/count_aggregation.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event_spec.hpp"
#include "support/test_support.hpp"

namespace {

using perfscope::Aggregation;
using perfscope::CpuLocation;
namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

// cpuN: thread N%2 of core (N/2)%2 of die (N/4)%2 of socket N/8; node 0 holds socket 0.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("perfscope-topology-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    for (int cpu = 0; cpu < 16; ++cpu) {
      fs::path dir = root_ / "devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "topology";
      write(dir / "core_id", std::to_string((cpu / 2) % 2));
      write(dir / "die_id", std::to_string((cpu / 4) % 2));
      write(dir / "physical_package_id", std::to_string(cpu / 8));
    }
    write(root_ / "devices/system/node/node0/cpulist", "0-7");
    write(root_ / "devices/system/node/node1/cpulist", "8-15");
    write(root_ / "devices/system/node/node2/cpulist", "");  // memory only
    write(root_ / "devices/system/node/possible", "0-2");    // not a node directory
  }
  void TearDown() override { fs::remove_all(root_); }
  std::vector<CpuLocation> topology(const std::vector<int>& cpus) {
    return perfscope::read_cpu_topology(cpus, root_.string());
  }
  fs::path root_;
};

std::vector<int> all_cpus() { return perfscope::parse_cpu_list("0-15"); }

TEST_F(FakeSysfs, TopologyIsReadPerCpu) {
  auto cpus = topology({0, 5, 13});
  ASSERT_EQ(cpus.size(), 3u);
  EXPECT_EQ(cpus[1].cpu, 5);
  EXPECT_EQ(cpus[1].core, 0);
  EXPECT_EQ(cpus[1].die, 1);
  EXPECT_EQ(cpus[1].socket, 0);
  EXPECT_EQ(cpus[1].node, 0);
  EXPECT_EQ(cpus[2].core, 0);
  EXPECT_EQ(cpus[2].die, 1);
  EXPECT_EQ(cpus[2].socket, 1);
  EXPECT_EQ(cpus[2].node, 1);
}

TEST_F(FakeSysfs, PerCoreGroupsTheTwoThreadsOfEachCore) {
  auto grouping = perfscope::group_cpus(Aggregation::core, topology(all_cpus()));
  std::vector<std::string> expected{"S0-D0-C0", "S0-D0-C1", "S0-D1-C0", "S0-D1-C1",
                                    "S1-D0-C0", "S1-D0-C1", "S1-D1-C0", "S1-D1-C1"};
  EXPECT_EQ(grouping.labels, expected);
  EXPECT_EQ(grouping.cpu_counts, std::vector<std::size_t>(8, 2));
  for (int cpu = 0; cpu < 16; ++cpu) EXPECT_EQ(grouping.row_of[cpu], cpu / 2u) << cpu;
}

TEST_F(FakeSysfs, PerDieSocketAndNode) {
  auto cpus = topology(all_cpus());
  auto dies = perfscope::group_cpus(Aggregation::die, cpus);
  EXPECT_EQ(dies.labels, (std::vector<std::string>{"S0-D0", "S0-D1", "S1-D0", "S1-D1"}));
  EXPECT_EQ(dies.cpu_counts, std::vector<std::size_t>(4, 4));
  EXPECT_EQ(dies.row_of[6], 1u);
  EXPECT_EQ(dies.row_of[9], 2u);
  auto sockets = perfscope::group_cpus(Aggregation::socket, cpus);
  EXPECT_EQ(sockets.labels, (std::vector<std::string>{"S0", "S1"}));
  EXPECT_EQ(sockets.cpu_counts, (std::vector<std::size_t>{8, 8}));
  EXPECT_EQ(sockets.row_of[7], 0u);
  EXPECT_EQ(sockets.row_of[8], 1u);
  auto nodes = perfscope::group_cpus(Aggregation::node, cpus);
  EXPECT_EQ(nodes.labels, (std::vector<std::string>{"N0", "N1"}));
  EXPECT_EQ(nodes.cpu_counts, (std::vector<std::size_t>{8, 8}));
}

TEST_F(FakeSysfs, ASubsetOfCpusInAnyOrderGroupsInPerfsOrder) {
  // -C 12,3,2: core S0-D0-C1 holds CPUs 2 and 3, and comes first.
  auto grouping = perfscope::group_cpus(Aggregation::core, topology({12, 3, 2}));
  EXPECT_EQ(grouping.labels, (std::vector<std::string>{"S0-D0-C1", "S1-D1-C0"}));
  EXPECT_EQ(grouping.cpu_counts, (std::vector<std::size_t>{2, 1}));
  EXPECT_EQ(grouping.row_of, (std::vector<std::size_t>{1, 0, 0}));
  auto per_cpu = perfscope::group_cpus(Aggregation::cpu, topology({12, 3, 2}));
  EXPECT_EQ(per_cpu.labels, (std::vector<std::string>{"CPU2", "CPU3", "CPU12"}));
}

TEST_F(FakeSysfs, WithoutDieIdsOrNodesEveryCpuIsInDieAndNodeZero) {
  fs::remove_all(root_ / "devices/system/node");
  fs::remove(root_ / "devices/system/cpu/cpu9/topology/die_id");
  auto cpu = topology({9});
  EXPECT_EQ(cpu[0].die, 0);
  EXPECT_EQ(cpu[0].node, 0);
  EXPECT_EQ(perfscope::aggregate_label(Aggregation::core, cpu[0]), "S1-D0-C0");
}

TEST_F(FakeSysfs, AMissingCoreIdNamesTheFile) {
  fs::remove(root_ / "devices/system/cpu/cpu3/topology/core_id");
  try {
    topology({2, 3});
    FAIL() << "no error";
  } catch (const perfscope::Error& error) {
    EXPECT_NE(std::string(error.what()).find("cpu3/topology/core_id"), std::string::npos)
        << error.what();
  }
}

// A real session: the per-CPU counts add up to the totals, one row per online CPU.
TEST(CountAggregation, PerCpuCountsAddUpToTheTotals) {
  if (!perfscope::testing::running_as_root()) GTEST_SKIP() << "CPU-wide counting needs root";
  perfscope::CountingSession session(perfscope::parse_event_list("task-clock,context-switches"),
                                     perfscope::Target::cpus());
  session.open();
  perfscope::CountAggregator per_cpu(Aggregation::cpu, session);
  perfscope::CountAggregator per_core(Aggregation::core, session);
  session.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  session.stop();
  const auto& totals = session.read();
  auto rows = per_cpu.read(session);
  auto online = perfscope::online_cpus();
  ASSERT_EQ(rows.size(), online.size());
  for (std::size_t event = 0; event < totals.size(); ++event) {
    std::uint64_t sum = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      EXPECT_EQ(rows[r].label, "CPU" + std::to_string(online[r]));
      EXPECT_EQ(rows[r].units, 1u);
      sum += rows[r].counts[event].reading.value;
    }
    EXPECT_EQ(sum, totals[event].reading.value) << totals[event].name;
  }
  std::uint64_t core_sum = 0;
  std::size_t cpus = 0;
  for (const auto& row : per_core.read(session)) {
    core_sum += row.counts[0].reading.value;
    cpus += row.units;
  }
  EXPECT_EQ(core_sum, totals[0].reading.value);
  EXPECT_EQ(cpus, online.size());
  // Each CPU's clock ran about the 50 ms (not less: it counts idle time too).
  for (const auto& row : rows) EXPECT_GE(row.counts[0].reading.value, 45'000'000u) << row.label;
}

TEST(CountAggregation, PerThreadCountsEachThreadOfAProcess) {
  // This process's threads: the main thread and one that burns its own page faults.
  std::atomic<bool> go{false};
  pid_t worker_tid = 0;
  std::thread worker([&] {
    worker_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    while (!go) std::this_thread::yield();
    std::vector<char> pages(64 * 4096);
    for (std::size_t i = 0; i < pages.size(); i += 4096) pages[i] = 1;
  });
  while (worker_tid == 0) std::this_thread::yield();
  perfscope::CountingOptions options;
  options.inherit = false;
  perfscope::CountingSession session(perfscope::parse_event_list("task-clock"),
                                     perfscope::Target::process(::getpid()), options);
  session.open();
  perfscope::CountAggregator per_thread(Aggregation::thread, session);
  session.start();
  go = true;
  worker.join();
  session.stop();
  const auto& totals = session.read();
  auto rows = per_thread.read(session);
  ASSERT_EQ(rows.size(), session.units().size());
  std::uint64_t sum = 0;
  bool found_worker = false;
  for (const auto& row : rows) {
    sum += row.counts[0].reading.value;
    EXPECT_EQ(row.label.substr(row.label.rfind('-') + 1), std::to_string(row.tid));
    if (row.tid == worker_tid) found_worker = true;
  }
  EXPECT_TRUE(found_worker);
  EXPECT_EQ(sum, totals[0].reading.value);
  EXPECT_THROW(perfscope::CountAggregator(Aggregation::core, session), std::invalid_argument);
}

}  // namespace
