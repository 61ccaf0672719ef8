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
#include "record_batch.hpp"

namespace perfscope {

namespace {

using detail::Batch;

constexpr std::size_t batch_records = 8192;
// Batches in flight: enough that neither side waits on the other's bursts, few enough that the
// records' pages are still in the cache when they are visited.
constexpr std::size_t batches_in_flight = 4;

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
    batch->clear();
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
      auto visit_in_batches = [&](const PerfDataRecord& record) {
        batch->add(record, bytes_);
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
    while (auto batch = channel.take_full()) {
      batch->visit_each(visit);
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
