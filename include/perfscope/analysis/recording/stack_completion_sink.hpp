// StackCompletionSink: completes the user call chains of a recording's samples as they pass on
// to the file (StackCompleter), replaying the records that change mappings so that each sample
// is unwound against the processes' mappings of its time. The recording session delivers the
// buffers' records merged by time for this (SamplingOptions::time_ordered).
//
// After start_worker() the completing runs on a thread of its own, beside the drain: the drain
// copies each round's records into a batch and hands it over at the round's end, so that a slow
// unwind never keeps the ring buffers from being read. When the batches waiting pass a bound
// (the worker has fallen behind), the oldest are passed on without unwinding (their samples keep
// their copies, or in frame-pointer mode only lose them) until it has caught up: memory stays
// bounded and no record is dropped. Everything downstream runs on the worker from then on.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"
#include "perfscope/analysis/unwinding/stack_completion.hpp"

namespace perfscope {

class StackCompletionSink final : public RecordingSink {
 public:
  StackCompletionSink(RecordingSink& downstream, StackCompletion mode);
  ~StackCompletionSink() override;
  StackCompletionSink(const StackCompletionSink&) = delete;
  StackCompletionSink& operator=(const StackCompletionSink&) = delete;

  void record(const RecordView& view, std::size_t event, const ParseConfig& config) override;
  void end_round() override;
  void buffers_filled(double fullest) override;
  void aux_data(const SessionAuxData& data) override;

  // From here on records are completed on a worker thread (see above); before, on the caller's.
  void start_worker();
  // Completes and passes on everything handed over, then stops the worker: downstream is the
  // caller's again.
  void finish();

  // Read after finish() (or without a worker).
  const StackCompletionStatistics& statistics() const noexcept { return completer_.statistics(); }
  StackCompletion mode() const noexcept { return completer_.mode(); }
  // Samples passed on without unwinding because the worker had fallen behind, or the reader of
  // the buffers had (shed_fill).
  std::uint64_t passed_behind() const noexcept { return passed_behind_; }
  // Of those, the samples of rounds shed because the buffers had filled.
  std::uint64_t shed() const noexcept { return shed_; }

  // The bytes of waiting batches past which the oldest go on without unwinding.
  static constexpr std::size_t backlog_bound = 256u << 20;
  // Emptied batches kept for reuse.
  static constexpr std::size_t max_spare_batches = 16;
  // A buffer this full when its round began to be read (a reader woken at the watermark finds a
  // quarter): the reader is losing the race with the kernel, whose buffers drop what finds no
  // room. -g's rounds are then passed on without unwinding, which costs a tenth as much, until
  // a round finds every buffer under shed_until: records kept whole beat stacks completed.
  static constexpr double shed_fill = 0.5, shed_until = 0.3;

 private:
  struct Entry {
    std::size_t offset = 0, size = 0;
    std::size_t event = 0;
    const ParseConfig* config = nullptr;
  };
  struct Batch {
    std::vector<std::byte> bytes;
    std::vector<Entry> entries;
    bool shed = false;  // passed on without unwinding: the reader was late
  };

  const ParseConfig& output_config(const ParseConfig& config);
  // One record, on whichever thread completes: `complete` false passes samples on unwound only
  // as far as the mode needs (frame-pointer mode: without their copies); `shed` says why.
  void pass_on(const RecordView& view, std::size_t event, const ParseConfig& config, bool complete,
               bool shed = false);
  void work();

  RecordingSink& downstream_;
  TaskMaps maps_;
  StackCompleter completer_;
  std::vector<std::byte> completed_;
  // The layout of the completed samples of each event's layout (a recording has a few).
  std::vector<std::pair<const ParseConfig*, ParseConfig>> output_configs_;
  std::uint64_t passed_behind_ = 0, shed_ = 0;
  bool shedding_ = false;  // the drain's: the rounds being read go on without unwinding

  // The worker: batches handed over, in order.
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable ready_, drained_;
  std::deque<Batch> queue_;
  std::size_t queued_bytes_ = 0;
  bool busy_ = false, stopping_ = false;
  Batch filling_;             // the drain's current round
  std::vector<Batch> spare_;  // emptied batches, to refill without allocating
};

}  // namespace perfscope
