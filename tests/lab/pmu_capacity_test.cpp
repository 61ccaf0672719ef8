// The counter-capacity probe on a PMU whose counters are known: QEMU's armv8_pmuv3 has six event
// counters and the cycle counter. The probe must find exactly that, free counters must drop by
// one per pinned event, and groups beyond either limit must be warned about, including the one the
// kernel lets open although it can never run.
#include "perfscope/engine/pmu_capacity.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "lab/lab_workload.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/engine/counting_session.hpp"
#include "perfscope/engine/target.hpp"

namespace {

using perfscope::Event;
using perfscope::EventAttr;
using perfscope::parse_event_list;
using perfscope::PmuCapacity;

constexpr std::size_t qemu_generic_counters = 6;

std::string repeated(const std::string& event, std::size_t times) {
  std::string list;
  for (std::size_t i = 0; i < times; ++i) list += (i ? "," : "") + event;
  return list;
}

Event pinned_instructions() {
  EventAttr attr = parse_event_list("instructions:u").at(0).events.at(0).attr;
  attr.set_flag(perfscope::abi::attr_flag::pinned);
  return Event::open(attr);
}

TEST(PmuCapacity, ProbeFindsSixGenericCountersAndTheCycleCounter) {
  const PmuCapacity& capacity = perfscope::pmu_capacity();
  ASSERT_TRUE(capacity.known) << capacity.reason;
  std::printf("pmu-lab: probed capacity: %s (probe event %s)\n", capacity.describe().c_str(),
              capacity.probe_event.c_str());
  EXPECT_EQ(capacity.probe_event, "instructions");
  EXPECT_EQ(capacity.generic_counters, qemu_generic_counters);
  EXPECT_TRUE(capacity.cycles_counter);
  EXPECT_FALSE(capacity.instructions_counter);  // INST_RETIRED has no counter of its own
  EXPECT_FALSE(capacity.ref_cycles_counter);
  EXPECT_EQ(capacity.describe(), "6 generic counters and a cycle counter");
}

TEST(PmuCapacity, FreeCountersDropByOnePerPinnedEvent) {
  const PmuCapacity& capacity = perfscope::pmu_capacity();
  ASSERT_TRUE(capacity.known) << capacity.reason;
  // Nothing else holds counters in the lab (no NMI watchdog on perf here, no other profiler).
  EXPECT_EQ(perfscope::free_generic_counters(capacity), qemu_generic_counters);
  std::vector<Event> pinned;
  for (std::size_t held = 1; held <= 3; ++held) {
    pinned.push_back(pinned_instructions());
    std::size_t free_now = perfscope::free_generic_counters(capacity);
    std::printf("pmu-lab: %zu pinned instructions:u: %zu generic counters free\n", held, free_now);
    EXPECT_EQ(free_now, qemu_generic_counters - held);
  }
}

TEST(PmuCapacity, AGroupLargerThanThePmuGetsTheNeverScheduledWarning) {
  // cycles takes the cycle counter, the seven instructions need seven of the six event counters.
  std::string too_large = "{cycles:u," + repeated("instructions:u", 7) + "}";
  auto warnings = perfscope::group_capacity_warnings(parse_event_list(too_large));
  ASSERT_EQ(warnings.size(), 1U);
  std::printf("pmu-lab: warning: %s\n", warnings[0].c_str());
  EXPECT_EQ(warnings[0], "group " + too_large +
                             " has 8 hardware events but the PMU has 6 generic counters and a "
                             "cycle counter: it can never be scheduled; split it");
  // The largest group that fits is not warned about; neither are ungrouped events.
  EXPECT_TRUE(perfscope::group_capacity_warnings(
                  parse_event_list("{cycles:u," + repeated("instructions:u", 6) + "}"))
                  .empty());
  EXPECT_TRUE(
      perfscope::group_capacity_warnings(parse_event_list(repeated("instructions:u", 10))).empty());
}

TEST(PmuCapacity, AGroupThatFitsOnlyWithoutThePinnedEventGetsTheNotFreeWarning) {
  Event pinned = pinned_instructions();
  std::string group = "{" + repeated("instructions:u", qemu_generic_counters) + "}";
  auto warnings = perfscope::group_capacity_warnings(parse_event_list(group));
  ASSERT_EQ(warnings.size(), 1U);
  std::printf("pmu-lab: warning: %s\n", warnings[0].c_str());
  EXPECT_NE(warnings[0].find("needs 6 generic counters but only 5 of the PMU's 6 are free now"),
            std::string::npos)
      << warnings[0];
}

TEST(PmuCapacity, AGroupOneTooLargeOpensWithADisabledLeaderButNeverRunsAndIsWarnedAbout) {
  // Counting sessions open leaders disabled, and arm's validate_group does not count disabled
  // events: seven instructions open as a group on six event counters, and never run.
  std::string group = "{" + repeated("instructions:u", qemu_generic_counters + 1) + "}";
  auto warnings = perfscope::group_capacity_warnings(parse_event_list(group));
  ASSERT_EQ(warnings.size(), 1U);
  std::printf("pmu-lab: warning: %s\n", warnings[0].c_str());
  EXPECT_NE(warnings[0].find("has 7 hardware events but the PMU has 6 generic counters and a cycle "
                             "counter: it can never be scheduled"),
            std::string::npos)
      << warnings[0];

  perfscope::CountingSession session(parse_event_list(group), perfscope::Target::calling_thread());
  session.open();
  session.start();
  perfscope::lab::run_loop(1'000'000);
  session.stop();
  const auto& counts = session.read();
  ASSERT_EQ(counts.size(), qemu_generic_counters + 1);
  for (const auto& count : counts) {
    EXPECT_TRUE(count.supported) << "the kernel let every member open: "
                                 << count.unsupported_reason;
    EXPECT_EQ(count.scaled.status, perfscope::CountStatus::not_counted);
    EXPECT_EQ(count.reading.running, 0U);
    EXPECT_GT(count.reading.enabled, 0U);
  }
}

}  // namespace
