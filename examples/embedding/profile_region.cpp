// profile_region: profiles a region of this program with perfscope's sampling profiler and prints
// where its samples fell, by function; with FILE it also writes the folded stacks there
// (flamegraph.pl FILE > flame.svg). The region spends three quarters of its time in heavy_part
// and one quarter in light_part.
//
//   profile_region [FILE]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <perfscope/embed/profiler.hpp>
#include <string>
#include <utility>
#include <vector>

namespace {

volatile std::uint64_t sink;

__attribute__((noinline)) std::uint64_t spin(std::uint64_t iterations, std::uint64_t salt) {
  std::uint64_t x = salt;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    x = x * 6364136223846793005ULL + salt;
    asm volatile("" : "+r"(x));
  }
  return x;
}

__attribute__((noinline)) void heavy_part() { sink = sink + spin(3'000'000, 1); }
__attribute__((noinline)) void light_part() { sink = sink + spin(1'000'000, 3); }

}  // namespace

int main(int argc, char** argv) {
  try {
    perfscope::ProfilerOptions options;
    options.events = "cpu-clock";  // the default, cycles, needs a PMU (VMs often lack one)
    perfscope::Profiler profiler(options);
    {
      perfscope::ScopedProfile scope(profiler);
      for (int round = 0; round < 100; ++round) {
        heavy_part();
        light_part();
      }
    }
    for (const auto& notice : profiler.notices())
      std::fprintf(stderr, "note: %s\n", notice.c_str());

    // Samples by the function that called spin (the leaf's caller), from the stack table.
    const perfscope::Profile& profile = profiler.profile();
    std::map<std::string, std::uint64_t> by_caller;
    for (const auto& sample : profile.samples) {
      if (sample.stack == perfscope::no_index) continue;
      std::uint32_t caller = profile.stacks[sample.stack].parent;
      std::string name =
          caller == perfscope::no_index
              ? "[no caller]"
              : profile.functions[profile.frames[profile.stacks[caller].frame].function].name;
      ++by_caller[name];
    }
    std::vector<std::pair<std::uint64_t, std::string>> ranked;
    for (const auto& [name, count] : by_caller) ranked.emplace_back(count, name);
    std::sort(ranked.rbegin(), ranked.rend());
    const auto& stats = profiler.stats();
    std::printf("profile_region: %llu samples, %llu lost\n",
                static_cast<unsigned long long>(stats.samples),
                static_cast<unsigned long long>(stats.lost + stats.lost_samples));
    for (std::size_t i = 0; i < ranked.size() && i < 5; ++i) {
      std::printf("%6.1f %%  %s\n",
                  100.0 * static_cast<double>(ranked[i].first) /
                      static_cast<double>(profile.samples.size()),
                  ranked[i].second.c_str());
    }
    if (argc > 1) profiler.write_file(argv[1], perfscope::ExportFormat::folded);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "profile_region: %s\n", error.what());
    return 1;
  }
  return 0;
}
