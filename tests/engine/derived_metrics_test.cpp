// derived_metric on synthetic counts: the figures perf stat prints beside a count.
#include "perfscope/engine/derived_metrics.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace {

using perfscope::CountStatus;
using perfscope::derived_metric;
using perfscope::DerivedMetric;
using perfscope::EventCount;
using perfscope::is_time_event;

EventCount counted(std::string name, double value) {
  EventCount count;
  count.name = std::move(name);
  count.reading.value = static_cast<std::uint64_t>(value);
  count.reading.enabled = count.reading.running = 1'000'000;
  count.scaled.value = value;
  count.scaled.fraction_running = 1.0;
  count.scaled.status = CountStatus::counted;
  return count;
}

EventCount not_counted(std::string name) {
  EventCount count;
  count.name = std::move(name);
  count.scaled.status = CountStatus::not_counted;
  return count;
}

EventCount unsupported(std::string name) {
  EventCount count;
  count.name = std::move(name);
  count.supported = false;
  count.open_errno = 2;
  count.unsupported_reason = "no PMU";
  return count;
}

constexpr double one_second_ns = 1e9;

std::optional<DerivedMetric> metric_of(const std::vector<EventCount>& counts, std::size_t index,
                                       double elapsed_ns = one_second_ns) {
  return derived_metric(counts, index, elapsed_ns);
}

void expect_metric(const std::optional<DerivedMetric>& metric, double value,
                   const std::string& unit) {
  ASSERT_TRUE(metric.has_value()) << "expected " << value << " " << unit;
  EXPECT_NEAR(metric->value, value, 1e-9 * std::max(1.0, value));
  EXPECT_EQ(metric->unit, unit);
}

TEST(DerivedMetrics, CpusUtilizedIsTaskClockOverElapsed) {
  std::vector<EventCount> counts{counted("task-clock", 1.5e9)};
  expect_metric(metric_of(counts, 0, 1e9), 1.5, "CPUs utilized");
  expect_metric(metric_of(counts, 0, 3e9), 0.5, "CPUs utilized");
  EXPECT_FALSE(metric_of(counts, 0, 0).has_value());
}

TEST(DerivedMetrics, InstructionsPerCycle) {
  std::vector<EventCount> counts{counted("cycles", 1000), counted("instructions", 3000)};
  expect_metric(metric_of(counts, 1), 3.0, "insn per cycle");
  std::vector<EventCount> aliased{counted("instructions", 500), counted("cpu-cycles", 2000)};
  expect_metric(metric_of(aliased, 0), 0.25, "insn per cycle");
}

TEST(DerivedMetrics, IpcNeedsCountedNonzeroCycles) {
  EXPECT_FALSE(metric_of({counted("instructions", 3000)}, 0).has_value());
  EXPECT_FALSE(metric_of({counted("cycles", 0), counted("instructions", 3000)}, 1).has_value());
  EXPECT_FALSE(metric_of({not_counted("cycles"), counted("instructions", 3000)}, 1).has_value());
  EXPECT_FALSE(metric_of({unsupported("cycles"), counted("instructions", 3000)}, 1).has_value());
}

TEST(DerivedMetrics, RatiosPairEventsWithTheSameModifiers) {
  std::vector<EventCount> counts{counted("cycles:k", 4000), counted("cycles:u", 1000),
                                 counted("instructions:u", 2000)};
  expect_metric(metric_of(counts, 2), 2.0, "insn per cycle");
  // instructions:u over all cycles would mix what was counted: no figure.
  EXPECT_FALSE(
      metric_of({counted("cycles", 1000), counted("instructions:u", 2000)}, 1).has_value());
}

TEST(DerivedMetrics, BranchMissPercent) {
  std::vector<EventCount> counts{counted("branches", 1000), counted("branch-misses", 25)};
  expect_metric(metric_of(counts, 1), 2.5, "% of all branches");
  std::vector<EventCount> aliased{counted("branch-instructions", 200),
                                  counted("branch-misses", 50)};
  expect_metric(metric_of(aliased, 1), 25.0, "% of all branches");
  EXPECT_FALSE(metric_of({counted("branch-misses", 50)}, 0).has_value());
}

TEST(DerivedMetrics, CacheMissPercent) {
  std::vector<EventCount> counts{counted("cache-references", 400), counted("cache-misses", 100)};
  expect_metric(metric_of(counts, 1), 25.0, "% of all cache refs");
}

TEST(DerivedMetrics, GigahertzIsCyclesPerTaskClockSecond) {
  std::vector<EventCount> counts{counted("task-clock", 1.5e9), counted("cycles", 3e9)};
  expect_metric(metric_of(counts, 1), 2.0, "GHz");
  EXPECT_FALSE(metric_of({counted("cycles", 3e9)}, 0).has_value());
}

TEST(DerivedMetrics, RatesPerTaskClockSecondWithUnits) {
  // Half a second of task-clock: rates are twice the counts.
  auto rate = [](double value) {
    return metric_of({counted("task-clock", 0.5e9), counted("page-faults", value)}, 1);
  };
  expect_metric(rate(250), 500, "/sec");
  expect_metric(rate(499.5), 999, "/sec");
  expect_metric(rate(500), 1, "K/sec");
  expect_metric(rate(2500), 5, "K/sec");
  expect_metric(rate(2.5e6), 5, "M/sec");
  expect_metric(rate(2.5e9), 5, "G/sec");
  expect_metric(rate(0), 0, "/sec");
}

TEST(DerivedMetrics, MultiplexedCountsUseScaledValues) {
  std::vector<EventCount> counts{counted("cycles", 1000), counted("instructions", 1000)};
  counts[0].scaled.value = 4000;  // ran a quarter of the time
  counts[0].scaled.fraction_running = 0.25;
  counts[0].scaled.status = CountStatus::multiplexed;
  expect_metric(metric_of(counts, 1), 0.25, "insn per cycle");
}

TEST(DerivedMetrics, NothingForUncountedOrUnsupportedEvents) {
  std::vector<EventCount> counts{counted("task-clock", 1e9), not_counted("page-faults"),
                                 unsupported("cycles"), not_counted("task-clock:u")};
  EXPECT_FALSE(metric_of(counts, 1).has_value());
  EXPECT_FALSE(metric_of(counts, 2).has_value());
  EXPECT_FALSE(metric_of(counts, 3).has_value());
}

TEST(DerivedMetrics, NoRateWithoutACountedTaskClock) {
  EXPECT_FALSE(metric_of({counted("page-faults", 100)}, 0).has_value());
  EXPECT_FALSE(metric_of({not_counted("task-clock"), counted("page-faults", 100)}, 1).has_value());
  EXPECT_FALSE(metric_of({counted("task-clock", 0), counted("page-faults", 100)}, 1).has_value());
}

TEST(DerivedMetrics, ClocksHaveNoRate) {
  std::vector<EventCount> counts{counted("task-clock", 1e9), counted("cpu-clock", 1e9)};
  EXPECT_FALSE(metric_of(counts, 1).has_value());
}

TEST(DerivedMetrics, TimeEventsAreTheClocks) {
  EXPECT_TRUE(is_time_event(counted("task-clock", 1)));
  EXPECT_TRUE(is_time_event(counted("cpu-clock", 1)));
  EXPECT_TRUE(is_time_event(counted("task-clock:u", 1)));
  EXPECT_FALSE(is_time_event(counted("page-faults", 1)));
  EXPECT_FALSE(is_time_event(counted("cycles", 1)));
}

}  // namespace
