// The round-ordering queue behind PerfDataReader::for_each_record_ordered: perf writes each CPU's
// ring buffer in time order but interleaves the CPUs, and marks with FINISHED_ROUND that no later
// record will be older than the latest time of the round before. Records wait here until their
// round is over, then go out in time order (ties keep file order, as perf's insertion does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope::perf_data {

class RoundQueue {
 public:
  using Visitor = std::function<void(const PerfDataRecord&)>;

  // `file`: the bytes the mapped records point into.
  explicit RoundQueue(std::span<const std::byte> file) : file_(file) {}

  // One record as perf orders them: a FINISHED_ROUND delivers what the round before made safe
  // (then itself), a record without a time goes out as it is met, the others are queued.
  void take(const PerfDataRecord& record, bool stable, const Visitor& visit);
  // Queues a record with a timestamp. A `stable` one (its bytes are the file's) waits as its
  // offset; another (decompressed, realigned) as a copy.
  void push(const PerfDataRecord& record, bool stable);
  // A FINISHED_ROUND: delivers what the round before made safe, then starts the next round.
  void end_round(const Visitor& visit);
  // The end of the data: delivers everything left.
  void flush_all(const Visitor& visit) { flush(true, visit); }
  // The lowest file offset a queued record still points at (UINT64_MAX: none).
  std::uint64_t held() const noexcept;

 private:
  struct Queued {
    std::uint64_t time;
    std::uint64_t where;        // offset in the file, or in the arena
    std::uint64_t file_offset;  // PerfDataRecord::offset
    std::uint32_t event;
    std::uint32_t in_arena;
  };
  void sort_queue();
  void flush(bool everything, const Visitor& visit);

  std::span<const std::byte> file_;
  std::vector<Queued> queue_, scratch_;
  std::vector<std::size_t> runs_;
  std::vector<std::byte> arena_, kept_;
  std::uint64_t round_limit_ = 0;  // the latest time of the previous round
  std::uint64_t max_time_ = 0;
  bool limit_set_ = false;
  PerfDataRecord out_;
};

}  // namespace perfscope::perf_data
