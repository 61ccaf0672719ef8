#include "perfscope/analysis/trace/syscall_calls.hpp"

#include <algorithm>
#include <cmath>

namespace perfscope {

void SyscallPairer::enter(pid_t pid, pid_t tid, std::uint64_t time, long number,
                          const std::array<std::uint64_t, 6>& args, SyscallCallSink& sink) {
  Open& slot = threads_[tid];
  // An enter while one is open: that call's exit was lost (or never comes: a thread that exits
  // in a call does not reach here). It is handed out unfinished rather than dropped.
  if (slot.open) sink.call(slot.call);
  slot.call = SyscallCall{};
  slot.call.pid = pid;
  slot.call.tid = tid;
  slot.call.number = number;
  slot.call.enter_time = time;
  slot.call.args = args;
  slot.call.entered = true;
  slot.open = true;
}

void SyscallPairer::exit(pid_t pid, pid_t tid, std::uint64_t time, long number, std::int64_t ret,
                         SyscallCallSink& sink) {
  auto found = threads_.find(tid);
  if (found != threads_.end() && found->second.open) {
    Open& slot = found->second;
    slot.open = false;
    // A negative number: the call replaced the registers the exit reads it from (rt_sigreturn
    // restores the interrupted context); it is still the exit of the open call.
    if (slot.call.number == number || number < 0) {
      slot.call.exit_time = time;
      slot.call.ret = ret;
      slot.call.exited = true;
      sink.call(slot.call);
      return;
    }
    // Another call's exit: the open one's exit, and this one's enter, were lost.
    sink.call(slot.call);
  }
  SyscallCall call;
  call.pid = pid;
  call.tid = tid;
  call.number = number;
  call.exit_time = time;
  call.ret = ret;
  call.exited = true;
  sink.call(call);
}

void SyscallPairer::thread_exited(pid_t tid, SyscallCallSink& sink) {
  auto found = threads_.find(tid);
  if (found == threads_.end()) return;
  if (found->second.open) sink.call(found->second.call);
  // A tid is reused only after this; its slot would be taken again by the next thread.
  threads_.erase(found);
}

void SyscallPairer::finish(SyscallCallSink& sink) {
  std::vector<const SyscallCall*> open;
  for (const auto& [tid, slot] : threads_) {
    if (slot.open) open.push_back(&slot.call);
  }
  std::sort(open.begin(), open.end(), [](const SyscallCall* a, const SyscallCall* b) {
    return a->enter_time != b->enter_time ? a->enter_time < b->enter_time : a->tid < b->tid;
  });
  for (const SyscallCall* call : open) sink.call(*call);
  threads_.clear();
}

std::size_t SyscallPairer::open_calls() const noexcept {
  return static_cast<std::size_t>(std::count_if(
      threads_.begin(), threads_.end(), [](const auto& entry) { return entry.second.open; }));
}

void SyscallStats::add(std::uint64_t duration_ns, int error_number) {
  ++calls;
  double value = static_cast<double>(duration_ns);
  double delta = value - mean;
  mean += delta / static_cast<double>(calls);
  m2 += delta * (value - mean);
  if (calls == 1 || duration_ns < min) min = duration_ns;
  if (duration_ns > max) max = duration_ns;
  if (error_number != 0) {
    ++errors;
    ++errnos[error_number];
  }
}

double SyscallStats::stddev_percent() const noexcept {
  if (calls < 2 || mean == 0) return 0;
  double n = static_cast<double>(calls);
  double variance_of_mean = m2 / (n - 1) / n;
  return 100.0 * std::sqrt(variance_of_mean) / mean;
}

std::vector<std::pair<long, const SyscallStats*>> rows_by_total(
    const std::map<long, SyscallStats>& rows) {
  std::vector<std::pair<long, const SyscallStats*>> sorted;
  sorted.reserve(rows.size());
  for (const auto& [number, stats] : rows) sorted.emplace_back(number, &stats);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second->total_ms() > b.second->total_ms();
  });
  return sorted;
}

ThreadSyscallSummary& SyscallSummary::thread(pid_t pid, pid_t tid) {
  ThreadSyscallSummary& summary = threads_[tid];
  summary.tid = tid;
  if (pid >= 0) summary.pid = pid;
  return summary;
}

void SyscallSummary::add(const SyscallCall& call) {
  if (!call.exited) return;
  thread(call.pid, call.tid).syscalls[call.number].add(call.duration_ns(), call.error_number());
}

void SyscallSummary::count_event(pid_t pid, pid_t tid) {
  ++thread(pid, tid).events;
  ++events_;
}

std::vector<const ThreadSyscallSummary*> SyscallSummary::threads() const {
  std::vector<const ThreadSyscallSummary*> threads;
  for (const auto& [tid, summary] : threads_) {
    if (!summary.syscalls.empty()) threads.push_back(&summary);
  }
  std::sort(threads.begin(), threads.end(), [](const auto* a, const auto* b) {
    return a->events != b->events ? a->events > b->events : a->tid < b->tid;
  });
  return threads;
}

std::map<long, SyscallStats> SyscallSummary::totals() const {
  std::map<long, SyscallStats> totals;
  for (const auto& [tid, summary] : threads_) {
    for (const auto& [number, stats] : summary.syscalls) {
      SyscallStats& total = totals[number];
      if (total.calls == 0) {
        total = stats;
        continue;
      }
      // Chan et al.'s pairwise combination of two Welford accumulators.
      double na = static_cast<double>(total.calls), nb = static_cast<double>(stats.calls);
      double delta = stats.mean - total.mean;
      double n = na + nb;
      total.mean += delta * nb / n;
      total.m2 += stats.m2 + delta * delta * na * nb / n;
      total.calls += stats.calls;
      total.errors += stats.errors;
      total.min = std::min(total.min, stats.min);
      total.max = std::max(total.max, stats.max);
      for (const auto& [error, count] : stats.errnos) total.errnos[error] += count;
    }
  }
  return totals;
}

}  // namespace perfscope
