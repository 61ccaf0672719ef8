// BenchmarkCounters: perfscope counters as Google Benchmark user counters. Header-only, so that
// libperfscope does not depend on Google Benchmark: include it in a benchmark that links both.
//
//   void BM_work(benchmark::State& state) {
//     perfscope::BenchmarkCounters counters(state, "cycles,instructions,task-clock");
//     for (auto _ : state) work();
//   }  // counters: per iteration, scaled for multiplexing; "insn per cycle" and the like as is
//
// The counters open in the constructor and run from there to the destructor, around the whole
// loop (PauseTiming/ResumeTiming do not pause them). Events that cannot be opened skip the
// benchmark with perfscope's diagnosis; events this machine lacks are left out.
#pragma once

#include <benchmark/benchmark.h>

#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include "perfscope/embed/counters.hpp"

namespace perfscope {

class BenchmarkCounters {
 public:
  explicit BenchmarkCounters(benchmark::State& state,
                             std::string_view events = "task-clock,page-faults,context-switches",
                             CountersOptions options = {})
      : state_(state) {
    try {
      counters_ = std::make_unique<Counters>(events, options);
    } catch (const std::exception& error) {
      state_.SkipWithError(error.what());
      return;
    }
    counters_->start();
  }
  ~BenchmarkCounters() {
    if (!counters_) return;
    counters_->stop();
    publish(counters_->report());
  }
  BenchmarkCounters(const BenchmarkCounters&) = delete;
  BenchmarkCounters& operator=(const BenchmarkCounters&) = delete;

  Counters* counters() noexcept { return counters_.get(); }

 private:
  void publish(const CounterReport& report) {
    for (std::size_t i = 0; i < report.counts.size(); ++i) {
      const EventCount& count = report.counts[i];
      if (!count.supported || count.scaled.status == CountStatus::not_counted) continue;
      state_.counters[count.name] =
          benchmark::Counter(count.scaled.value * count.scale, benchmark::Counter::kAvgIterations);
      if (count.scaled.status == CountStatus::multiplexed) {
        state_.counters[count.name + " running"] = count.scaled.fraction_running;
      }
      // Ratios of the same group (IPC, miss ratios, GHz): not per iteration. Rates per second
      // of task-clock would only restate the per-iteration counts.
      const auto& metric = report.metrics[i];
      if (metric && metric->unit.find("/sec") == std::string::npos) {
        state_.counters[metric->unit] = metric->value;
      }
    }
  }

  benchmark::State& state_;
  std::unique_ptr<Counters> counters_;
};

}  // namespace perfscope
