// PerfDataReader::for_each_record_ordered_fanned_out: the ordered walk on a thread of its own,
// every batch of its records handed to each of several workers.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "perfscope/analysis/perf_data/analysis_threads.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "record_batch.hpp"

namespace perfscope {

namespace {

using detail::Batch;

// A chunk closes at this many records, or at its share of the data: a sixteenth of a worker's
// (between 64 KiB and 4 MiB), so that every worker has chunks of a small recording too and the
// chunks of a large one stay few.
constexpr std::size_t chunk_records = 8192;

std::uint64_t chunk_bytes(std::uint64_t data_bytes, std::size_t workers) {
  return std::clamp<std::uint64_t>(data_bytes / (workers * 16), 64 << 10, 4 << 20);
}

// A hint to the CPU that this thread is polling.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// The batches between the walking thread and the workers. Batch n lies in slot n % slots; the
// walk fills it again once every worker has visited it.
class FanOutChannel {
 public:
  // `spin`: a waiting worker polls a while before it sleeps (when every worker has a CPU).
  FanOutChannel(std::size_t workers, bool spin)
      : slots_(2 * workers + 2), claimed_(slots_.size()), visited_(workers, 0), spin_(spin) {}

  // Walker: the slot of batch `number`, emptied; null once the workers have stopped.
  Batch* take_free(std::uint64_t number) {
    std::unique_lock lock(mutex_);
    free_ready_.wait(lock, [&] { return number - least_visited() < slots_.size() || stopped_; });
    if (stopped_) return nullptr;
    Batch& batch = slots_[number % slots_.size()];
    batch.clear();
    claimed_[number % slots_.size()].value.store(false, std::memory_order_relaxed);
    return &batch;
  }
  // Worker: whether batch `number`'s samples are this worker's, the first to ask. The workers
  // that are ahead take the chunks: a worker slowed down (its CPU shared with the walk) takes
  // fewer.
  bool claim(std::uint64_t number) {
    return !claimed_[number % slots_.size()].value.exchange(true, std::memory_order_acq_rel);
  }
  void publish() {
    std::lock_guard lock(mutex_);
    published_.store(published_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    full_ready_.notify_all();
  }
  void finish(std::exception_ptr failure) {
    std::lock_guard lock(mutex_);
    ended_.store(true, std::memory_order_release);
    done_ = true;
    failure_ = failure;
    full_ready_.notify_all();
  }
  // Worker: batch `number`; null at the end of the walk or once the workers have stopped.
  const Batch* take(std::uint64_t number) {
    // A worker waiting for the walk sleeps often: on a virtual machine an idle CPU is handed
    // back to the host, and waking it costs more than a short poll (two threads on two CPUs
    // took 330 ms against 260 with the poll).
    if (spin_) {
      for (int polls = 0; polls < spin_polls; ++polls) {
        if (published_.load(std::memory_order_acquire) > number ||
            ended_.load(std::memory_order_acquire)) {
          break;
        }
        cpu_relax();
      }
    }
    std::unique_lock lock(mutex_);
    full_ready_.wait(lock, [&] { return published_ > number || done_ || stopped_; });
    if (stopped_ || published_ <= number) return nullptr;
    return &slots_[number % slots_.size()];
  }
  void visited(std::size_t worker) {
    std::lock_guard lock(mutex_);
    ++visited_[worker];
    free_ready_.notify_one();
  }
  // The lowest file offset of the published batches some worker has yet to visit.
  std::uint64_t held() {
    std::lock_guard lock(mutex_);
    std::uint64_t lowest = std::numeric_limits<std::uint64_t>::max();
    for (std::uint64_t n = least_visited(); n < published_; ++n) {
      lowest = std::min(lowest, slots_[n % slots_.size()].lowest);
    }
    return lowest;
  }
  std::size_t slots() const { return slots_.size(); }
  // A worker failed: the walk and the other workers stop.
  void stop() {
    std::lock_guard lock(mutex_);
    ended_.store(true, std::memory_order_release);
    stopped_ = true;
    free_ready_.notify_all();
    full_ready_.notify_all();
  }
  std::exception_ptr failure() {
    std::lock_guard lock(mutex_);
    return failure_;
  }

 private:
  std::uint64_t least_visited() const {
    return *std::min_element(visited_.begin(), visited_.end());
  }

  std::mutex mutex_;
  std::condition_variable free_ready_, full_ready_;
  std::vector<Batch> slots_;
  struct alignas(64) Claim {
    std::atomic<bool> value{false};
  };
  std::vector<Claim> claimed_;          // by slot: whether a worker has taken its batch's samples
  std::vector<std::uint64_t> visited_;  // by worker: the batches it has visited
  static constexpr int spin_polls = 20000;  // about 0.2 ms of pause instructions
  std::atomic<std::uint64_t> published_{0};
  std::atomic<bool> ended_{false};  // done_ or stopped_, for the poll
  bool spin_;
  bool done_ = false, stopped_ = false;
  std::exception_ptr failure_;
};

struct FanOutStopped {};

}  // namespace

std::optional<PerfDataError> PerfDataReader::for_each_record_ordered_fanned_out(
    std::size_t workers, const ChunkVisitor& visit, const RecordSieve& keep,
    const ChunkTaken& taken) const {
  if (workers <= 1) {
    auto error = for_each_record_ordered(
        [&](const PerfDataRecord& record) { visit(0, 0, true, record); }, keep);
    if (taken) taken(0, 0);
    return error;
  }
  FanOutChannel channel(workers, workers <= usable_cpus());
  std::vector<std::exception_ptr> failures(workers);
  // Worker `worker`'s visit of `batch`, number `number`: its samples when it claims them.
  auto visit_batch = [&](std::size_t worker, const Batch* batch, std::uint64_t number) {
    bool owned = channel.claim(number);
    auto visit_record = [&](const PerfDataRecord& record) { visit(worker, number, owned, record); };
    if (owned) {
      batch->visit_each(visit_record);
      if (taken) taken(worker, number);
    } else {
      batch->visit_not_samples(visit_record);
    }
    channel.visited(worker);
  };
  auto work = [&](std::size_t worker) {
    try {
      for (std::uint64_t number = 0;; ++number) {
        const Batch* batch = channel.take(number);
        if (!batch) break;
        visit_batch(worker, batch, number);
      }
    } catch (...) {
      failures[worker] = std::current_exception();
      channel.stop();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t worker = 1; worker < workers; ++worker) threads.emplace_back(work, worker);
  // The calling thread walks and is worker 0, visiting each batch a ring's length after it
  // published it: by then the others have taken the samples of the batches they could, and
  // this thread, busy with the walk, takes the rest. Workers on every CPU then, and no thread
  // more than the CPUs to share them with.
  std::optional<PerfDataError> error;
  std::uint64_t visited = 0;  // by worker 0
  std::size_t lag = channel.slots() - 2;
  std::exception_ptr walk_failure;
  // Worker 0's visits of the batches up to `end`; the walk stops when the others have.
  auto catch_up = [&](std::uint64_t end) {
    for (; visited < end; ++visited) {
      const Batch* batch = channel.take(visited);
      if (!batch) throw FanOutStopped{};
      visit_batch(0, batch, visited);
    }
  };
  try {
    std::uint64_t number = 0;
    std::uint64_t bytes = 0, most_bytes = chunk_bytes(data_end_ - data_begin_, workers);
    Batch* batch = channel.take_free(number);
    if (!batch) throw FanOutStopped{};
    auto visit_in_batches = [&](const PerfDataRecord& record) {
      batch->add(record, bytes_);
      bytes += record.view.bytes.size();
      if (batch->records.size() == chunk_records || bytes >= most_bytes) {
        channel.publish();
        bytes = 0;
        ++number;
        if (number > lag) catch_up(number - lag);
        batch = channel.take_free(number);
        if (!batch) throw FanOutStopped{};
      }
    };
    // The batch being filled is this thread's: its lowest is read without the lock.
    error = ordered_walk(
        visit_in_batches, [&] { return std::min(batch->lowest, channel.held()); }, keep);
    if (!batch->records.empty()) {
      channel.publish();
      ++number;
    }
    channel.finish(nullptr);
    catch_up(number);
  } catch (const FanOutStopped&) {
    channel.finish(nullptr);
  } catch (...) {
    walk_failure = std::current_exception();
    channel.finish(walk_failure);
    channel.stop();
  }
  for (auto& thread : threads) thread.join();
  if (walk_failure) std::rethrow_exception(walk_failure);
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  if (auto failure = channel.failure()) std::rethrow_exception(failure);
  return error;
}

}  // namespace perfscope
