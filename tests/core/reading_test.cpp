// decode_read against the layouts the manual gives for read(2), scaling of multiplexed counts, and
// the running statistics behind `stat -r`.
#include "perfscope/core/reading.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/running_statistics.hpp"

namespace pabi = perfscope::abi;
namespace rf = pabi::read_format;
using perfscope::as_measured;
using perfscope::CountStatus;
using perfscope::decode_read;
using perfscope::read_size_bytes;
using perfscope::Reading;
using perfscope::RunningStatistics;
using perfscope::scale;

namespace {

// Builds the words the kernel would return for one event, in the order of the manual's
// struct read_format (single-event layout).
std::vector<std::uint64_t> single_words(std::uint64_t format, const Reading& r) {
  std::vector<std::uint64_t> words{r.value};
  if (format & rf::total_time_enabled) words.push_back(r.enabled);
  if (format & rf::total_time_running) words.push_back(r.running);
  if (format & rf::id) words.push_back(r.id);
  if (format & rf::lost) words.push_back(r.lost);
  return words;
}

// The group layout: nr, [time_enabled], [time_running], then {value, [id], [lost]} per member.
std::vector<std::uint64_t> group_words(std::uint64_t format, const std::vector<Reading>& members) {
  std::vector<std::uint64_t> words{members.size()};
  if (format & rf::total_time_enabled) words.push_back(members.front().enabled);
  if (format & rf::total_time_running) words.push_back(members.front().running);
  for (const auto& m : members) {
    words.push_back(m.value);
    if (format & rf::id) words.push_back(m.id);
    if (format & rf::lost) words.push_back(m.lost);
  }
  return words;
}

}  // namespace

TEST(ReadSize, MatchesTheManualLayouts) {
  EXPECT_EQ(read_size_bytes(0, 1), 8u);
  EXPECT_EQ(read_size_bytes(rf::total_time_enabled | rf::total_time_running, 1), 24u);
  EXPECT_EQ(read_size_bytes(rf::total_time_enabled | rf::total_time_running | rf::id | rf::lost, 1),
            40u);
  // Without GROUP the member count is ignored.
  EXPECT_EQ(read_size_bytes(rf::id, 7), 16u);
  // GROUP: nr + times + per-member words.
  EXPECT_EQ(read_size_bytes(rf::group, 3), (1 + 3) * 8u);
  EXPECT_EQ(read_size_bytes(rf::group | rf::id, 3), (1 + 3 * 2) * 8u);
  EXPECT_EQ(read_size_bytes(
                rf::group | rf::total_time_enabled | rf::total_time_running | rf::id | rf::lost, 2),
            (1 + 2 + 2 * 3) * 8u);
}

// Every one of the 16 combinations of the four optional bits, for a single event.
TEST(DecodeRead, SingleEventEveryFormatCombination) {
  const Reading expected{1001, 2002, 1500, 77, 3};
  for (std::uint64_t format = 0; format < 32; ++format) {
    if (format & rf::group) continue;
    SCOPED_TRACE(format);
    auto words = single_words(format, expected);
    ASSERT_EQ(words.size() * 8, read_size_bytes(format, 1));
    Reading out{9, 9, 9, 9, 9};
    ASSERT_EQ(decode_read(words, format, {&out, 1}), 1u);
    EXPECT_EQ(out.value, 1001u);
    EXPECT_EQ(out.enabled, (format & rf::total_time_enabled) ? 2002u : 0u);
    EXPECT_EQ(out.running, (format & rf::total_time_running) ? 1500u : 0u);
    EXPECT_EQ(out.id, (format & rf::id) ? 77u : 0u);
    EXPECT_EQ(out.lost, (format & rf::lost) ? 3u : 0u);
  }
}

TEST(DecodeRead, GroupEveryFormatCombination) {
  std::vector<Reading> members{
      {10, 500, 400, 101, 1}, {20, 500, 400, 102, 2}, {30, 500, 400, 103, 0}};
  for (std::uint64_t extra = 0; extra < 32; ++extra) {
    if (extra & rf::group) continue;
    std::uint64_t format = extra | rf::group;
    SCOPED_TRACE(format);
    auto words = group_words(format, members);
    ASSERT_EQ(words.size() * 8, read_size_bytes(format, members.size()));
    std::array<Reading, 4> out{};
    ASSERT_EQ(decode_read(words, format, out), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(out[i].value, members[i].value);
      EXPECT_EQ(out[i].enabled, (format & rf::total_time_enabled) ? 500u : 0u);
      EXPECT_EQ(out[i].running, (format & rf::total_time_running) ? 400u : 0u);
      EXPECT_EQ(out[i].id, (format & rf::id) ? members[i].id : 0u);
      EXPECT_EQ(out[i].lost, (format & rf::lost) ? members[i].lost : 0u);
    }
  }
}

