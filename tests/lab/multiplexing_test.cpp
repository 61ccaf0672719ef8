// Counter scheduling on the emulated PMU (armv8_pmuv3: 6 event counters and the cycle counter):
// multiplexed events scale back to the exact count, groups that do not fit together take turns,
// a group that can never be scheduled is reported as not counted, and a group larger than the
// PMU is refused with a diagnosis.
#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "lab/lab_workload.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/reading.hpp"
#include "perfscope/engine/counting_session.hpp"
#include "perfscope/engine/target.hpp"

namespace {

using perfscope::CountingSession;
using perfscope::CountStatus;
using perfscope::Event;
using perfscope::EventAttr;
using perfscope::EventCount;
using perfscope::Target;

constexpr int generic_counters = 6;  // armv8_pmuv3 under QEMU; the cycle counter is extra

// Long enough for dozens of multiplexing rotations (every 4 ms, i.e. 4M emulated instructions).
constexpr std::uint64_t loop_iterations = 50'000'000;
constexpr double loop_instructions = 2.0 * loop_iterations;

std::string repeated(const std::string& event, int times) {
  std::string list;
  for (int i = 0; i < times; ++i) list += (i ? "," : "") + event;
  return list;
}

std::vector<EventCount> count_loop(const std::string& events) {
  CountingSession session(perfscope::parse_event_list(events), Target::calling_thread());
  session.open();
  session.start();
  perfscope::lab::run_loop(loop_iterations);
  session.stop();
  return session.read();
}

void print(const char* what, const std::vector<EventCount>& counts) {
  for (const auto& count : counts) {
    std::printf("pmu-lab: %s: %s group %zu raw %llu enabled %llu running %llu scaled %.0f (%.4f)\n",
                what, count.name.c_str(), count.group,
                static_cast<unsigned long long>(count.reading.value),
                static_cast<unsigned long long>(count.reading.enabled),
                static_cast<unsigned long long>(count.reading.running), count.scaled.value,
                count.scaled.value / loop_instructions - 1);
  }
}

TEST(Multiplexing, TenEventsScaleToWithinOnePercentOfTheExactCount) {
  auto counts = count_loop(repeated("instructions:u", 10));
  print("10 events", counts);
  ASSERT_EQ(counts.size(), 10U);
  for (const auto& count : counts) {
    ASSERT_TRUE(count.supported) << count.unsupported_reason;
    EXPECT_EQ(count.scaled.status, CountStatus::multiplexed);
    EXPECT_LT(count.reading.running, count.reading.enabled);
    EXPECT_GT(count.reading.running, 0U);
    EXPECT_NEAR(count.scaled.value, loop_instructions, loop_instructions * 0.01);
    // perf stat --no-scale: the count while on the PMU, its share of the loop's instructions.
    auto measured = perfscope::as_measured(count.reading, count.scaled);
    EXPECT_DOUBLE_EQ(measured.value, static_cast<double>(count.reading.value));
    EXPECT_NEAR(measured.value, loop_instructions * count.scaled.fraction_running,
                loop_instructions * 0.01);
  }
}

TEST(Multiplexing, TwoGroupsOfFiveTakeTurnsWithIdenticalMemberCounts) {
  std::string group = "{" + repeated("instructions:u", 5) + "}";
  auto counts = count_loop(group + "," + group);
  print("2 groups of 5", counts);
  ASSERT_EQ(counts.size(), 10U);
  for (std::size_t g = 0; g < 2; ++g) {
    const EventCount& leader = counts[g * 5];
    EXPECT_NEAR(leader.scaled.fraction_running, 0.5, 0.1) << "group " << g;
    EXPECT_NEAR(leader.scaled.value, loop_instructions, loop_instructions * 0.01);
    for (std::size_t m = 1; m < 5; ++m) {
      const EventCount& member = counts[g * 5 + m];
      // Scheduled as one: the same instructions, the same times.
      EXPECT_EQ(member.reading.value, leader.reading.value) << "group " << g << " member " << m;
      EXPECT_EQ(member.reading.enabled, leader.reading.enabled);
      EXPECT_EQ(member.reading.running, leader.reading.running);
    }
  }
}

TEST(GroupLimits, CyclesPlusSixEventCountersFillThePmuAndCountExactly) {
  // The cycle counter takes cycles, so a group of 7 fits: one more than the event counters.
  auto counts = count_loop("{cycles:u," + repeated("instructions:u", generic_counters) + "}");
  print("group of 7", counts);
  ASSERT_EQ(counts.size(), 7U);
  for (const auto& count : counts) {
    ASSERT_TRUE(count.supported) << count.unsupported_reason;
    EXPECT_EQ(count.scaled.status, CountStatus::counted) << count.name;
  }
  for (std::size_t i = 2; i < counts.size(); ++i) {
    EXPECT_EQ(counts[i].reading.value, counts[1].reading.value);
  }
  EXPECT_EQ(counts[0].reading.value, counts[1].reading.value);  // cycles == instructions
}

TEST(GroupLimits, AnEighthHardwareMemberIsRefusedWithADiagnosedEinval) {
  // The arm PMU driver checks at open that the group fits its counters (validate_group): the
  // member that does not fit fails with EINVAL; the ones before it open. The check leaves out
  // disabled events, here the leader: the seven instructions members are what does not fit the
  // six event counters (pmu_capacity_test.cpp shows a group that opens but never runs).
  auto attr = [](const char* text, bool leader) {
    EventAttr a = perfscope::parse_event_list(text).at(0).events.at(0).attr;
    a.set_flag(perfscope::abi::attr_flag::disabled, leader);
    return a;
  };
  std::vector<Event> group;
  group.push_back(Event::open(attr("cycles:u", true)));
  for (int i = 0; i < generic_counters; ++i) {
    group.push_back(Event::open(attr("instructions:u", false), 0, -1, &group[0]));
  }
  try {
    Event::open(attr("instructions:u", false), 0, -1, &group[0], 0, "instructions:u");
    FAIL() << "an 8th hardware member should not fit 6 event counters and the cycle counter";
  } catch (const perfscope::Error& error) {
    std::printf("pmu-lab: 8th member: %s\n", error.what());
    EXPECT_EQ(error.errnum(), EINVAL);
    EXPECT_NE(error.diagnosis().find("joins a group"), std::string::npos) << error.what();
  }

  // CountingSession reports the member that cannot join as not supported, with the reason, and
  // counts the rest.
  auto counts = count_loop("{cycles:u," + repeated("instructions:u", generic_counters + 1) + "}");
  ASSERT_EQ(counts.size(), 8U);
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_TRUE(counts[i].supported) << i;
    EXPECT_EQ(counts[i].scaled.status, CountStatus::counted) << i;
  }
  EXPECT_FALSE(counts[7].supported);
  EXPECT_EQ(counts[7].open_errno, EINVAL);
  EXPECT_NE(counts[7].unsupported_reason.find("the group has 8 events"), std::string::npos)
      << counts[7].unsupported_reason;
}

TEST(GroupLimits, AGroupThatCanNeverBeScheduledIsReportedNotCounted) {
  // A pinned event holds one event counter for as long as it is enabled; a group needing all
  // six opens (it would fit an idle PMU) but never gets on.
  EventAttr pinned_attr = perfscope::parse_event_list("instructions:u").at(0).events.at(0).attr;
  pinned_attr.set_flag(perfscope::abi::attr_flag::pinned);
  Event pinned = Event::open(pinned_attr);

  auto counts = count_loop("{cycles:u," + repeated("instructions:u", generic_counters) + "}");
  print("blocked group of 7", counts);
  ASSERT_EQ(counts.size(), 7U);
  for (const auto& count : counts) {
    ASSERT_TRUE(count.supported) << count.unsupported_reason;
    EXPECT_EQ(count.scaled.status, CountStatus::not_counted) << count.name;
    EXPECT_EQ(count.reading.running, 0U);
    EXPECT_GT(count.reading.enabled, 0U);
  }
  perfscope::Reading pinned_reading;
  ASSERT_TRUE(pinned.read(pinned_reading));
  EXPECT_GE(static_cast<double>(pinned_reading.value), loop_instructions);
}

}  // namespace
