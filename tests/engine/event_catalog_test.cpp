// The event catalog behind `perfscope list`: categories and PMU aliases from the fake sysfs and
// tracefs trees, pattern selection, and the open checks on this machine.
#include "perfscope/engine/event_catalog.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "perfscope/core/pmu_registry.hpp"
#include "support/test_support.hpp"

using perfscope::CatalogEvent;
using perfscope::CatalogOptions;
using perfscope::EventCategory;
using perfscope::OpenCheck;

namespace {

const std::string data_dir = PERFSCOPE_TEST_DATA_DIR;

const CatalogEvent* find(const std::vector<CatalogEvent>& events, const std::string& name) {
  auto found = std::find_if(events.begin(), events.end(),
                            [&](const CatalogEvent& event) { return event.name == name; });
  return found == events.end() ? nullptr : &*found;
}

std::size_t count(const std::vector<CatalogEvent>& events, EventCategory category) {
  return static_cast<std::size_t>(std::count_if(
      events.begin(), events.end(), [&](const auto& event) { return event.category == category; }));
}

}  // namespace

TEST(EventCatalog, FakeSysfsAndTracefs) {
  perfscope::PmuRegistry registry(data_dir + "/fake_sysfs/plain");
  CatalogOptions options;
  options.pmus = &registry;
  options.tracefs_root = data_dir + "/fake_tracefs";
  options.probe = false;
  auto events = perfscope::list_events(options);
  EXPECT_EQ(count(events, EventCategory::hardware), 10u);
  EXPECT_EQ(count(events, EventCategory::software), 12u);
  EXPECT_EQ(count(events, EventCategory::cache), 42u);
  // 6 cpu + 2 msr + 1 power + 3 on each of two uncore_imc PMUs.
  EXPECT_EQ(count(events, EventCategory::pmu), 15u);
  EXPECT_EQ(count(events, EventCategory::tracepoint), 7u);
  EXPECT_EQ(count(events, EventCategory::breakpoint), 1u);
  EXPECT_EQ(count(events, EventCategory::probe), 4u);
  // Grouped in category order, sorted within.
  EXPECT_TRUE(std::is_sorted(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return a.category != b.category ? a.category < b.category : a.name < b.name;
  }));

  const auto* energy = find(events, "power/energy-pkg/");
  ASSERT_NE(energy, nullptr);
  EXPECT_EQ(energy->alias, "energy-pkg");
  EXPECT_EQ(energy->unit, "Joules");
  EXPECT_DOUBLE_EQ(*energy->scale, 2.3283064365386962890625e-10);
  EXPECT_EQ(energy->encoding, "event=0x02");
  EXPECT_EQ(energy->open, OpenCheck::not_probed);
  EXPECT_TRUE(find(events, "uncore_imc_1/clockticks/")->per_pkg);
  EXPECT_TRUE(find(events, "uncore_imc_0/occupancy/")->snapshot);
  const auto* cycles = find(events, "cycles");
  ASSERT_NE(cycles, nullptr);
  EXPECT_EQ(cycles->alias, "cpu-cycles");
  EXPECT_EQ(cycles->encoding, "PERF_TYPE_HARDWARE/0");
  EXPECT_FALSE(cycles->description.empty());
  EXPECT_EQ(find(events, "sched:sched_switch")->category, EventCategory::tracepoint);
  // The fake tree has a kprobe PMU; without probing it is not opened.
  EXPECT_EQ(find(events, "kprobe:function[+offset]")->open, OpenCheck::not_probed);
}

TEST(EventCatalog, PatternsSelect) {
  perfscope::PmuRegistry registry(data_dir + "/fake_sysfs/plain");
  CatalogOptions options;
  options.pmus = &registry;
  options.tracefs_root = data_dir + "/fake_tracefs";
  options.probe = false;
  options.pattern = "sched:*";
  auto sched = perfscope::list_events(options);
  ASSERT_EQ(sched.size(), 3u);
  for (const auto& event : sched) EXPECT_EQ(event.category, EventCategory::tracepoint);
  options.pattern = "tsc";  // no wildcard: a substring of the name or alias
  auto tsc = perfscope::list_events(options);
  ASSERT_EQ(tsc.size(), 1u);
  EXPECT_EQ(tsc[0].name, "msr/tsc/");
  options.pattern = "cs";  // the alias of context-switches
  auto cs = perfscope::list_events(options);
  ASSERT_NE(find(cs, "context-switches"), nullptr);
  options.pattern = "no-such-event-anywhere";
  EXPECT_TRUE(perfscope::list_events(options).empty());
  EXPECT_TRUE(perfscope::catalog_pattern_matches("L1-*-misses", "L1-dcache-load-misses"));
  EXPECT_FALSE(perfscope::catalog_pattern_matches("L1-*-misses", "LLC-load-misses"));
}

TEST(EventCatalog, ProbesOnThisMachine) {
  CatalogOptions options;
  options.pattern = "task-clock";
  auto clock = perfscope::list_events(options);
  ASSERT_EQ(clock.size(), 1u);
  EXPECT_EQ(clock[0].open, OpenCheck::opens);

  options.pattern = "bus-cycles";
  auto bus = perfscope::list_events(options);
  ASSERT_EQ(bus.size(), 1u);
  EXPECT_NE(bus[0].open, OpenCheck::not_probed);
  if (bus[0].open == OpenCheck::fails) {
    EXPECT_FALSE(bus[0].open_error.empty());
  }

  if (!perfscope::testing::tracefs_available() || !perfscope::testing::running_as_root()) {
    GTEST_SKIP() << "tracepoints need tracefs and root here";
  }
  // A few tracepoints are opened; the whole list is not.
  options.pattern = "syscalls:sys_enter_getpid";
  auto getpid = perfscope::list_events(options);
  ASSERT_EQ(getpid.size(), 1u);
  EXPECT_EQ(getpid[0].open, OpenCheck::opens);
  options.pattern = "syscalls:*";
  auto syscalls = perfscope::list_events(options);
  ASSERT_GT(syscalls.size(), options.slow_probe_limit);
  EXPECT_EQ(syscalls[0].open, OpenCheck::not_probed);
  EXPECT_FALSE(syscalls[0].open_error.empty());
}
