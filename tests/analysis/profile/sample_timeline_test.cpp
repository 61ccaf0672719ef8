// SampleTimeline: every sample comes back as it went in (group, time, period), across pages and
// blocks, times that go back or jump far, periods that start to differ after pages of a common
// one, from any first sample to any last; groups renumber; released pages are freed; a fixed
// period costs no byte.
#include "perfscope/analysis/profile/sample_timeline.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

namespace perfscope {
namespace {

using Entry = std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>;

std::vector<Entry> read_back(const SampleTimeline& timeline, std::size_t first = 0,
                             std::size_t last = ~std::size_t{0}) {
  std::vector<Entry> out;
  timeline.for_each([&](std::uint32_t group, std::uint64_t time,
                        std::uint64_t period) { out.emplace_back(group, time, period); },
                    first, last);
  return out;
}

TEST(SampleTimelineTest, CommonPeriodKeepsFourBytesASample) {
  SampleTimeline timeline;
  std::vector<Entry> in;
  const std::size_t count = 3 * SampleTimeline::page_size + 17;
  for (std::size_t i = 0; i < count; ++i) {
    in.emplace_back(static_cast<std::uint32_t>(i % 7), 1'000'000'000ULL + i * 10'000, 10'000);
    timeline.append(std::get<0>(in.back()), std::get<1>(in.back()), std::get<2>(in.back()));
  }
  EXPECT_EQ(timeline.size(), count);
  EXPECT_EQ(read_back(timeline), in);
  // A byte of group and three of time (20 000 zigzagged needs 15 bits), no period; a block's
  // first time whole (5 bytes, not 3); the last page's room to grow and its bookkeeping.
  const std::size_t blocks = count / SampleTimeline::block_size + 1;
  EXPECT_GE(timeline.memory_bytes(), count * 4 + blocks * 2);
  EXPECT_LE(timeline.memory_bytes(), count * 4 + blocks * 2 + 17 * 8 + 4 * 128);
}

TEST(SampleTimelineTest, TimesBackwardsOrFarApartAndWidePeriodsComeBackExactly) {
  std::mt19937_64 random(7);
  SampleTimeline timeline;
  std::vector<Entry> in;
  std::uint64_t time = 5'000'000'000ULL;
  for (std::size_t i = 0; i < 2 * SampleTimeline::page_size + 100; ++i) {
    switch (random() % 10) {
      case 0: time -= random() % 1'000'000; break;                // out of order
      case 1: time += 5'000'000'000ULL + random() % 1000; break;  // more than 2^32 ns later
      default: time += random() % 100'000; break;
    }
    std::uint64_t period = random() % 20 == 0 ? (1ULL << 40) + random() % 1000 : random() % 5000;
    if (i < 50) period = 1000;  // a common period at first, then differing ones
    in.emplace_back(static_cast<std::uint32_t>(random() % 1000), time, period);
    timeline.append(std::get<0>(in.back()), time, period);
  }
  EXPECT_EQ(read_back(timeline), in);
  // From any first sample, to any last one.
  for (std::size_t first :
       {std::size_t{1}, std::size_t{49}, SampleTimeline::page_size - 1, SampleTimeline::page_size,
        SampleTimeline::page_size + 3, 2 * SampleTimeline::page_size + 99}) {
    std::size_t last = std::min(in.size(), first + SampleTimeline::page_size + 5);
    std::vector<Entry> expected(in.begin() + static_cast<std::ptrdiff_t>(first),
                                in.begin() + static_cast<std::ptrdiff_t>(last));
    EXPECT_EQ(read_back(timeline, first, last), expected) << "first " << first;
  }
  EXPECT_TRUE(read_back(timeline, in.size(), in.size() + 10).empty());
}

TEST(SampleTimelineTest, PeriodsThatStartToDifferPagesLaterAndRenumberedGroupsComeBack) {
  std::mt19937_64 random(11);
  SampleTimeline timeline;
  std::vector<Entry> in;
  std::uint64_t time = 77;
  const std::size_t common = 2 * SampleTimeline::page_size + 500;
  for (std::size_t i = 0; i < common + 3 * SampleTimeline::block_size + 9; ++i) {
    time += random() % 2'000'000;
    std::uint64_t period = i < common ? 4000 : 4000 + random() % 300;
    in.emplace_back(static_cast<std::uint32_t>(random() % 70'000), time, period);
    timeline.append(std::get<0>(in.back()), time, period);
  }
  EXPECT_EQ(read_back(timeline), in);
  std::vector<std::uint32_t> map(70'000);
  for (std::size_t g = 0; g < map.size(); ++g) map[g] = static_cast<std::uint32_t>(map.size() - g);
  timeline.remap_groups(map);
  for (Entry& entry : in) std::get<0>(entry) = map[std::get<0>(entry)];
  EXPECT_EQ(read_back(timeline), in);
  // Appending after the renumbering continues the last block.
  timeline.append(5, time + 1, 4001);
  in.emplace_back(5, time + 1, 4001);
  EXPECT_EQ(read_back(timeline, common - 3), std::vector<Entry>(in.begin() + common - 3, in.end()));
}

TEST(SampleTimelineTest, GroupsRenumberAndReleasedPagesAreFreed) {
  SampleTimeline timeline;
  const std::size_t count = 2 * SampleTimeline::page_size + 10;
  for (std::size_t i = 0; i < count; ++i) {
    timeline.append(static_cast<std::uint32_t>(i % 3), i * 100, 1);
  }
  std::vector<std::uint32_t> map{2, 0, 1};
  timeline.remap_groups(map);
  EXPECT_EQ(std::get<0>(read_back(timeline, 0, 1).at(0)), 2u);
  EXPECT_EQ(std::get<0>(read_back(timeline, count - 1).at(0)), map[(count - 1) % 3]);
  std::size_t before = timeline.memory_bytes();
  timeline.release_before(SampleTimeline::page_size + 5);  // the first page only
  // Its bytes: a group and two bytes of time (200 zigzagged) a sample, each block's first time
  // whole.
  std::size_t freed = before - timeline.memory_bytes();
  EXPECT_GE(freed, SampleTimeline::page_size * 3);
  EXPECT_LE(freed, SampleTimeline::page_size * 3 + 16 * 2);
  std::vector<Entry> rest = read_back(timeline, SampleTimeline::page_size + 5);
  ASSERT_EQ(rest.size(), count - SampleTimeline::page_size - 5);
  EXPECT_EQ(std::get<1>(rest.front()), (SampleTimeline::page_size + 5) * 100);
  EXPECT_EQ(std::get<1>(rest.back()), (count - 1) * 100);
}

}  // namespace
}  // namespace perfscope