TEST(DecodeRead, ShortBuffersDecodeNothing) {
  const std::uint64_t format = rf::total_time_enabled | rf::total_time_running | rf::id | rf::lost;
  auto words = single_words(format, {5, 6, 7, 8, 9});
  Reading out{};
  for (std::size_t n = 0; n < words.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_EQ(decode_read({words.data(), n}, format, {&out, 1}), 0u);
  }
  EXPECT_EQ(decode_read(words, format, {&out, 1}), 1u);

  std::vector<Reading> members{{1, 10, 10, 11, 0}, {2, 10, 10, 12, 0}};
  const std::uint64_t group_format = format | rf::group;
  auto group = group_words(group_format, members);
  std::array<Reading, 2> two{};
  for (std::size_t n = 0; n < group.size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_EQ(decode_read({group.data(), n}, group_format, two), 0u);
  }
  EXPECT_EQ(decode_read(group, group_format, two), 2u);
}

TEST(DecodeRead, RefusesMoreMembersThanTheOutputHolds) {
  std::vector<Reading> members{{1, 0, 0, 0, 0}, {2, 0, 0, 0, 0}, {3, 0, 0, 0, 0}};
  auto words = group_words(rf::group, members);
  std::array<Reading, 2> out{};
  EXPECT_EQ(decode_read(words, rf::group, out), 0u);
  // A single-event read into an empty span has nowhere to go either.
  std::uint64_t one = 4;
  EXPECT_EQ(decode_read({&one, 1}, 0, std::span<Reading>{}), 0u);
}

TEST(Scale, FullyRunningEventIsCountedUnscaled) {
  auto s = scale({12345, 1000, 1000, 0, 0});
  EXPECT_EQ(s.status, CountStatus::counted);
  EXPECT_DOUBLE_EQ(s.value, 12345.0);
  EXPECT_DOUBLE_EQ(s.fraction_running, 1.0);
}

TEST(Scale, MultiplexedEventIsScaledByEnabledOverRunning) {
  // Ran a quarter of the time it was enabled: the estimate is four times the raw count.
  auto s = scale({1000, 4000, 1000, 0, 0});
  EXPECT_EQ(s.status, CountStatus::multiplexed);
  EXPECT_DOUBLE_EQ(s.value, 4000.0);
  EXPECT_DOUBLE_EQ(s.fraction_running, 0.25);

  auto t = scale({300, 3000, 2000, 0, 0});
  EXPECT_EQ(t.status, CountStatus::multiplexed);
  EXPECT_DOUBLE_EQ(t.value, 450.0);
  EXPECT_NEAR(t.fraction_running, 2.0 / 3.0, 1e-12);
}

TEST(Scale, AsMeasuredKeepsWhatThePmuCountedWhileOnIt) {
  // perf stat --no-scale: a quarter of the time on the PMU, its raw 1000, not the estimate.
  Reading quarter{1000, 4000, 1000, 0, 0};
  auto measured = as_measured(quarter, scale(quarter));
  EXPECT_EQ(measured.status, CountStatus::multiplexed);
  EXPECT_DOUBLE_EQ(measured.value, 1000.0);
  EXPECT_DOUBLE_EQ(measured.fraction_running, 0.25);
  // Counted and not-counted readings are the same either way.
  Reading whole{12345, 1000, 1000, 0, 0};
  EXPECT_DOUBLE_EQ(as_measured(whole, scale(whole)).value, 12345.0);
  EXPECT_EQ(as_measured(Reading{}, scale(Reading{})).status, CountStatus::not_counted);
}

TEST(Scale, NeverRunningIsNotCounted) {
  auto s = scale({0, 5000, 0, 0, 0});
  EXPECT_EQ(s.status, CountStatus::not_counted);
  EXPECT_DOUBLE_EQ(s.value, 0.0);
  EXPECT_DOUBLE_EQ(s.fraction_running, 0.0);
  EXPECT_EQ(scale({}).status, CountStatus::not_counted);
}

