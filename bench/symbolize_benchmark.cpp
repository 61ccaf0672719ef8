// Symbolizer costs on this machine's libc: a cached lookup (the per-sample cost of a report once
// every distinct address was seen), a first lookup of new addresses (binary search and
// demangling), and the first open of the file (reading .symtab/.dynsym or the debug file, and
// sorting). dladdr, glibc's own lookup over the exported symbols, is the peer in the same run.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/analysis/symbols/symbolizer.hpp"

namespace {

struct TextMapping {
  std::string path;
  std::uint64_t start = 0, end = 0, file_offset = 0;
};

// libc's executable mapping in this process, from /proc/self/maps.
TextMapping libc_text() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, permissions, offset, device, inode, path;
    fields >> range >> permissions >> offset >> device >> inode >> path;
    if (permissions != "r-xp" || path.find("/libc.so") == std::string::npos) continue;
    TextMapping mapping;
    mapping.path = path;
    mapping.start = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    mapping.end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    mapping.file_offset = std::stoull(offset, nullptr, 16);
    return mapping;
  }
  return {};
}

constexpr std::size_t address_count = 4096;

// File offsets spread evenly over libc's code: many different functions.
std::vector<std::uint64_t> spread_offsets(const TextMapping& text) {
  std::vector<std::uint64_t> offsets;
  std::uint64_t step = (text.end - text.start) / address_count;
  for (std::size_t i = 0; i < address_count; ++i) {
    offsets.push_back(text.file_offset + i * step + (i % 7) * 3);
  }
  return offsets;
}

void BM_CachedLookup(benchmark::State& state) {
  TextMapping text = libc_text();
  if (text.path.empty()) return state.SkipWithError("no libc mapping in /proc/self/maps");
  auto offsets = spread_offsets(text);
  perfscope::Symbolizer symbolizer;
  std::size_t resolved = 0;
  for (auto offset : offsets)
    resolved += !symbolizer.resolve_file(text.path, offset).symbol.empty();
  std::size_t i = 0;
  for (auto _ : state) {
    auto at = symbolizer.resolve_file(text.path, offsets[i++ % address_count]);
    benchmark::DoNotOptimize(at);
  }
  state.counters["resolved_share"] = static_cast<double>(resolved) / address_count;
}
BENCHMARK(BM_CachedLookup);

// Every address new to the symbolizer: the binary search, demangling and the cache insert.
void BM_FirstLookup(benchmark::State& state) {
  TextMapping text = libc_text();
  if (text.path.empty()) return state.SkipWithError("no libc mapping in /proc/self/maps");
  auto offsets = spread_offsets(text);
  std::optional<perfscope::Symbolizer> symbolizer;
  for (auto _ : state) {
    state.PauseTiming();
    symbolizer.emplace();
    symbolizer->resolve_file(text.path, text.file_offset);  // opened outside the timing
    state.ResumeTiming();
    for (auto offset : offsets) {
      benchmark::DoNotOptimize(symbolizer->resolve_file(text.path, offset));
    }
    state.PauseTiming();
    symbolizer.reset();  // freeing the caches is no part of a lookup
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * address_count));
}
BENCHMARK(BM_FirstLookup);

void BM_FirstOpenLibc(benchmark::State& state) {
  TextMapping text = libc_text();
  if (text.path.empty()) return state.SkipWithError("no libc mapping in /proc/self/maps");
  std::uint64_t symbols = 0;
  for (auto _ : state) {
    perfscope::Symbolizer symbolizer;
    auto at = symbolizer.resolve_file(text.path, text.file_offset + (text.end - text.start) / 2);
    benchmark::DoNotOptimize(at);
    symbols = symbolizer.statistics().symbols_loaded;
  }
  state.counters["symbols"] = static_cast<double>(symbols);
}
BENCHMARK(BM_FirstOpenLibc)->Unit(benchmark::kMicrosecond);

// The peer: glibc's dladdr over the same addresses in this process (exported symbols only, no
// demangling, no cache).
void BM_DladdrPeer(benchmark::State& state) {
  TextMapping text = libc_text();
  if (text.path.empty()) return state.SkipWithError("no libc mapping in /proc/self/maps");
  std::vector<const void*> addresses;
  std::uint64_t step = (text.end - text.start) / address_count;
  for (std::size_t i = 0; i < address_count; ++i) {
    addresses.push_back(reinterpret_cast<const void*>(text.start + i * step + (i % 7) * 3));
  }
  std::size_t i = 0;
  for (auto _ : state) {
    Dl_info info;
    benchmark::DoNotOptimize(dladdr(addresses[i++ % address_count], &info));
    benchmark::DoNotOptimize(info.dli_sname);
  }
}
BENCHMARK(BM_DladdrPeer);

}  // namespace

BENCHMARK_MAIN();
