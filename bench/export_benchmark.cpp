// Export throughput of each format on a synthetic 500k-sample Profile shaped like a `record -g`
// of a multi-threaded program: 4 threads, 3 DSOs and the kernel, 400 functions, 2000 frames,
// a stack tree of 30000 nodes up to 32 deep, samples drawn from it with a skew towards a few
// hot stacks. Output goes to a stream that only counts bytes, so the figures are the
// exporters' own: MB/s of output (bytes_per_second) and samples/s (items_per_second).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <ostream>
#include <random>
#include <streambuf>
#include <string>

#include "perfscope/analysis/exporters/profile_exporters.hpp"

namespace {

using perfscope::ExportFormat;
using perfscope::no_index;
using perfscope::Profile;

constexpr std::size_t sample_count = 500'000;

class CountingBuffer : public std::streambuf {
 public:
  std::uint64_t bytes = 0;

 protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) ++bytes;
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char*, std::streamsize n) override {
    bytes += static_cast<std::uint64_t>(n);
    return n;
  }
};

Profile synthetic_profile() {
  std::mt19937_64 random(7);
  Profile p;
  p.dsos = {{"/usr/bin/server", "0123456789abcdef", false},
            {"/usr/lib/x86_64-linux-gnu/libc.so.6", "fedcba9876543210", false},
            {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "", false},
            {"[kernel.kallsyms]", "", true}};
  for (std::uint32_t f = 0; f < 400; ++f) {
    std::uint32_t dso = f < 250 ? 0 : f < 320 ? 1 : f < 360 ? 2 : 3;
    bool resolved = f % 37 != 0;
    p.functions.push_back({resolved ? "ns::Component" + std::to_string(f % 23) + "::method_" +
                                          std::to_string(f) + "(std::vector<int> const&)"
                                    : "0x" + std::to_string(1000 + f),
                           dso, resolved});
  }
  const std::uint64_t bases[] = {0x400000, 0x7f1200000000, 0x7f1300000000, 0xffffffff81000000};
  for (std::uint32_t i = 0; i < 2000; ++i) {
    std::uint32_t function = i % 400;
    std::uint32_t dso = p.functions[function].dso;
    std::uint64_t offset = 0x1000 + std::uint64_t{function} * 0x400 + (i / 400) * 0x10;
    bool inlined = i % 97 == 5;
    p.frames.push_back(
        {function, bases[dso] + offset, dso == 3 ? bases[dso] + offset : offset,
         function % 3 == 0 ? "/src/component" + std::to_string(function % 23) + ".cpp" : "",
         function % 3 == 0 ? 100 + i % 400 : 0, inlined, dso == 3});
  }
  // A tree: roots are "main"-like frames, children extend a random earlier node.
  std::vector<std::uint32_t> depth;
  for (std::uint32_t s = 0; s < 30000; ++s) {
    std::uint32_t parent = no_index;
    if (s >= 4) {
      do {
        parent = static_cast<std::uint32_t>(random() % s);
      } while (depth[parent] >= 31);
    }
    p.stacks.push_back({parent, static_cast<std::uint32_t>(random() % p.frames.size())});
    depth.push_back(parent == no_index ? 0 : depth[parent] + 1);
  }
  for (std::uint32_t t = 0; t < 4; ++t) {
    p.threads.push_back({4000, 4000 + t, t == 0 ? "server" : "worker " + std::to_string(t)});
  }
  p.events = {{"cpu-clock", sample_count, sample_count * 250'000, true}};
  std::uint64_t time = 1'000'000'000;
  for (std::size_t i = 0; i < sample_count; ++i) {
    // Half the samples in 1 % of the stacks: profiles have hot spots.
    std::uint32_t stack = random() % 2 == 0 ? static_cast<std::uint32_t>(random() % 300)
                                            : static_cast<std::uint32_t>(random() % 30000);
    p.samples.push_back({stack, static_cast<std::uint32_t>(random() % 4), 0,
                         static_cast<std::uint32_t>(i % 2), time, 250'000});
    time += 62'500;
  }
  p.summary.samples = p.summary.samples_read = sample_count;
  p.summary.first_time = 1'000'000'000;
  p.summary.last_time = time - 62'500;
  p.summary.command_line = "perfscope record -g ./server";
  return p;
}

const Profile& profile() {
  static const Profile shared = synthetic_profile();
  return shared;
}

void export_format(benchmark::State& state, ExportFormat format) {
  const Profile& p = profile();
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    CountingBuffer buffer;
    std::ostream out(&buffer);
    perfscope::write_profile(p, format, out);
    bytes += buffer.bytes;
    state.counters["output_MB"] = static_cast<double>(buffer.bytes) / 1e6;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * p.samples.size()));
}

BENCHMARK_CAPTURE(export_format, folded, ExportFormat::folded)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(export_format, speedscope, ExportFormat::speedscope)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(export_format, gecko, ExportFormat::gecko)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(export_format, pprof, ExportFormat::pprof)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(export_format, json, ExportFormat::json)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(export_format, svg, ExportFormat::svg)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
