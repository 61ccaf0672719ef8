#include "perfscope/analysis/recording/stack_completion_sink.hpp"

#include <pthread.h>

#include "perfscope/abi/record_type.hpp"

namespace perfscope {

StackCompletionSink::StackCompletionSink(RecordingSink& downstream, StackCompletion mode)
    : downstream_(downstream), completer_(maps_, mode) {}

StackCompletionSink::~StackCompletionSink() { finish(); }

const ParseConfig& StackCompletionSink::output_config(const ParseConfig& config) {
  for (const auto& [input, output] : output_configs_) {
    if (input == &config) return output;
  }
  output_configs_.emplace_back(&config, StackCompleter::output_config(config, completer_.mode()));
  return output_configs_.back().second;
}

void StackCompletionSink::pass_on(const RecordView& view, std::size_t event,
                                  const ParseConfig& config, bool complete, bool shed) {
  if (view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample)) {
    bool done = complete ? completer_.complete(view, config, completed_)
                         : completer_.strip(view, config, completed_);
    if (!complete) {
      ++passed_behind_;
      if (shed) ++shed_;
    }
    if (done) {
      downstream_.record(record_view(completed_), event, output_config(config));
      return;
    }
  } else if (TaskMaps::observes(view.header.type)) {
    maps_.observe(view, config);
  }
  downstream_.record(view, event, config);
}

void StackCompletionSink::record(const RecordView& view, std::size_t event,
                                 const ParseConfig& config) {
  if (!worker_.joinable()) {
    pass_on(view, event, config, !shedding_, shedding_);
    return;
  }
  Batch& batch = filling_;
  batch.entries.push_back(Entry{batch.bytes.size(), view.bytes.size(), event, &config});
  batch.bytes.insert(batch.bytes.end(), view.bytes.begin(), view.bytes.end());
}

void StackCompletionSink::buffers_filled(double fullest) {
  // On the drain's thread, for the round it read last (handed over at its end_round). Only
  // -g's work is shed: a DWARF sample left unwound keeps its 8 KiB copy, and writing those costs
  // the drain more than unwinding them (20 kHz: a 2 GB file, and more lost than without).
  if (completer_.mode() != StackCompletion::fill_frame_pointer_gaps) return;
  if (fullest >= shed_fill) shedding_ = true;
  if (fullest < shed_until) shedding_ = false;
}

void StackCompletionSink::end_round() {
  if (!worker_.joinable()) {
    downstream_.end_round();
    return;
  }
  filling_.shed = shedding_;
  std::lock_guard lock(mutex_);
  queued_bytes_ += filling_.bytes.size();
  queue_.push_back(std::move(filling_));
  if (!spare_.empty()) {
    filling_ = std::move(spare_.back());
    spare_.pop_back();
  } else {
    filling_ = Batch{};
  }
  ready_.notify_one();
}

void StackCompletionSink::aux_data(const SessionAuxData& data) {
  if (!worker_.joinable()) {
    downstream_.aux_data(data);
    return;
  }
  // Its bytes live during this call only, after the records of its round: those go first.
  end_round();
  std::unique_lock lock(mutex_);
  drained_.wait(lock, [&] { return queue_.empty() && !busy_; });
  downstream_.aux_data(data);
}

void StackCompletionSink::start_worker() {
  if (worker_.joinable()) return;
  stopping_ = false;
  worker_ = std::thread([this] {
    // Named for top and perf, which show where a recorder's CPU goes by thread.
    ::pthread_setname_np(::pthread_self(), "perfscope-stack");
    work();
  });
}

void StackCompletionSink::finish() {
  if (!worker_.joinable()) return;
  if (!filling_.entries.empty()) end_round();  // an empty one would be an empty round in the file
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    ready_.notify_one();
  }
  worker_.join();
}

void StackCompletionSink::work() {
  for (;;) {
    Batch batch;
    bool behind = false;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;  // stopping, and everything passed on
      batch = std::move(queue_.front());
      queue_.pop_front();
      behind = queued_bytes_ > backlog_bound;
      queued_bytes_ -= batch.bytes.size();
      busy_ = true;
    }
    for (const Entry& entry : batch.entries) {
      RecordView view =
          record_view(std::span<const std::byte>(batch.bytes.data() + entry.offset, entry.size));
      pass_on(view, entry.event, *entry.config, !behind && !batch.shed, batch.shed);
    }
    downstream_.end_round();
    batch.bytes.clear();
    batch.entries.clear();
    batch.shed = false;
    std::lock_guard lock(mutex_);
    busy_ = false;
    // Kept for the drain to refill: memory it would otherwise fault in afresh, page by page, on
    // every round (a tenth of its time at 50 kHz).
    if (spare_.size() < max_spare_batches) spare_.push_back(std::move(batch));
    drained_.notify_all();
  }
}

}  // namespace perfscope
