#include "analysis/perf_data/round_queue.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>

#include "analysis/perf_data/walk_tuning.hpp"

namespace perfscope::perf_data {

namespace {
constexpr std::size_t prefetch_ahead = 8;
}  // namespace

void RoundQueue::take(const PerfDataRecord& record, bool stable, const Visitor& visit) {
  if (record.view.header.type == type_of(abi::UserRecordType::finished_round)) {
    end_round(visit);
    visit(record);
    return;
  }
  if (record.time == 0) {
    visit(record);
    return;
  }
  push(record, stable);
}

void RoundQueue::push(const PerfDataRecord& record, bool stable) {
  max_time_ = std::max(max_time_, record.time);
  auto event = static_cast<std::uint32_t>(record.event);
  if (stable) {
    auto where = static_cast<std::uint64_t>(record.view.bytes.data() - file_.data());
    queue_.push_back({record.time, where, record.offset, event, 0});
    return;
  }
  std::size_t at = arena_.size();
  arena_.resize(at + ((record.view.bytes.size() + 7) & ~std::size_t{7}));
  std::memcpy(arena_.data() + at, record.view.bytes.data(), record.view.bytes.size());
  queue_.push_back({record.time, at, record.offset, event, 1});
}

void RoundQueue::end_round(const Visitor& visit) {
  flush(false, visit);
  round_limit_ = max_time_;
  limit_set_ = true;
}

std::uint64_t RoundQueue::held() const noexcept {
  std::uint64_t lowest = std::numeric_limits<std::uint64_t>::max();
  for (const Queued& entry : queue_) {
    if (!entry.in_arena) lowest = std::min(lowest, entry.where);
  }
  return lowest;
}

// A round holds one time-ordered stretch per CPU ring buffer drained into it: a merge of those
// runs (stable, so ties in time keep file order, as perf's insertion does) sorts it in
// O(n log runs), where a general sort took O(n log n) comparisons.
void RoundQueue::sort_queue() {
  auto by_time = [](const Queued& a, const Queued& b) { return a.time < b.time; };
  runs_.clear();
  runs_.push_back(0);
  for (std::size_t i = 1; i < queue_.size(); ++i) {
    if (queue_[i].time < queue_[i - 1].time) runs_.push_back(i);
  }
  if (runs_.size() == 1) return;
  runs_.push_back(queue_.size());
  scratch_.resize(queue_.size());
  Queued* from = queue_.data();
  Queued* to = scratch_.data();
  while (runs_.size() > 2) {
    std::size_t kept_runs = 0, run = 0;
    for (; run + 2 < runs_.size(); run += 2) {
      std::merge(from + runs_[run], from + runs_[run + 1], from + runs_[run + 1],
                 from + runs_[run + 2], to + runs_[run], by_time);
      runs_[kept_runs++] = runs_[run];
    }
    if (run + 1 < runs_.size()) {
      std::copy(from + runs_[run], from + runs_[run + 1], to + runs_[run]);
      runs_[kept_runs++] = runs_[run];
    }
    runs_[kept_runs++] = queue_.size();
    runs_.resize(kept_runs);
    std::swap(from, to);
  }
  if (from != queue_.data()) std::copy(from, from + queue_.size(), queue_.data());
}

void RoundQueue::flush(bool everything, const Visitor& visit) {
  sort_queue();
  std::size_t delivered = 0;
  for (; delivered < queue_.size(); ++delivered) {
    // The records of a round lie in several runs of the file: the one visited a few records on
    // is asked for now (its line left the cache since it was queued, in a large round).
    if (delivered + prefetch_ahead < queue_.size()) {
      const Queued& ahead = queue_[delivered + prefetch_ahead];
      __builtin_prefetch(ahead.in_arena ? arena_.data() + ahead.where : file_.data() + ahead.where);
    }
    const Queued& entry = queue_[delivered];
    if (!everything && (!limit_set_ || entry.time > round_limit_)) break;
    const std::byte* at = entry.in_arena ? arena_.data() + entry.where : file_.data() + entry.where;
    std::memcpy(&out_.view.header, at, sizeof(abi::RecordHeader));
    out_.view.bytes = std::span<const std::byte>(at, out_.view.header.size);
    out_.offset = entry.file_offset;
    out_.event = entry.event;
    out_.time = entry.time;
    visit(out_);
  }
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(delivered));
  // What is left of the arena moves to the front of a fresh one.
  kept_.clear();
  for (auto& entry : queue_) {
    if (!entry.in_arena) continue;
    std::size_t at = kept_.size();
    std::uint16_t size;
    std::memcpy(&size, arena_.data() + entry.where + offsetof(abi::RecordHeader, size),
                sizeof size);
    kept_.insert(kept_.end(), arena_.begin() + static_cast<std::ptrdiff_t>(entry.where),
                 arena_.begin() + static_cast<std::ptrdiff_t>(entry.where + ((size + 7u) & ~7u)));
    entry.where = at;
  }
  arena_.swap(kept_);
}

}  // namespace perfscope::perf_data
