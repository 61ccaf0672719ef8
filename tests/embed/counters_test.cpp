// The embedding API on this machine: region counts that the kernel makes exact (minor faults on
// fresh pages, tracepoint hits), nesting and reset, process scope counting threads that existed
// before the counters and threads created after, the multiplexing correction on synthetic
// readings, live reads, user-space-only counting at perf_event_paranoid 2, and the JSON and CSV
// output parsed back.
#include "perfscope/embed/counters.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "perfscope/core/error.hpp"
#include "perfscope/embed/scoped_region.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/fresh_pages.hpp"
#include "support/test_support.hpp"

namespace {

using perfscope::Counters;
using perfscope::CountersOptions;
using perfscope::CountersScope;
using perfscope::CountStatus;
using perfscope::EventCount;
using perfscope::Reading;
using perfscope::ReadPath;
using perfscope::ReadStatus;
using perfscope::ScopedRegion;

using perfscope::testing::FaultWitness;
using perfscope::testing::FreshPages;

void call_getppid(int times) {
  for (int i = 0; i < times; ++i) ::syscall(SYS_getppid);
}

TEST(Counters, RegionCountsMinorFaultsOnFreshPagesExactly) {
  perfscope::testing::prepare_exact_fault_count();
  Counters counters("minor-faults,task-clock");
  {
    // First run of the region code itself: its own first-touch faults happen here.
    FreshPages warm(4);
    ScopedRegion region(counters, "warm-up");
    warm.touch();
  }
  constexpr std::size_t pages = 64;
  FreshPages first(pages), second(pages);
  ASSERT_TRUE(first.valid() && second.valid());
  FaultWitness witness;
  {
    ScopedRegion region(counters, "touch");
    first.touch();
  }
  auto report = counters.region_report("touch");
  EXPECT_EQ(report.runs, 1U);
  EXPECT_EQ(report.value("minor-faults"), pages) << witness.outside(first);
  {
    ScopedRegion region(counters, "touch");
    second.touch();
  }
  witness.stop();
  report = counters.region_report("touch");
  EXPECT_EQ(report.runs, 2U);
  EXPECT_EQ(report.value("minor-faults"), 2 * pages) << witness.outside({&first, &second});
  const EventCount* faults = report.find("minor-faults");
  ASSERT_NE(faults, nullptr);
  EXPECT_EQ(faults->scaled.status, CountStatus::counted);
  EXPECT_DOUBLE_EQ(faults->scaled.fraction_running, 1.0);
  // task-clock shares the group: CPUs utilized from the region's own wall time.
  EXPECT_GT(report.value("task-clock"), 0.0);
  EXPECT_LE(report.value("task-clock"), static_cast<double>(report.elapsed_ns));
  const auto& metric = report.metrics[1];
  ASSERT_TRUE(metric.has_value());
  EXPECT_EQ(metric->unit, "CPUs utilized");
  EXPECT_GT(metric->value, 0.0);
  EXPECT_LE(metric->value, 1.0);
  // The totals hold every region, the warm-up included.
  EXPECT_EQ(counters.report().runs, 3U);
  EXPECT_GE(counters.report().value("minor-faults"), 2.0 * pages + 4);
}

TEST(Counters, NestedRegionsCountTheirOwnScopes) {
  perfscope::testing::prepare_exact_fault_count();
  Counters counters("minor-faults");
  {
    FreshPages warm(2);
    ScopedRegion outer(counters, "outer");
    ScopedRegion inner(counters, "inner");
    warm.touch();
  }
  counters.reset();
  FreshPages outer_pages(40), inner_pages(24);
  ASSERT_TRUE(outer_pages.valid() && inner_pages.valid());
  FaultWitness witness;
  {
    ScopedRegion outer(counters, "outer");
    outer_pages.touch();
    {
      ScopedRegion inner(counters, "inner");
      inner_pages.touch();
    }
  }
  witness.stop();
  std::string outside = witness.outside({&outer_pages, &inner_pages});
  EXPECT_EQ(counters.region_report("outer").value("minor-faults"), 64.0) << outside;
  EXPECT_EQ(counters.region_report("inner").value("minor-faults"), 24.0) << outside;
  EXPECT_EQ(counters.region_report("outer").runs, 1U);
  EXPECT_FALSE(counters.running());
}

TEST(Counters, ResetZeroesTotalsAndRegions) {
  Counters counters("minor-faults");
  FreshPages pages(16);
  ASSERT_TRUE(pages.valid());
  {
    ScopedRegion region(counters, "r");
    pages.touch();
  }
  EXPECT_GE(counters.report().value("minor-faults"), 16.0);
  counters.reset();
  EXPECT_EQ(counters.report().value("minor-faults"), 0.0);
  EXPECT_EQ(counters.report().runs, 0U);
  EXPECT_EQ(counters.region_report("r").runs, 0U);
  EXPECT_EQ(counters.region_report("r").value("minor-faults"), 0.0);
}

TEST(Counters, TracepointHitsInARegionAreExact) {
  if (!perfscope::testing::tracefs_available()) GTEST_SKIP() << "tracefs is not mounted";
  std::unique_ptr<Counters> counters;
  try {
    counters = std::make_unique<Counters>("syscalls:sys_enter_getppid");
  } catch (const perfscope::Error& error) {
    GTEST_SKIP() << "the getppid tracepoint cannot be counted here: " << error.what();
  }
  auto id = counters->region("getppid");
  for (int run = 0; run < 3; ++run) {
    ScopedRegion region(*counters, id);
    call_getppid(1000);
  }
  auto report = counters->region_report("getppid");
  EXPECT_EQ(report.runs, 3U);
  EXPECT_EQ(report.value("syscalls:sys_enter_getppid"), 3000.0);
}

// Threads that exist before the counters, threads created between construction and start, and
// threads created while counting all count in process scope; the calling-thread scope counts
// none of them.
// Each thread waits for phase 1, then calls getppid `calls` times and touches `pages` pages.
void thread_work(std::atomic<int>& phase, int calls, std::size_t pages) {
  while (phase.load() == 0) std::this_thread::yield();
  FreshPages memory(pages);
  call_getppid(calls);
  memory.touch();
}

void expect_process_scope_counts(bool exact_tracepoint) {
  std::atomic<int> phase{0};
  std::thread existing([&] { thread_work(phase, 1000, 100); });
  CountersOptions options;
  options.scope = CountersScope::process;
  std::string events = exact_tracepoint ? "syscalls:sys_enter_getppid,minor-faults,task-clock"
                                        : "minor-faults,task-clock";
  Counters counters(events, options);
  std::thread between([&] { thread_work(phase, 2000, 200); });
  counters.start();
  phase.store(1);
  std::thread later([&] { thread_work(phase, 4000, 400); });
  existing.join();
  between.join();
  later.join();
  counters.stop();
  auto report = counters.report();
  if (exact_tracepoint) {
    EXPECT_EQ(report.value("syscalls:sys_enter_getppid"), 7000.0);
  }
  EXPECT_GE(report.value("minor-faults"), 700.0);
  // Thread start-up faults (stacks, TLS) come on top, but not thousands.
  EXPECT_LT(report.value("minor-faults"), 1400.0);
  EXPECT_GT(report.value("task-clock"), 0.0);
}

TEST(Counters, ProcessScopeCountsThreadsCreatedBeforeAndAfterStart) {
  bool tracepoint = perfscope::testing::tracefs_available();
  if (tracepoint) {
    try {
      Counters probe("syscalls:sys_enter_getppid");
    } catch (const perfscope::Error&) {
      tracepoint = false;
    }
  }
  expect_process_scope_counts(tracepoint);
  if (!tracepoint) GTEST_SKIP() << "checked minor faults only: the getppid tracepoint is absent";
}

TEST(Counters, CallingThreadScopeCountsOnlyTheCallingThread) {
  Counters counters("minor-faults");
  std::atomic<int> phase{1};
  counters.start();
  std::thread other([&] { thread_work(phase, 0, 300); });
  other.join();
  counters.stop();
  EXPECT_LT(counters.report().value("minor-faults"), 300.0);
}

TEST(Counters, UngroupedEventsAreGroupedPerPmuWithSoftwareEventsInTheCpuGroup) {
  Counters counters("cycles,instructions,task-clock,{context-switches,cpu-migrations}");
  const auto& events = counters.events();
  ASSERT_EQ(events.size(), 5U);
  EXPECT_EQ(events[0].name, "cycles");
  EXPECT_EQ(events[0].group, events[1].group);
  EXPECT_EQ(events[0].group, events[2].group);
  EXPECT_EQ(events[3].group, events[4].group);
  EXPECT_NE(events[3].group, events[0].group);
  EXPECT_EQ(counters.group_count(), 2U);
}

TEST(Counters, MultiplexedReadingsAreScaledAndRatiosStayWithinAGroup) {
  auto count = [](std::string name, std::size_t group, std::uint64_t value, std::uint64_t enabled,
                  std::uint64_t running) {
    EventCount result;
    result.name = std::move(name);
    result.group = group;
    result.reading = Reading{value, enabled, running, 0, 0};
    return result;
  };
  // Two regions summed: 10 counted over 50 of 100 ns, then 30 over 100 of 100 ns.
  Reading summed = Reading{10, 100, 50, 0, 0};
  summed += Reading{30, 100, 100, 0, 0};
  std::vector<EventCount> counts = {
      count("cycles", 0, 1000, 400, 100),
      count("instructions", 0, 3000, 400, 100),
      count("branches", 1, 500, 400, 400),
      count("branch-misses", 2, 50, 400, 400),
      count("cache-misses", 1, summed.value, summed.enabled, summed.running),
      count("page-faults", 1, 7, 400, 0),
  };
  auto report = perfscope::make_counter_report("synthetic", counts, 1000, 2);
  EXPECT_DOUBLE_EQ(report.value("cycles"), 4000.0);
  EXPECT_DOUBLE_EQ(report.counts[0].scaled.fraction_running, 0.25);
  EXPECT_EQ(report.counts[0].scaled.status, CountStatus::multiplexed);
  EXPECT_DOUBLE_EQ(report.value("instructions"), 12000.0);
  ASSERT_TRUE(report.metrics[1].has_value());
  EXPECT_DOUBLE_EQ(report.metrics[1]->value, 3.0);
  EXPECT_EQ(report.metrics[1]->unit, "insn per cycle");
  EXPECT_EQ(report.counts[2].scaled.status, CountStatus::counted);
  // branch-misses and branches are in different groups: no ratio across them.
  EXPECT_FALSE(report.metrics[3].has_value());
  EXPECT_DOUBLE_EQ(report.value("cache-misses"), 40.0 * 200.0 / 150.0);
  EXPECT_EQ(report.counts[5].scaled.status, CountStatus::not_counted);
  EXPECT_EQ(perfscope::count_status_name(report.counts[5]), "not counted");
}

TEST(Counters, LiveReadsFollowTheCountsWithoutStopping) {
  perfscope::testing::prepare_exact_fault_count();
  Counters counters("minor-faults,task-clock");
  std::array<Reading, 1> small{};
  EXPECT_EQ(counters.read_into(small).status, ReadStatus::buffer_too_small);
  std::array<Reading, 2> before{}, after{};
  FreshPages warm(2), pages(32);
  ASSERT_TRUE(warm.valid() && pages.valid());
  // The counted sequence once first, on pages of its own: its code and stack are resident after.
  counters.start();
  counters.read_into(before);
  warm.touch();
  counters.read_into(after);
  counters.stop();
  FaultWitness witness;
  counters.start();
  auto first = counters.read_into(before);
  pages.touch();
  auto second = counters.read_into(after);
  EXPECT_TRUE(counters.running());
  counters.stop();
  witness.stop();
  ASSERT_EQ(first.status, ReadStatus::ok);
  ASSERT_EQ(second.status, ReadStatus::ok);
  EXPECT_EQ(second.events, 2U);
  EXPECT_EQ(second.path, ReadPath::syscall);  // software events have no counter to read
  EXPECT_FALSE(counters.syscall_reason(0).empty());
  EXPECT_EQ(after[0].value - before[0].value, 32U) << witness.outside(pages);
  EXPECT_GT(after[1].value, before[1].value);
  EXPECT_GE(after[1].enabled, before[1].enabled);
}

TEST(Counters, HardwareLiveReadsTakeUserSpaceWhereTheKernelAllows) {
  if (!perfscope::testing::hardware_counters_available()) {
    GTEST_SKIP() << "no hardware counters here";
  }
  Counters counters("instructions,cycles");
  counters.start();
  std::array<Reading, 2> readings{};
  auto first = counters.read_into(readings);
  if (!counters.syscall_reason(0).empty()) {
    counters.stop();
    GTEST_SKIP() << "user-space reads unavailable: " << counters.syscall_reason(0);
  }
  std::array<Reading, 2> later{};
  volatile std::uint64_t sink = 0;
  for (int i = 0; i < 100000; ++i) sink = sink + static_cast<std::uint64_t>(i);
  auto second = counters.read_into(later);
  counters.stop();
  ASSERT_EQ(first.status, ReadStatus::ok);
  EXPECT_EQ(second.path, ReadPath::user_space);
  EXPECT_GT(later[0].value, readings[0].value + 100000);
  if (second.times_current) {
    EXPECT_GT(later[0].running, readings[0].running);
  } else {
    // No cap_user_time (a VM clock): the times are as of the last switch, and equal.
    EXPECT_EQ(later[0].enabled, later[0].running);
    EXPECT_EQ(later[1].enabled, later[0].enabled);
  }
  // The stopped counters read by read(2) cannot be below the last user-space read.
  EXPECT_GE(counters.report().value("instructions"), static_cast<double>(later[0].value));
  // With a thread other than the counted one the same read takes read(2).
  std::thread other([&] { EXPECT_EQ(counters.read_into(readings).path, ReadPath::syscall); });
  other.join();
}

TEST(Counters, UnprivilegedAtParanoidTwoCountsUserSpaceWithANotice) {
  if (!perfscope::testing::running_as_root()) GTEST_SKIP() << "needs root to drop privileges";
  auto paranoid = perfscope::sys::read_sysctl("perf_event_paranoid");
  if (!paranoid || *paranoid < 2) GTEST_SKIP() << "perf_event_paranoid is below 2";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(10);
    try {
      Counters counters("task-clock,minor-faults");
      if (counters.notices().empty() ||
          counters.notices()[0].find("user space only") == std::string::npos) {
        _exit(11);
      }
      // A forked child's first write to any page it shares with its parent is a fault of its
      // own: the region runs once on pages of its own before the counted run.
      perfscope::testing::prepare_exact_fault_count();
      FreshPages warm(2), pages(8);
      {
        ScopedRegion region(counters, "warm-up");
        warm.touch();
      }
      {
        ScopedRegion region(counters, "r");
        pages.touch();
      }
      _exit(counters.region_report("r").value("minor-faults") == 8.0 ? 0 : 12);
    } catch (...) {
      _exit(13);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setresuid failed, 11: no notice, 12: wrong count, "
                                       "13: the counters failed to open";
}

TEST(Counters, JsonAndCsvParseBackToTheReport) {
  Counters counters("minor-faults,task-clock,context-switches");
  FreshPages pages(10);
  ASSERT_TRUE(pages.valid());
  {
    ScopedRegion region(counters, "first");
    pages.touch();
  }
  { ScopedRegion region(counters, "second, quoted \"name\""); }
  auto reports = counters.region_reports();
  ASSERT_EQ(reports.size(), 2U);

  auto json = nlohmann::json::parse(perfscope::format_json(reports));
  ASSERT_EQ(json["regions"].size(), 2U);
  EXPECT_EQ(json["regions"][0]["region"], "first");
  EXPECT_EQ(json["regions"][1]["region"], "second, quoted \"name\"");
  EXPECT_EQ(json["regions"][0]["runs"], 1);
  const auto& events = json["regions"][0]["events"];
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(events[0]["name"], "minor-faults");
  EXPECT_EQ(events[0]["value"].get<double>(), reports[0].value("minor-faults"));
  EXPECT_EQ(events[0]["raw"].get<std::uint64_t>(), reports[0].counts[0].reading.value);
  EXPECT_EQ(events[0]["status"], "counted");
  EXPECT_EQ(events[1]["metric_unit"], "CPUs utilized");

  std::istringstream csv(perfscope::format_csv(reports));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line,
            "region,runs,elapsed_ns,event,group,value,raw,enabled_ns,running_ns,fraction_running,"
            "status,metric,metric_unit");
  std::vector<std::string> rows;
  while (std::getline(csv, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 6U);
  // first,1,<elapsed>,minor-faults,0,<value>,...
  std::vector<std::string> cells;
  std::stringstream row(rows[0]);
  std::string cell;
  while (std::getline(row, cell, ',')) cells.push_back(cell);
  ASSERT_GE(cells.size(), 11U);
  EXPECT_EQ(cells[0], "first");
  EXPECT_EQ(cells[1], "1");
  EXPECT_EQ(std::stoull(cells[2]), reports[0].elapsed_ns);
  EXPECT_EQ(cells[3], "minor-faults");
  EXPECT_EQ(std::stod(cells[5]), reports[0].value("minor-faults"));
  EXPECT_EQ(cells[10], "counted");
  EXPECT_EQ(rows[3].rfind("\"second, quoted \"\"name\"\"\",1,", 0), 0U);

  std::string table = perfscope::format_table(reports);
  EXPECT_NE(table.find("region 'first' (1 run,"), std::string::npos);
  EXPECT_NE(table.find("minor-faults"), std::string::npos);
}

TEST(Counters, MalformedEventStringsThrowWithThePosition) {
  EXPECT_THROW(Counters("cycles,,instructions"), perfscope::EventSpecError);
  EXPECT_THROW(Counters("no-such-event-anywhere"), std::exception);
}

}  // namespace
