// SampleTimeline, the viewer's record of each sample's group, time and period: samples appended
// and read back per second, and the bytes a sample costs, on 1M samples shaped like a -g
// recording of two threads at a 10 us period (2 000 groups, drawn with a skew towards a few hot
// ones) and like a -F recording (periods that differ). The walks are what a time-range question
// of `perfscope view` does: the whole recording, and a tenth of it from the middle.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "perfscope/analysis/profile/sample_timeline.hpp"

namespace {

using perfscope::SampleTimeline;

constexpr std::size_t sample_count = 1'000'000;

struct Input {
  std::vector<std::uint32_t> groups;
  std::vector<std::uint64_t> times, periods;
};

Input make_input(bool varying_periods) {
  std::mt19937_64 random(3);
  std::geometric_distribution<std::uint32_t> hot(0.01);
  Input input;
  std::uint64_t time = 1'234'567'890'000ULL;
  for (std::size_t i = 0; i < sample_count; ++i) {
    input.groups.push_back(std::min<std::uint32_t>(hot(random), 1999));
    time += 4'000 + random() % 2'000;  // two threads' samples interleaved
    input.times.push_back(time);
    input.periods.push_back(varying_periods ? 1'000'000 + random() % 20'000 : 10'000);
  }
  return input;
}

SampleTimeline fill(const Input& input) {
  SampleTimeline timeline;
  for (std::size_t i = 0; i < input.groups.size(); ++i) {
    timeline.append(input.groups[i], input.times[i], input.periods[i]);
  }
  return timeline;
}

void BM_Append(benchmark::State& state) {
  Input input = make_input(state.range(0) != 0);
  std::size_t bytes = 0;
  for (auto _ : state) {
    SampleTimeline timeline = fill(input);
    bytes = timeline.memory_bytes();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * sample_count));
  state.counters["bytes_per_sample"] = static_cast<double>(bytes) / sample_count;
}
BENCHMARK(BM_Append)->Arg(0)->Arg(1)->ArgName("varying_periods")->Unit(benchmark::kMillisecond);

void BM_Walk(benchmark::State& state) {
  SampleTimeline timeline = fill(make_input(state.range(0) != 0));
  const bool tenth = state.range(1) != 0;
  const std::size_t first = tenth ? sample_count / 2 + 517 : 0;
  const std::size_t last = tenth ? first + sample_count / 10 : sample_count;
  for (auto _ : state) {
    std::uint64_t sum = 0;
    timeline.for_each([&](std::uint32_t group, std::uint64_t time,
                          std::uint64_t period) { sum += group + (time & 0xff) + period; },
                      first, last);
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * (last - first)));
}
BENCHMARK(BM_Walk)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->ArgNames({"varying_periods", "tenth"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
