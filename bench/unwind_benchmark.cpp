// Unwinding rate of `--call-graph dwarf` samples: every sample of a recording unwound by one
// DwarfUnwinder that keeps its per-process state (the report's case; with its cached CFI rules
// and with libdwfl alone), a fresh unwinder per pass
// (the cost of loading unwind tables), and perf script unwinding the same file as the peer.
// The recording is PERFSCOPE_UNWIND_DATA when set, else one made at start with
// `perfscope record --call-graph dwarf` of a program without frame pointers.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"
#include "perfscope/analysis/unwinding/dwarf_unwinder.hpp"

namespace {

using namespace perfscope;

struct Recording {
  std::string path;
  TaskMaps maps;  // every mapping of the file, replayed once
  // Each sample's bytes, 8-aligned, with the config that decodes it.
  std::vector<std::vector<std::uint64_t>> samples;
  std::vector<ParseConfig> configs;
  bool ok = false;
  bool made_here = false;  // removed at exit
  ~Recording() {
    if (made_here) std::remove(path.c_str());
  }
};

void load(Recording& out) {
  const char* given = std::getenv("PERFSCOPE_UNWIND_DATA");
  if (given) {
    out.path = given;
  } else {
    out.path = "/tmp/perfscope_unwind_benchmark_" + std::to_string(::getpid()) + ".data";
    std::string command = std::string(PERFSCOPE_CLI_PATH) +
                          " record --call-graph dwarf -e cpu-clock -F 4000 -o " + out.path +
                          " -- " + PERFSCOPE_UNWIND_WORKLOAD_PATH + " > /dev/null 2>&1";
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "recording failed: %s\n", command.c_str());
      return;
    }
    out.made_here = true;
  }
  PerfDataReader reader = PerfDataReader::open(out.path);
  reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    const ParseConfig& config = reader.events()[record.event].config;
    if (record.view.type() != static_cast<std::uint32_t>(abi::RecordType::sample)) {
      out.maps.observe(record.view, config);
      return;
    }
    std::vector<std::uint64_t> words(record.view.bytes.size() / 8);
    std::memcpy(words.data(), record.view.bytes.data(), words.size() * 8);
    out.samples.push_back(std::move(words));
    out.configs.push_back(config);
  });
  out.ok = !out.samples.empty();
}

Recording& recording() {
  static Recording loaded;
  static const bool once = (load(loaded), true);
  (void)once;
  return loaded;
}

RecordView view_of(const std::vector<std::uint64_t>& words) {
  RecordView view;
  view.bytes = std::as_bytes(std::span(words));
  std::memcpy(&view.header, words.data(), sizeof view.header);
  return view;
}

// Unwinds every sample once; returns how many unwound completely.
std::uint64_t unwind_all(Recording& data, DwarfUnwinder& unwinder) {
  std::array<std::uint64_t, 127> ips{};
  SampleRecord sample;
  DecodeError error;
  std::uint64_t complete = 0;
  for (std::size_t i = 0; i < data.samples.size(); ++i) {
    if (!decode_sample(view_of(data.samples[i]), data.configs[i], sample, error)) continue;
    UnwindResult result = unwinder.unwind(sample, ips);
    complete += result.complete ? 1 : 0;
    benchmark::DoNotOptimize(ips.data());
  }
  return complete;
}

// Arg 0: the cached CFI rules with libdwfl behind them (what report and script use); 1: libdwfl
// for every sample (the same frames, for comparison).
void BM_UnwindWarm(benchmark::State& state) {
  Recording& data = recording();
  if (!data.ok) {
    state.SkipWithError("no dwarf recording to unwind");
    return;
  }
  DwarfUnwinder unwinder(
      data.maps, state.range(0) == 0 ? UnwindMethod::cached_rules : UnwindMethod::libdwfl_only);
  unwind_all(data, unwinder);  // tables loaded before timing
  std::uint64_t complete = 0;
  for (auto _ : state) complete = unwind_all(data, unwinder);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(data.samples.size()));
  state.counters["samples"] = static_cast<double>(data.samples.size());
  state.counters["complete_pct"] =
      100.0 * static_cast<double>(complete) / static_cast<double>(data.samples.size());
  state.counters["frames_per_sample"] = static_cast<double>(unwinder.statistics().frames) /
                                        static_cast<double>(unwinder.statistics().samples);
}
BENCHMARK(BM_UnwindWarm)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_UnwindCold(benchmark::State& state) {
  Recording& data = recording();
  if (!data.ok) {
    state.SkipWithError("no dwarf recording to unwind");
    return;
  }
  for (auto _ : state) {
    DwarfUnwinder unwinder(data.maps);
    benchmark::DoNotOptimize(unwind_all(data, unwinder));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(data.samples.size()));
}
BENCHMARK(BM_UnwindCold)->Unit(benchmark::kMillisecond);

// The peer: perf script printing each sample's unwound chain (process start-up included, as a
// user pays it).
void BM_PerfScriptUnwind(benchmark::State& state) {
  Recording& data = recording();
  if (!data.ok) {
    state.SkipWithError("no dwarf recording to unwind");
    return;
  }
  if (::access("/usr/bin/perf", X_OK) != 0) {
    state.SkipWithError("/usr/bin/perf is not installed");
    return;
  }
  std::string command =
      std::string("/usr/bin/perf script -F ip -i ") + data.path + " > /dev/null 2>&1";
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    if (std::system(command.c_str()) != 0) {
      state.SkipWithError("perf script failed");
      return;
    }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(data.samples.size()));
}
BENCHMARK(BM_PerfScriptUnwind)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
