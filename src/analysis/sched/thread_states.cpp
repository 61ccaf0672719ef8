#include "perfscope/analysis/sched/thread_states.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "perfscope/core/safe_text.hpp"

namespace perfscope {

SchedState state_after_switch(std::int64_t prev_state) noexcept {
  switch (thread_state_from_prev_state(prev_state)) {
    case ThreadState::preempted: return SchedState::runnable;
    case ThreadState::uninterruptible: return SchedState::blocked;
    default: return SchedState::sleeping;
  }
}

ThreadStateAnalyzer::Thread& ThreadStateAnalyzer::thread(std::uint32_t tid) {
  Thread& found = threads_[tid];
  found.row.tid = tid;
  return found;
}

void ThreadStateAnalyzer::add(Thread& thread, SchedState state, std::uint64_t until) {
  std::uint64_t span = until > thread.since ? until - thread.since : 0;
  switch (state) {
    case SchedState::running: thread.row.running += span; break;
    case SchedState::runnable: thread.row.runnable += span; break;
    case SchedState::sleeping: thread.row.sleeping += span; break;
    case SchedState::blocked: thread.row.blocked += span; break;
  }
  thread.since = std::max(thread.since, until);
  thread.row.last = thread.since;
}

void ThreadStateAnalyzer::add_unknown(Thread& thread, std::uint64_t until) {
  thread.row.unknown += until > thread.since ? until - thread.since : 0;
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
      if (prev.on_cpu) {
        add(prev, SchedState::running, t);
      } else {
        // Its switch-in is missing (not reported, or lost) and no runtime event placed it.
        // (timehist counts it running since this CPU's previous switch, as perf does; on the
        // kernels that drop switches that one is often reported in place of a switch that did not
        // happen.)
        add_unknown(prev, t);
        ++prev.row.unplaced_switch_ins;
      }
      prev.on_cpu = false;
      prev.off = state_after_switch(event.prev_state);
      ++prev.row.switches;
      if (prev_state_is_exit(event.prev_state)) {
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
    } else if (!next.dead) {
      // Its switch-out is missing: it ran until its last runtime event, then who knows.
      add(next, SchedState::running, std::max(next.since, next.ran_until));
      add_unknown(next, t);
      ++next.row.missing_switch_outs;
    }
    next.dead = false;
    next.on_cpu = true;
    next.since = t;
    next.ran_until = t;
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
    woken.off = SchedState::runnable;
    return;
  }
  if (woken.on_cpu || woken.dead || woken.off == SchedState::runnable) return;
  add(woken, woken.off, t);
  woken.off = SchedState::runnable;
}

void ThreadStateAnalyzer::on_runtime(const SchedRuntimeEvent& event) {
  if (event.target <= 0) return;
  auto found = threads_.find(static_cast<std::uint32_t>(event.target));
  // A thread not seen yet is placed by its first switch, as without runtime events.
  if (found == threads_.end() || !found->second.known || found->second.dead) return;
  Thread& ran = found->second;
  std::uint64_t t = event.time;
  last_time_ = std::max(last_time_, t);
  if (!ran.on_cpu) {
    // The CPU time since its switch-in (update_curr counts from the exec_start that the switch-in
    // set): it went back on a CPU that long ago at the latest. A run that began before the thread
    // left is the one its switch-out ended (the kernel reports it just before the switch).
    std::uint64_t switched_in = t - std::min(t, event.runtime);
    if (switched_in < ran.since) return;
    add(ran, ran.off, switched_in);
    ran.on_cpu = true;
    ++ran.row.placed_switch_ins;
  }
  ran.ran_until = std::max(ran.ran_until, t);
}

std::vector<ThreadStateRow> ThreadStateAnalyzer::finish() {
  std::vector<ThreadStateRow> rows;
  rows.reserve(threads_.size());
  for (auto& [tid, thread] : threads_) {
    if (!thread.known) continue;
    if (!thread.dead) add(thread, thread.on_cpu ? SchedState::running : thread.off, last_time_);
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
  bool any_unknown = std::any_of(rows.begin(), rows.end(),
                                 [](const ThreadStateRow& row) { return row.unknown != 0; });
  std::string out;
  auto put = [&](fmt::string_view format, const auto&... args) {
    fmt::vformat_to(std::back_inserter(out), format, fmt::make_format_args(args...));
  };
  put("{:<30} {:>11}  {:>18}  {:>18}  {:>18}  {:>18}", "task", "wall", "running", "runnable",
      "sleeping", "blocked (D)");
  if (any_unknown) put("  {:>18}", "unknown");
  out += '\n';
  put("{:<30} {:>11}  {:>18}  {:>18}  {:>18}  {:>18}", "[tid/pid]", "(msec)", "(msec)     %",
      "(msec)     %", "(msec)     %", "(msec)     %");
  if (any_unknown) put("  {:>18}", "(msec)     %");
  out += '\n';
  put("{:-<30} {:-<11}  {:-<18}  {:-<18}  {:-<18}  {:-<18}", "", "", "", "", "", "");
  if (any_unknown) put("  {:-<18}", "");
  out += '\n';
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
        "{:>11.3f} {:>5.1f}%",
        name, ms(row.wall()), ms(row.running), share(row.running), ms(row.runnable),
        share(row.runnable), ms(row.sleeping), share(row.sleeping), ms(row.blocked),
        share(row.blocked));
    if (any_unknown) put("  {:>11.3f} {:>5.1f}%", ms(row.unknown), share(row.unknown));
    if (row.exited) out += "  (exited)";
    if (std::uint64_t missing = row.missing_switches(); missing != 0) {
      put("  ({} switch{} missing)", missing, missing == 1 ? "" : "es");
    }
    out += '\n';
  }
  return out;
}

}  // namespace perfscope