TEST(ReadingArithmetic, SinceSubtractsEveryCumulativeField) {
  Reading earlier{100, 1000, 800, 42, 1};
  Reading later{350, 3000, 2600, 42, 4};
  Reading delta = later.since(earlier);
  EXPECT_EQ(delta.value, 250u);
  EXPECT_EQ(delta.enabled, 2000u);
  EXPECT_EQ(delta.running, 1800u);
  EXPECT_EQ(delta.id, 42u);  // the id names the event; it is not a count
  EXPECT_EQ(delta.lost, 3u);
}

TEST(ReadingArithmetic, PlusEqualsAddsCountsAndTimes) {
  Reading total{10, 100, 50, 7, 1};
  total += Reading{5, 20, 20, 8, 2};
  EXPECT_EQ(total.value, 15u);
  EXPECT_EQ(total.enabled, 120u);
  EXPECT_EQ(total.running, 70u);
  EXPECT_EQ(total.id, 7u);
  EXPECT_EQ(total.lost, 3u);
}

TEST(RunningStatisticsTest, EmptyAndSingleValue) {
  RunningStatistics stats;
  EXPECT_EQ(stats.count(), 0u);
  EXPECT_DOUBLE_EQ(stats.mean(), 0.0);
  EXPECT_DOUBLE_EQ(stats.stddev(), 0.0);
  EXPECT_DOUBLE_EQ(stats.relative_error_percent(), 0.0);
  stats.add(42);
  EXPECT_EQ(stats.count(), 1u);
  EXPECT_DOUBLE_EQ(stats.mean(), 42.0);
  EXPECT_DOUBLE_EQ(stats.stddev(), 0.0);
  EXPECT_DOUBLE_EQ(stats.relative_error_percent(), 0.0);
}

TEST(RunningStatisticsTest, MatchesHandComputedSampleStatistics) {
  // 2 4 4 4 5 5 7 9: mean 5, sum of squared deviations 32, sample variance 32/7.
  RunningStatistics stats;
  for (double v : {2, 4, 4, 4, 5, 5, 7, 9}) stats.add(v);
  EXPECT_EQ(stats.count(), 8u);
  EXPECT_DOUBLE_EQ(stats.mean(), 5.0);
  EXPECT_NEAR(stats.stddev(), std::sqrt(32.0 / 7.0), 1e-12);
  // stddev of the mean relative to the mean: sqrt(32/7) / sqrt(8) / 5 * 100 = 15.1185...%
  EXPECT_NEAR(stats.relative_error_percent(), 100.0 * std::sqrt(32.0 / 7.0) / std::sqrt(8.0) / 5.0,
              1e-10);
  EXPECT_NEAR(stats.relative_error_percent(), 15.118578920369089, 1e-9);
}

TEST(RunningStatisticsTest, StableForLargeCountsWithSmallSpread) {
  // Naive sum-of-squares loses all precision here; Welford's update does not.
  RunningStatistics stats;
  for (double v : {1e12 + 1, 1e12 + 2, 1e12 + 3}) stats.add(v);
  EXPECT_DOUBLE_EQ(stats.mean(), 1e12 + 2);
  EXPECT_NEAR(stats.stddev(), 1.0, 1e-6);
}

TEST(RunningStatisticsTest, ZeroMeanHasNoRelativeError) {
  RunningStatistics stats;
  stats.add(-1);
  stats.add(1);
  EXPECT_DOUBLE_EQ(stats.mean(), 0.0);
  EXPECT_NEAR(stats.stddev(), std::sqrt(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(stats.relative_error_percent(), 0.0);
}

TEST(ScaleDelta, IdleIntervalOfAnEventThatHasRunIsAnExactZero) {
  Reading cumulative{500, 9000, 9000, 0, 0};
  auto idle = perfscope::scale_delta(Reading{}, cumulative);
  EXPECT_EQ(idle.status, CountStatus::counted);
  EXPECT_DOUBLE_EQ(idle.value, 0.0);
  EXPECT_DOUBLE_EQ(idle.fraction_running, 1.0);
  // Never ran at all: nothing is known.
  EXPECT_EQ(perfscope::scale_delta(Reading{}, Reading{}).status, CountStatus::not_counted);
  // An interval with time scales like any reading.
  auto multiplexed = perfscope::scale_delta({100, 2000, 1000, 0, 0}, cumulative);
  EXPECT_EQ(multiplexed.status, CountStatus::multiplexed);
  EXPECT_DOUBLE_EQ(multiplexed.value, 200.0);
}
