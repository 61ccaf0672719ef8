// Google Benchmark: perfscope counters per iteration beside the time.
#include <benchmark/benchmark.h>

#include <perfscope/embed/benchmark_counters.hpp>
#include <string>

static void BM_to_string(benchmark::State& state) {
  perfscope::BenchmarkCounters counters(state, "task-clock,page-faults,instructions,cycles");
  int i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(std::to_string(i++));
}
BENCHMARK(BM_to_string);
BENCHMARK_MAIN();
