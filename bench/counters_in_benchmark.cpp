// Google Benchmark with perfscope counters: each benchmark reports its events per iteration
// (scaled for multiplexing) beside the time, and the ratios of a group (IPC, CPUs utilized).
//
//   counters_in_benchmark [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "perfscope/embed/benchmark_counters.hpp"

namespace {

// A walk over a vector: its page faults happen in the first iteration only, its instructions in
// every one.
void BM_sum_vector(benchmark::State& state) {
  perfscope::BenchmarkCounters counters(state, "cycles,instructions,task-clock,page-faults");
  std::vector<std::uint64_t> values(static_cast<std::size_t>(state.range(0)), 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(std::accumulate(values.begin(), values.end(), std::uint64_t{0}));
  }
}
BENCHMARK(BM_sum_vector)->Arg(1 << 10)->Arg(1 << 16);

// Fresh pages each iteration (mmap and munmap: malloc would hand back the same warm memory):
// page-faults shows one fault per 4 KiB page, 256 per iteration.
void BM_fresh_pages(benchmark::State& state) {
  perfscope::BenchmarkCounters counters(state, "page-faults,task-clock");
  const std::size_t bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* mapping =
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) {
      state.SkipWithError("mmap failed");
      break;
    }
    ::madvise(mapping, bytes, MADV_NOHUGEPAGE);
    auto* memory = static_cast<char*>(mapping);
    for (std::size_t i = 0; i < bytes; i += 4096) memory[i] = 1;
    ::munmap(mapping, bytes);
  }
}
BENCHMARK(BM_fresh_pages)->Arg(1 << 20);

}  // namespace

BENCHMARK_MAIN();
