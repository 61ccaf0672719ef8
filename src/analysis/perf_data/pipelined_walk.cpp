// PerfDataReader::for_each_record_ordered_pipelined: the ordered walk on a second thread, its
// records handed to the caller's thread in batches.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope {

namespace {

constexpr std::size_t batch_records = 8192;
// Batches in flight: enough that neither side waits on the other's bursts, few enough that the
// records' pages are still in the cache when they are visited.
constexpr std::size_t batches_in_flight = 4;
constexpr std::size_t prefetch_ahead = 8;

// A record as it waits in a batch: half the size of a PerfDataRecord, whose header and span the
// visiting side rebuilds from the bytes (the batches then stay in the CPUs' caches).
struct BatchedRecord {
  std::uintptr_t where;  // the address of the file's bytes, or the offset of a copy in copies
  std::uint64_t offset;
  std::uint64_t time;
  std::uint32_t event;
  std::uint32_t copied;  // 1: `where` is an offset into the batch's copies
};

struct Batch {
  std::vector<BatchedRecord> records;
  // Bytes of the records that are not the file's (decompressed, realigned, queued copies).
  std::vector<std::byte> copies;
  // The lowest file offset a record of the batch points at: the walk gives back no mapped page
  // from there on until the batch has been visited (visiting it again would fault them in).
  std::uint64_t lowest = std::numeric_limits<std::uint64_t>::max();
};

// The batches between the walking thread and the visiting one.
class BatchChannel {
 public:
  BatchChannel() {
    for (std::size_t i = 0; i < batches_in_flight; ++i) free_.push_back(std::make_unique<Batch>());
  }
  // Walker: an empty batch to fill; nullptr once the visitor has stopped.
  std::unique_ptr<Batch> take_free() {
    std::unique_lock lock(mutex_);
    free_ready_.wait(lock, [&] { return !free_.empty() || stopped_; });
    if (stopped_) return nullptr;
    auto batch = std::move(free_.front());
    free_.pop_front();
    return batch;
  }
  void send_full(std::unique_ptr<Batch> batch) {
    std::lock_guard lock(mutex_);
    full_.push_back(std::move(batch));
    full_ready_.notify_one();
  }
  void finish(std::exception_ptr failure) {
    std::lock_guard lock(mutex_);
    done_ = true;
    failure_ = failure;
    full_ready_.notify_one();
  }
  // Visitor: the next full batch; nullptr at the end of the walk.
  std::unique_ptr<Batch> take_full() {
    std::unique_lock lock(mutex_);
    full_ready_.wait(lock, [&] { return !full_.empty() || done_; });
    if (full_.empty()) return nullptr;
    auto batch = std::move(full_.front());
    full_.pop_front();
    visiting_lowest_ = batch->lowest;
    return batch;
  }
  // The lowest file offset of the batches handed over and not yet visited to the end.
  std::uint64_t held() {
    std::lock_guard lock(mutex_);
    std::uint64_t lowest = visiting_lowest_;
    for (const auto& batch : full_) lowest = std::min(lowest, batch->lowest);
    return lowest;
  }
  void give_back(std::unique_ptr<Batch> batch) {
    batch->records.clear();
    batch->copies.clear();
    batch->lowest = std::numeric_limits<std::uint64_t>::max();
    std::lock_guard lock(mutex_);
    visiting_lowest_ = std::numeric_limits<std::uint64_t>::max();
    free_.push_back(std::move(batch));
    free_ready_.notify_one();
  }
  void stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    free_ready_.notify_one();
  }
  std::exception_ptr failure() {
    std::lock_guard lock(mutex_);
    return failure_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable free_ready_, full_ready_;
  std::deque<std::unique_ptr<Batch>> free_, full_;
  std::uint64_t visiting_lowest_ = std::numeric_limits<std::uint64_t>::max();
  bool done_ = false, stopped_ = false;
  std::exception_ptr failure_;
};

struct WalkStopped {};

}  // namespace

std::optional<PerfDataError> PerfDataReader::for_each_record_ordered_pipelined(
    const Visitor& visit, std::uint64_t min_bytes, const RecordSieve& keep) const {
  if (data_end_ - data_begin_ < min_bytes || std::thread::hardware_concurrency() < 2) {
    return for_each_record_ordered(visit, keep);
  }
  BatchChannel channel;
  std::optional<PerfDataError> error;
  std::thread walker([&] {
    std::exception_ptr failure;
    try {
      std::unique_ptr<Batch> batch = channel.take_free();
      if (!batch) throw WalkStopped{};
      const std::byte* file_begin = bytes_.data();
      const std::byte* file_end = bytes_.data() + bytes_.size();
      auto visit_in_batches = [&](const PerfDataRecord& record) {
        const std::byte* at = record.view.bytes.data();
        BatchedRecord entry{reinterpret_cast<std::uintptr_t>(at), record.offset, record.time,
                            static_cast<std::uint32_t>(record.event), 0};
        if (at < file_begin || at + record.view.bytes.size() > file_end) {
          entry.where = batch->copies.size();
          entry.copied = 1;
          batch->copies.insert(batch->copies.end(), record.view.bytes.begin(),
                               record.view.bytes.end());
        } else {
          batch->lowest = std::min(batch->lowest, static_cast<std::uint64_t>(at - file_begin));
        }
        batch->records.push_back(entry);
        if (batch->records.size() == batch_records) {
          channel.send_full(std::move(batch));
          batch = channel.take_free();
          if (!batch) throw WalkStopped{};
        }
      };
      // Called by the walk on this thread, so this batch's lowest is read without a lock.
      error = ordered_walk(
          visit_in_batches, [&] { return std::min(batch->lowest, channel.held()); }, keep);
      channel.send_full(std::move(batch));
    } catch (const WalkStopped&) {
    } catch (...) {
      failure = std::current_exception();
    }
    channel.finish(failure);
  });
  try {
    PerfDataRecord record;
    while (auto batch = channel.take_full()) {
      auto address_of = [&](const BatchedRecord& entry) {
        return entry.copied ? batch->copies.data() + entry.where
                            : reinterpret_cast<const std::byte*>(entry.where);
      };
      const std::vector<BatchedRecord>& records = batch->records;
      for (std::size_t i = 0; i < records.size(); ++i) {
        // The walking thread read these bytes on another core: asked for a few records ahead,
        // they are here when the visitor reads them.
        if (i + prefetch_ahead < records.size())
          __builtin_prefetch(address_of(records[i + prefetch_ahead]));
        const BatchedRecord& entry = records[i];
        const std::byte* at = address_of(entry);
        std::memcpy(&record.view.header, at, sizeof record.view.header);
        record.view.bytes = std::span<const std::byte>(at, record.view.header.size);
        record.offset = entry.offset;
        record.time = entry.time;
        record.event = entry.event;
        visit(record);
      }
      channel.give_back(std::move(batch));
    }
  } catch (...) {
    channel.stop();
    walker.join();
    throw;
  }
  walker.join();
  if (auto failure = channel.failure()) std::rethrow_exception(failure);
  return error;
}

}  // namespace perfscope
