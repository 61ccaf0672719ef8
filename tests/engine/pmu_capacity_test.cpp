// PmuCapacity: what a group asks of the PMU and the warnings for groups that cannot be scheduled,
// against synthetic capacities (any machine); the probe itself against this machine's PMU where
// it has one. tests/lab/pmu_capacity_test.cpp checks the probe's exact answer on a known PMU.
#include "perfscope/engine/pmu_capacity.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "support/test_support.hpp"

namespace {

using perfscope::EventAttr;
using perfscope::group_capacity_warnings;
using perfscope::group_demand;
using perfscope::parse_event_list;
using perfscope::PmuCapacity;
namespace pt = perfscope::testing;

// armv8_pmuv3 under QEMU: six event counters and the cycle counter.
PmuCapacity arm_like() {
  PmuCapacity capacity;
  capacity.known = true;
  capacity.probe_event = "instructions";
  capacity.generic_counters = 6;
  capacity.cycles_counter = true;
  return capacity;
}

// An Intel core: four generic counters and fixed ones for instructions, cycles and ref-cycles.
PmuCapacity intel_like() {
  PmuCapacity capacity;
  capacity.known = true;
  capacity.probe_event = "branch-instructions";
  capacity.generic_counters = 4;
  capacity.cycles_counter = capacity.instructions_counter = capacity.ref_cycles_counter = true;
  return capacity;
}

std::string repeated(const std::string& event, int times) {
  std::string list;
  for (int i = 0; i < times; ++i) list += (i ? "," : "") + event;
  return list;
}

std::vector<std::string> warnings_for(const std::string& events, const PmuCapacity& capacity,
                                      std::size_t free_generic) {
  return group_capacity_warnings(parse_event_list(events), capacity, free_generic);
}

TEST(PmuCapacity, DescribesGenericAndDedicatedCounters) {
  EXPECT_EQ(arm_like().describe(), "6 generic counters and a cycle counter");
  EXPECT_EQ(intel_like().describe(),
            "4 generic counters and fixed counters for cycles, instructions and ref-cycles");
  PmuCapacity amd_like;
  amd_like.known = true;
  amd_like.generic_counters = 1;
  EXPECT_EQ(amd_like.describe(), "1 generic counter");
  EXPECT_EQ(PmuCapacity{}.describe(), "an unknown number of counters");
}

TEST(PmuCapacity, GroupDemandCountsOnlyCorePmuEventsAndCreditsDedicatedCounters) {
  auto demand = [](const std::string& events, const PmuCapacity& capacity) {
    return group_demand(parse_event_list(events).at(0), capacity);
  };
  auto group = demand("{cycles:u,instructions:u,task-clock,page-faults}", arm_like());
  EXPECT_EQ(group.hardware_events, 2U);
  EXPECT_EQ(group.generic_needed, 1U);  // cycles takes the cycle counter
  EXPECT_EQ(group.text, "{cycles:u,instructions:u,task-clock,page-faults}");
  // One cycle counter: a second cycles event needs a generic counter.
  EXPECT_EQ(demand("{cycles,cycles,cycles}", arm_like()).generic_needed, 2U);
  // On Intel all three fixed kinds have counters of their own; cache events never do.
  auto intel = demand("{cycles,instructions,ref-cycles,branches,L1-dcache-loads}", intel_like());
  EXPECT_EQ(intel.hardware_events, 5U);
  EXPECT_EQ(intel.generic_needed, 2U);
  // A raw event might be the cycle counter's event (arm64 raw 0x11): given the benefit of the
  // doubt while a dedicated counter is left.
  EXPECT_EQ(demand("{r11,instructions}", arm_like()).generic_needed, 1U);
  EXPECT_EQ(demand("{r11,r11,instructions}", arm_like()).generic_needed, 2U);
  EXPECT_EQ(demand("{cycles,r11}", arm_like()).generic_needed, 1U);
}

TEST(PmuCapacity, AGroupLargerThanThePmuIsWarnedAboutOnce) {
  auto warnings = warnings_for("{cycles:u," + repeated("instructions:u", 7) + "}", arm_like(), 6);
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_EQ(warnings[0],
            "group {cycles:u," + repeated("instructions:u", 7) +
                "} has 8 hardware events but the PMU has 6 generic counters and a cycle counter: "
                "it can never be scheduled; split it");
  // Exactly full: no warning.
  EXPECT_TRUE(
      warnings_for("{cycles:u," + repeated("instructions:u", 6) + "}", arm_like(), 6).empty());
  // Not braced: separate events take turns, nothing to warn about.
  EXPECT_TRUE(warnings_for(repeated("instructions:u", 20), arm_like(), 6).empty());
  // Software events take no counter.
  EXPECT_TRUE(warnings_for("{" + repeated("task-clock", 12) + "}", arm_like(), 6).empty());
  // Several groups: each judged alone.
  auto two = warnings_for("{" + repeated("branches", 5) + "},{" + repeated("branches", 4) + "}",
                          intel_like(), 4);
  ASSERT_EQ(two.size(), 1U);
  EXPECT_NE(two[0].find("has 5 hardware events"), std::string::npos) << two[0];
}

TEST(PmuCapacity, AGroupThatFitsButNotTheFreeCountersIsWarnedAboutDifferently) {
  auto warnings = warnings_for("{" + repeated("instructions:u", 6) + "}", arm_like(), 5);
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_NE(warnings[0].find("needs 6 generic counters but only 5 of the PMU's 6 are free now"),
            std::string::npos)
      << warnings[0];
  EXPECT_TRUE(warnings_for("{" + repeated("instructions:u", 5) + "}", arm_like(), 5).empty());
}

TEST(PmuCapacity, UnknownCapacityWarnsAboutNothing) {
  EXPECT_TRUE(warnings_for("{" + repeated("instructions", 40) + "}", PmuCapacity{}, 0).empty());
}

// The probe on this machine: its answer must agree with what the kernel does with groups.
TEST(PmuCapacityProbe, AGroupOfTheProbedSizeOpensAndOneMoreIsRefused) {
  if (!pt::hardware_counters_available()) GTEST_SKIP() << "no hardware counters here";
  const PmuCapacity& capacity = perfscope::pmu_capacity();
  ASSERT_TRUE(capacity.known) << capacity.reason;
  std::printf("probed: %s (probe event %s)\n", capacity.describe().c_str(),
              capacity.probe_event.c_str());
  EXPECT_GE(capacity.generic_counters, 2U);
  EXPECT_LT(capacity.generic_counters, 64U);
  EXPECT_EQ(&capacity, &perfscope::pmu_capacity()) << "probed once, then cached";

  EventAttr attr = parse_event_list(capacity.probe_event + ":u").at(0).events.at(0).attr;
  std::vector<perfscope::Event> group;
  for (std::size_t i = 0; i < capacity.generic_counters; ++i) {
    EventAttr member = attr;
    member.set_flag(perfscope::abi::attr_flag::disabled, i == 0);
    group.push_back(perfscope::Event::open(member, 0, -1, i == 0 ? nullptr : &group[0]));
  }
  int errnum = 0;
  auto extra = perfscope::Event::try_open(attr, 0, -1, &group[0], 0, errnum);
  EXPECT_FALSE(extra.valid());
  EXPECT_EQ(errnum, EINVAL);
}

TEST(PmuCapacityProbe, APinnedEventTakesOneFreeCounter) {
  if (!pt::hardware_counters_available()) GTEST_SKIP() << "no hardware counters here";
  const PmuCapacity& capacity = perfscope::pmu_capacity();
  ASSERT_TRUE(capacity.known) << capacity.reason;
  std::size_t free_before = perfscope::free_generic_counters(capacity);
  std::printf("free generic counters: %zu of %zu\n", free_before, capacity.generic_counters);
  EXPECT_LE(free_before, capacity.generic_counters);
  if (free_before == 0) GTEST_SKIP() << "every generic counter is held by other events";
  // A pinned event of this thread is scheduled before any flexible group and keeps its counter.
  EventAttr pinned = parse_event_list(capacity.probe_event + ":u").at(0).events.at(0).attr;
  pinned.set_flag(perfscope::abi::attr_flag::pinned);
  perfscope::Event holder = perfscope::Event::open(pinned);
  EXPECT_EQ(perfscope::free_generic_counters(capacity), free_before - 1);
}

}  // namespace
