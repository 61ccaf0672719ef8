// Decode throughput of the record decoder against memcpy of the same bytes (target: decoding at
// least 25 % of memcpy bandwidth). The buffer is ~4 MiB of what `perfscope record -g` sees:
// samples with IDENTIFIER|IP|TID|TIME|CPU|PERIOD|CALLCHAIN (8 to 24 frames, kernel and user
// markers) and, now and then, MMAP2 and COMM records with a sample_id_all trailer.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string_view>
#include <variant>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"

namespace {

namespace pabi = perfscope::abi;
namespace sf = pabi::sample_format;

constexpr std::size_t buffer_bytes = 4 << 20;
constexpr std::uint64_t sample_type =
    sf::identifier | sf::ip | sf::tid | sf::time | sf::cpu | sf::period | sf::callchain;

perfscope::ParseConfig benchmark_config() {
  perfscope::ParseConfig config;
  config.sample_type = sample_type;
  config.sample_id_all = true;
  return config;
}

class SyntheticBuffer {
 public:
  SyntheticBuffer() {
    std::mt19937_64 random(42);
    std::uint64_t time = 1'000'000'000;
    while (bytes() < buffer_bytes - 512) {
      auto roll = random() % 100;
      time += 10'000 + random() % 1000;
      if (roll == 0) {
        add_mmap2(random, time);
      } else if (roll == 1) {
        add_comm(time);
      } else {
        add_sample(random, time);
      }
    }
  }
  std::size_t bytes() const noexcept { return words_.size() * sizeof(std::uint64_t); }
  const std::byte* data() const noexcept {
    return reinterpret_cast<const std::byte*>(words_.data());
  }
  std::size_t records() const noexcept { return records_; }

 private:
  void begin(pabi::RecordType type, std::uint16_t misc) {
    start_ = words_.size();
    pabi::RecordHeader header{static_cast<std::uint32_t>(type), misc, 0};
    std::uint64_t word = 0;
    std::memcpy(&word, &header, sizeof header);
    words_.push_back(word);
  }
  void end() {
    auto size = static_cast<std::uint16_t>((words_.size() - start_) * sizeof(std::uint64_t));
    std::memcpy(reinterpret_cast<std::byte*>(&words_[start_]) + 6, &size, sizeof size);
    ++records_;
  }
  void pair(std::uint32_t low, std::uint32_t high) {
    words_.push_back(static_cast<std::uint64_t>(high) << 32 | low);
  }
  void string(std::string_view text) {
    std::size_t words = text.size() / 8 + 1;  // room for the NUL
    std::size_t at = words_.size();
    words_.resize(at + words, 0);
    std::memcpy(&words_[at], text.data(), text.size());
  }
  void trailer(std::uint64_t time) {  // TID, TIME, CPU, IDENTIFIER
    pair(4242, 4243);
    words_.push_back(time);
    pair(1, 0);
    words_.push_back(7);
  }
  void add_sample(std::mt19937_64& random, std::uint64_t time) {
    begin(pabi::RecordType::sample, pabi::record_misc::user);
    words_.push_back(7);                                // IDENTIFIER
    words_.push_back(0x401000 + random() % 0x10000);    // IP
    pair(4242, 4243);                                   // TID
    words_.push_back(time);                             // TIME
    pair(static_cast<std::uint32_t>(random() % 2), 0);  // CPU
    words_.push_back(100'000);                          // PERIOD
    std::size_t frames = 8 + random() % 17;             // 8..24, markers included
    words_.push_back(frames);
    std::size_t kernel_frames = random() % 4 == 0 ? 3 : 0;
    for (std::size_t i = 0; i < frames; ++i) {
      if (kernel_frames && i == 0) {
        words_.push_back(pabi::callchain_context::kernel);
      } else if (i == (kernel_frames ? kernel_frames + 1 : 0)) {
        words_.push_back(pabi::callchain_context::user);
      } else {
        words_.push_back((i <= kernel_frames ? 0xffffffff81000000ULL : 0x400000ULL) +
                         random() % 0x100000);
      }
    }
    end();
  }
  void add_mmap2(std::mt19937_64& random, std::uint64_t time) {
    begin(pabi::RecordType::mmap2, pabi::record_misc::user);
    pair(4242, 4243);
    words_.push_back(0x7f0000000000 + (random() % 0x1000) * 0x1000);
    words_.push_back(0x21000);
    words_.push_back(0);
    pair(8, 1);
    words_.push_back(123456);
    words_.push_back(0);
    pair(5, 2);
    string("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30");
    trailer(time);
    end();
  }
  void add_comm(std::uint64_t time) {
    begin(pabi::RecordType::comm, pabi::record_misc::comm_exec);
    pair(4242, 4243);
    string("workload");
    trailer(time);
    end();
  }

  std::vector<std::uint64_t> words_;
  std::size_t start_ = 0;
  std::size_t records_ = 0;
};

const SyntheticBuffer& synthetic_buffer() {
  static const SyntheticBuffer buffer;
  return buffer;
}

// What a consumer of the records would do at the least: look at one field of each.
std::uint64_t consume(const perfscope::Record& record) {
  if (const auto* sample = std::get_if<perfscope::SampleRecord>(&record)) {
    return sample->ip + sample->callchain.size();
  }
  if (const auto* mmap = std::get_if<perfscope::Mmap2Record>(&record)) return mmap->filename.size();
  if (const auto* comm = std::get_if<perfscope::CommRecord>(&record)) return comm->comm.size();
  return 0;
}

void decode_records(benchmark::State& state) {
  const auto& buffer = synthetic_buffer();
  const auto config = benchmark_config();
  std::size_t failures = 0;
  for (auto _ : state) {
    std::uint64_t sum = 0;
    std::size_t offset = 0;
    perfscope::Record record;
    perfscope::DecodeError error;
    while (offset < buffer.bytes()) {
      perfscope::RecordView view;
      std::memcpy(&view.header, buffer.data() + offset, sizeof view.header);
      view.bytes = {buffer.data() + offset, view.header.size};
      if (perfscope::decode_record(view, config, record, error)) {
        sum += consume(record);
      } else {
        ++failures;
      }
      offset += view.header.size;
    }
    benchmark::DoNotOptimize(sum);
  }
  if (failures != 0) state.SkipWithError("records failed to decode: the buffer is wrong");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * buffer.bytes()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * buffer.records()));
}
BENCHMARK(decode_records)->Name("decode_record/4MiB");

