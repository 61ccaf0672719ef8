// The records of a `perf stat record` file: THREAD_MAP and CPU_MAP (what was counted), STAT_CONFIG
// (how: aggregation, scaling, interval), a STAT per counter, CPU and thread at each round (the
// counter's cumulative value, enabled and running time), and STAT_ROUND (an interval's end, or
// the end of the run with its elapsed time). Encoded as perf writes them and decoded from either
// tool's files.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace perfscope {

// perf's aggr_mode values in STAT_CONFIG.
enum class StatAggregation : std::uint64_t {
  none = 0,  // -A: each CPU
  global = 1,
  socket = 2,
  die = 3,
  core = 4,
  thread = 5,
  unset = 6,
  node = 7,
};

struct StatConfig {
  StatAggregation aggregation = StatAggregation::global;
  bool scale = true;
  std::uint64_t interval_ms = 0;  // 0: no intervals
};

struct StatCounter {
  std::uint64_t id = 0;      // the counter's event id (the attr section's)
  std::uint32_t cpu = 0;     // the CPU (one of the CPU map's; 0xffffffff: -1, any CPU)
  std::uint32_t thread = 0;  // an index into the thread map
  std::uint64_t value = 0, enabled = 0, running = 0;
};

struct StatRound {
  static constexpr std::uint64_t interval = 0, final = 1;
  std::uint64_t type = final;
  std::uint64_t time = 0;  // ns: since the start for an interval; the elapsed time for the final
};

struct StatThread {
  std::int32_t pid = -1;
  std::string comm;
};

// Whole records (header included), as perf writes them.
std::vector<std::byte> encode_thread_map(std::span<const StatThread> threads);
std::vector<std::byte> encode_cpu_map(std::span<const std::int32_t> cpus);  // -1: any CPU
std::vector<std::byte> encode_stat_config(const StatConfig& config);
std::vector<std::byte> encode_stat(const StatCounter& counter);
std::vector<std::byte> encode_stat_round(const StatRound& round);

// From a record's payload (the bytes after its header); nullopt when it is too short.
std::optional<std::vector<StatThread>> decode_thread_map(std::span<const std::byte> payload);
// A list, a bitmask (32- or 64-bit words) or a range (perf 6.1's three forms).
std::vector<std::int32_t> decode_cpu_map(std::span<const std::byte> payload);
std::optional<StatConfig> decode_stat_config(std::span<const std::byte> payload);
std::optional<StatCounter> decode_stat(std::span<const std::byte> payload);
std::optional<StatRound> decode_stat_round(std::span<const std::byte> payload);

}  // namespace perfscope
