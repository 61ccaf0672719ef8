#include "perfscope/analysis/sched/thread_states.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "perfscope/core/safe_text.hpp"

namespace perfscope {

namespace {

// The kernel's reported states (__trace_sched_switch_state): one bit per state below 0x100,
// TASK_REPORT_MAX (0x100, since 4.14) for a preempted task.
constexpr std::int64_t report_uninterruptible = 0x02;
constexpr std::int64_t report_dead = 0x10 | 0x20;  // EXIT_DEAD, EXIT_ZOMBIE
constexpr std::int64_t report_preempted = 0x100;

}  // namespace

ThreadState state_after_switch(std::int64_t prev_state) noexcept {
  if (prev_state == 0 || (prev_state & report_preempted) != 0) return ThreadState::runnable;
  if ((prev_state & report_uninterruptible) != 0) return ThreadState::blocked;
  return ThreadState::sleeping;
}

ThreadStateAnalyzer::Thread& ThreadStateAnalyzer::thread(std::uint32_t tid) {
  Thread& found = threads_[tid];
  found.row.tid = tid;
  return found;
}

void ThreadStateAnalyzer::add(Thread& thread, ThreadState state, std::uint64_t until) {
  std::uint64_t span = until > thread.since ? until - thread.since : 0;
  switch (state) {
    case ThreadState::running: thread.row.running += span; break;
    case ThreadState::runnable: thread.row.runnable += span; break;
    case ThreadState::sleeping: thread.row.sleeping += span; break;
    case ThreadState::blocked: thread.row.blocked += span; break;
  }
  thread.since = std::max(thread.since, until);
  thread.row.last = thread.since;
}

void ThreadStateAnalyzer::on_switch(const SchedSwitchEvent& event) {
  std::uint64_t t = event.time;
  if (first_time_ == 0) first_time_ = t;
  last_time_ = std::max(last_time_, t);
  if (event.cpu >= last_switch_.size()) last_switch_.resize(event.cpu + 1);
  if (event.prev_pid > 0) {
    Thread& prev = thread(static_cast<std::uint32_t>(event.prev_pid));
    if (prev.row.pid == 0 && event.tid == static_cast<std::uint32_t>(event.prev_pid)) {
      prev.row.pid = event.pid;
    }
    if (!prev.dead) {
      if (!prev.known) {
        // Running before its first event: since this CPU's previous switch (which put it there
        // unseen) or, on a CPU without one, since the recording started.
        prev.known = true;
        prev.row.comm = event.prev_comm;
        prev.since = last_switch_[event.cpu] != 0 ? last_switch_[event.cpu] : first_time_;
        prev.row.first = prev.since;
        prev.on_cpu = true;
      }
      if (!prev.on_cpu) {
        // Its switch-in is missing (the kernel did not report it, or it was lost): it ran on this
        // CPU since this CPU's previous switch at the latest, as timehist counts it.
        add(prev, prev.off, std::max(prev.since, last_switch_[event.cpu]));
      }
      add(prev, ThreadState::running, t);
      prev.on_cpu = false;
      prev.off = state_after_switch(event.prev_state);
      ++prev.row.switches;
      if ((event.prev_state & report_dead) != 0 && (event.prev_state & report_preempted) == 0) {
        prev.dead = true;
        prev.row.exited = true;
      }
    }
  }
  if (event.next_pid > 0) {
    Thread& next = thread(static_cast<std::uint32_t>(event.next_pid));
    if (!next.known) {
      next.known = true;
      next.row.comm = event.next_comm;
      next.since = t;
      next.row.first = t;
    } else if (!next.on_cpu) {
      add(next, next.off, t);
    }
    next.dead = false;
    next.on_cpu = true;
    next.since = t;
  }
  last_switch_[event.cpu] = t;
}

void ThreadStateAnalyzer::on_wakeup(const SchedWakeupEvent& event) {
  if (event.target <= 0) return;
  std::uint64_t t = event.time;
  if (first_time_ == 0) first_time_ = t;
  last_time_ = std::max(last_time_, t);
  Thread& woken = thread(static_cast<std::uint32_t>(event.target));
  if (!woken.known) {
    woken.known = true;
    woken.row.comm = event.target_comm;
    woken.since = t;
    woken.row.first = t;
    woken.off = ThreadState::runnable;
    return;
  }
  if (woken.on_cpu || woken.dead || woken.off == ThreadState::runnable) return;
  add(woken, woken.off, t);
  woken.off = ThreadState::runnable;
}

std::vector<ThreadStateRow> ThreadStateAnalyzer::finish() {
  std::vector<ThreadStateRow> rows;
  rows.reserve(threads_.size());
  for (auto& [tid, thread] : threads_) {
    if (!thread.known) continue;
    if (!thread.dead) add(thread, thread.on_cpu ? ThreadState::running : thread.off, last_time_);
    // The recording's name (COMM records) where it has one, else the tracepoint's.
    std::string_view comm = tasks_.comm_of(tid);
    if (!comm.empty()) thread.row.comm = comm;
    if (thread.row.comm.empty()) thread.row.comm = fmt::format(":{}", tid);
    rows.push_back(thread.row);
  }
  std::sort(rows.begin(), rows.end(), [](const ThreadStateRow& a, const ThreadStateRow& b) {
    if (a.running != b.running) return a.running > b.running;
    return a.tid < b.tid;
  });
  return rows;
}

std::string render_thread_states(const std::vector<ThreadStateRow>& rows) {
  std::string out;
  auto put = [&](fmt::string_view format, const auto&... args) {
    fmt::vformat_to(std::back_inserter(out), format, fmt::make_format_args(args...));
  };
  put("{:<30} {:>11}  {:>18}  {:>18}  {:>18}  {:>18}\n", "task", "wall", "running", "runnable",
      "sleeping", "blocked (D)");
  put("{:<30} {:>11}  {:>18}  {:>18}  {:>18}  {:>18}\n", "[tid/pid]", "(msec)", "(msec)     %",
      "(msec)     %", "(msec)     %", "(msec)     %");
  put("{:-<30} {:-<11}  {:-<18}  {:-<18}  {:-<18}  {:-<18}\n", "", "", "", "", "", "");
  std::string name;
  for (const auto& row : rows) {
    name = terminal_safe(row.comm);
    if (row.pid != 0 && row.pid != row.tid) {
      name += fmt::format("[{}/{}]", row.tid, row.pid);
    } else {
      name += fmt::format("[{}]", row.tid);
    }
    double wall = static_cast<double>(row.wall());
    auto share = [&](std::uint64_t part) {
      return wall > 0 ? 100.0 * static_cast<double>(part) / wall : 0.0;
    };
    auto ms = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e6; };
    put("{:<30} {:>11.3f}  {:>11.3f} {:>5.1f}%  {:>11.3f} {:>5.1f}%  {:>11.3f} {:>5.1f}%  "
        "{:>11.3f} {:>5.1f}%{}\n",
        name, ms(row.wall()), ms(row.running), share(row.running), ms(row.runnable),
        share(row.runnable), ms(row.sleeping), share(row.sleeping), ms(row.blocked),
        share(row.blocked), row.exited ? "  (exited)" : "");
  }
  return out;
}

}  // namespace perfscope