void copy_bytes(benchmark::State& state) {
  const auto& buffer = synthetic_buffer();
  std::vector<std::byte> destination(buffer.bytes());
  for (auto _ : state) {
    std::memcpy(destination.data(), buffer.data(), buffer.bytes());
    benchmark::DoNotOptimize(destination.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * buffer.bytes()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * buffer.records()));
}
BENCHMARK(copy_bytes)->Name("memcpy/4MiB");

// Keeps each benchmark's bandwidth to print their ratio after the table.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& run : runs) {
      // With --benchmark_repetitions the median (reported after the repetitions) wins.
      bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.error_occurred || (run.run_type != Run::RT_Iteration && !median)) continue;
      auto found = run.counters.find("bytes_per_second");
      if (found == run.counters.end()) continue;
      auto name = run.benchmark_name();
      if (name.rfind("decode_record", 0) == 0) decode_ = found->second.value;
      if (name.rfind("memcpy", 0) == 0) copy_ = found->second.value;
    }
  }
  double decode() const noexcept { return decode_; }
  double copy() const noexcept { return copy_; }

 private:
  double decode_ = 0;
  double copy_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const auto& buffer = synthetic_buffer();
  std::printf("synthetic buffer: %zu bytes, %zu records (%.1f bytes/record)\n", buffer.bytes(),
              buffer.records(),
              static_cast<double>(buffer.bytes()) / static_cast<double>(buffer.records()));
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  if (reporter.decode() > 0 && reporter.copy() > 0) {
    double ratio = reporter.decode() / reporter.copy();
    // GiB/s, as the table above prints "G/s" (Google Benchmark uses 1024-based units).
    constexpr double gib = 1024.0 * 1024.0 * 1024.0;
    std::printf("decode %.2f GiB/s, memcpy %.2f GiB/s\n", reporter.decode() / gib,
                reporter.copy() / gib);
    std::printf("decode_ratio %.3f (decode_record / memcpy bandwidth; target >= 0.25): %s\n", ratio,
                ratio >= 0.25 ? "PASS" : "MISS");
  }
  benchmark::Shutdown();
  return 0;
}
