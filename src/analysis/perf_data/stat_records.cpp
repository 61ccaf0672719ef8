#include "perfscope/analysis/perf_data/stat_records.hpp"

#include <algorithm>
#include <cstring>

#include "perfscope/abi/record_type.hpp"

namespace perfscope {

namespace {

constexpr std::uint64_t term_aggr_mode = 0, term_interval = 1, term_scale = 2;

template <typename T>
bool read_at(std::span<const std::byte> bytes, std::size_t at, T& out) {
  if (at + sizeof(T) > bytes.size()) return false;
  std::memcpy(&out, bytes.data() + at, sizeof(T));
  return true;
}

class RecordBytes {
 public:
  explicit RecordBytes(abi::UserRecordType type) : type_(type) {
    bytes_.resize(sizeof(abi::RecordHeader));
  }
  template <typename T>
  void put(T value) {
    std::size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
  }
  std::vector<std::byte> finish() {
    bytes_.resize((bytes_.size() + 7) / 8 * 8);
    abi::RecordHeader header{static_cast<std::uint32_t>(type_), 0,
                             static_cast<std::uint16_t>(bytes_.size())};
    std::memcpy(bytes_.data(), &header, sizeof header);
    return std::move(bytes_);
  }

 private:
  abi::UserRecordType type_;
  std::vector<std::byte> bytes_;
};

}  // namespace

std::vector<std::byte> encode_thread_map(std::span<const StatThread> threads) {
  RecordBytes out(abi::UserRecordType::thread_map);
  out.put<std::uint64_t>(threads.size());
  for (const StatThread& thread : threads) {
    out.put<std::uint64_t>(static_cast<std::uint64_t>(static_cast<std::int64_t>(thread.pid)));
    char comm[16] = {};
    std::memcpy(comm, thread.comm.data(), std::min<std::size_t>(thread.comm.size(), 15));
    for (char c : comm) out.put(c);
  }
  return out.finish();
}

std::vector<std::byte> encode_cpu_map(std::span<const std::int32_t> cpus) {
  // perf's list form: u16 type 0, u16 count, a u16 per CPU (0xffff: any CPU).
  RecordBytes out(abi::UserRecordType::cpu_map);
  out.put<std::uint16_t>(0);
  out.put<std::uint16_t>(static_cast<std::uint16_t>(cpus.size()));
  for (std::int32_t cpu : cpus) {
    out.put<std::uint16_t>(cpu < 0 ? 0xffff : static_cast<std::uint16_t>(cpu));
  }
  return out.finish();
}

std::vector<std::byte> encode_stat_config(const StatConfig& config) {
  RecordBytes out(abi::UserRecordType::stat_config);
  out.put<std::uint64_t>(3);
  out.put<std::uint64_t>(term_aggr_mode);
  out.put<std::uint64_t>(static_cast<std::uint64_t>(config.aggregation));
  out.put<std::uint64_t>(term_interval);
  out.put<std::uint64_t>(config.interval_ms);
  out.put<std::uint64_t>(term_scale);
  out.put<std::uint64_t>(config.scale ? 1 : 0);
  return out.finish();
}

std::vector<std::byte> encode_stat(const StatCounter& counter) {
  RecordBytes out(abi::UserRecordType::stat);
  out.put(counter.id);
  out.put(counter.cpu);
  out.put(counter.thread);
  out.put(counter.value);
  out.put(counter.enabled);
  out.put(counter.running);
  return out.finish();
}

std::vector<std::byte> encode_stat_round(const StatRound& round) {
  RecordBytes out(abi::UserRecordType::stat_round);
  out.put(round.type);
  out.put(round.time);
  return out.finish();
}

std::optional<std::vector<StatThread>> decode_thread_map(std::span<const std::byte> payload) {
  std::uint64_t count = 0;
  if (!read_at(payload, 0, count) || count > payload.size() / 24) return std::nullopt;
  std::vector<StatThread> threads;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t pid = 0;
    if (!read_at(payload, 8 + 24 * i, pid)) break;
    StatThread thread;
    thread.pid = static_cast<std::int32_t>(pid);
    const char* comm = reinterpret_cast<const char*>(payload.data() + 16 + 24 * i);
    thread.comm.assign(comm, ::strnlen(comm, 16));
    threads.push_back(std::move(thread));
  }
  return threads;
}

std::vector<std::int32_t> decode_cpu_map(std::span<const std::byte> payload) {
  std::vector<std::int32_t> cpus;
  std::uint16_t type = 0, count = 0;
  if (!read_at(payload, 0, type)) return cpus;
  if (type == 0 && read_at(payload, 2, count)) {
    for (std::uint16_t i = 0; i < count; ++i) {
      std::uint16_t cpu = 0;
      if (!read_at(payload, 4 + 2 * std::size_t{i}, cpu)) break;
      cpus.push_back(cpu == 0xffff ? -1 : cpu);
    }
  } else if (type == 1 && read_at(payload, 2, count)) {
    std::uint16_t word_size = 0;
    read_at(payload, 4, word_size);
    const std::size_t first = word_size == 8 ? 10 : 6;  // 64-bit words follow 4 bytes of padding
    for (std::uint16_t i = 0; i < count; ++i) {
      std::uint64_t word = 0;
      if (word_size == 8) {
        if (!read_at(payload, first + 8 * std::size_t{i}, word)) break;
      } else {
        std::uint32_t half = 0;
        if (!read_at(payload, first + 4 * std::size_t{i}, half)) break;
        word = half;
      }
      for (unsigned bit = 0; bit < word_size * 8u; ++bit) {
        if ((word >> bit) & 1) cpus.push_back(static_cast<std::int32_t>(i * word_size * 8u + bit));
      }
    }
  } else if (type == 2) {
    std::uint8_t any = 0;
    std::uint16_t start = 0, end = 0;
    read_at(payload, 2, any);
    read_at(payload, 4, start);
    read_at(payload, 6, end);
    if (any != 0) cpus.push_back(-1);
    for (std::uint32_t cpu = start; cpu <= end; ++cpu) {
      cpus.push_back(static_cast<std::int32_t>(cpu));
    }
  }
  return cpus;
}

std::optional<StatConfig> decode_stat_config(std::span<const std::byte> payload) {
  std::uint64_t count = 0;
  if (!read_at(payload, 0, count)) return std::nullopt;
  StatConfig config;
  for (std::uint64_t i = 0; i < count && i < payload.size() / 16; ++i) {
    std::uint64_t tag = 0, value = 0;
    if (!read_at(payload, 8 + 16 * i, tag) || !read_at(payload, 16 + 16 * i, value)) break;
    if (tag == term_aggr_mode) config.aggregation = static_cast<StatAggregation>(value);
    if (tag == term_interval) config.interval_ms = value;
    if (tag == term_scale) config.scale = value != 0;
  }
  return config;
}

std::optional<StatCounter> decode_stat(std::span<const std::byte> payload) {
  StatCounter counter;
  if (!read_at(payload, 0, counter.id) || !read_at(payload, 8, counter.cpu) ||
      !read_at(payload, 12, counter.thread) || !read_at(payload, 16, counter.value) ||
      !read_at(payload, 24, counter.enabled) || !read_at(payload, 32, counter.running)) {
    return std::nullopt;
  }
  return counter;
}

std::optional<StatRound> decode_stat_round(std::span<const std::byte> payload) {
  StatRound round;
  if (!read_at(payload, 0, round.type) || !read_at(payload, 8, round.time)) return std::nullopt;
  return round;
}

}  // namespace perfscope
