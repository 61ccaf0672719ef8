#include "perfscope/analysis/sched/sched_latency.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <unordered_map>

#include "perfscope/analysis/sched/timehist.hpp"
#include "perfscope/core/safe_text.hpp"

namespace perfscope {

namespace {

constexpr std::string_view known_keys[] = {"avg", "max", "switch", "runtime", "pid"};

// -1, 0, 1 as `a` sorts before, with or after `b` for one key (larger values first).
int compare_key(std::string_view key, const LatencyRow& a, const LatencyRow& b) {
  auto order = [](std::uint64_t x, std::uint64_t y) { return x > y ? -1 : x < y ? 1 : 0; };
  if (key == "avg") {
    // perf puts a task without switches after the others.
    if (a.switches == 0 || b.switches == 0) return a.switches == 0 ? 1 : -1;
    return order(a.average_delay(), b.average_delay());
  }
  if (key == "max") return order(a.max_delay, b.max_delay);
  if (key == "switch") return order(a.switches, b.switches);
  if (key == "runtime") return order(a.runtime, b.runtime);
  return order(a.tid, b.tid);
}

}  // namespace

std::vector<std::string> parse_latency_sort_keys(const std::string& text) {
  std::vector<std::string> keys;
  std::string key;
  auto take = [&] {
    if (key.empty()) return;
    if (std::find(std::begin(known_keys), std::end(known_keys), key) == std::end(known_keys)) {
      throw std::invalid_argument(fmt::format(
          "unknown sort key '{}': give keys among avg, max, switch, runtime, pid", key));
    }
    keys.push_back(key);
    key.clear();
  };
  for (char c : text) {
    if (c == ',' || c == ' ') {
      take();
    } else {
      key += c;
    }
  }
  take();
  if (keys.empty()) {
    throw std::invalid_argument("no sort key: give keys among avg, max, switch, runtime, pid");
  }
  return keys;
}

LatencyAnalyzer::LatencyAnalyzer(const TaskMaps& tasks, const LatencyOptions& options,
                                 bool has_waking)
    : names_(tasks),
      use_waking_(options.count_waking),
      use_wakeup_(!options.count_waking || !has_waking) {}

void LatencyAnalyzer::sched_out(Task& task, bool runnable, std::uint64_t time) {
  // A new atom: perf keeps them all, but only the last one is ever updated.
  task.has_atom = true;
  task.sched_out_time = time;
  task.state = runnable ? AtomState::wait_cpu : AtomState::sleeping;
  task.wake_up_time = runnable ? time : 0;
}

void LatencyAnalyzer::sched_in(Task& task, std::uint64_t time) {
  if (!task.has_atom || task.state != AtomState::wait_cpu) return;
  if (time < task.wake_up_time) {
    task.state = AtomState::ignore;
    return;
  }
  task.state = AtomState::sched_in;
  std::uint64_t delay = time - task.wake_up_time;
  task.total_delay += delay;
  if (delay > task.max_delay) {
    task.max_delay = delay;
    task.max_delay_start = task.wake_up_time;
    task.max_delay_end = time;
  }
  ++task.switches;
}

void LatencyAnalyzer::on_switch(const SchedSwitchEvent& event) {
  if (event.cpu >= current_.size()) current_.resize(event.cpu + 1, -1);
  std::int64_t& current = current_[event.cpu];
  if (current != -1 && current != event.prev_pid) ++switch_bugs_;
  // perf 6.1 reads the state letter as "RSDTtZXxKWP"[prev_state]: only a task that left the CPU
  // with state 0 counts as runnable (a preempted one, 0x100, waits unmeasured).
  bool runnable = event.prev_state == 0;
  sched_out(tasks_[static_cast<std::uint32_t>(event.prev_pid)], runnable, event.time);
  auto [in, inserted] = tasks_.try_emplace(static_cast<std::uint32_t>(event.next_pid));
  // A task not seen before came in: it was waiting runnable since some time unknown.
  if (inserted) sched_out(in->second, true, event.time);
  sched_in(in->second, event.time);
  current = event.next_pid;
}

void LatencyAnalyzer::on_wakeup(const SchedWakeupEvent& event) {
  if (event.kind == SchedWakeupKind::waking
          ? !use_waking_
          : event.kind == SchedWakeupKind::wakeup && !use_wakeup_) {
    return;
  }
  auto [found, inserted] = tasks_.try_emplace(static_cast<std::uint32_t>(event.target));
  Task& task = found->second;
  if (inserted) sched_out(task, false, event.time);
  // Woken while not asleep (already on a run queue): perf measures from the earlier moment.
  if (task.state != AtomState::sleeping) return;
  ++timestamps_;
  if (task.sched_out_time > event.time) {
    ++unordered_;
    return;
  }
  task.state = AtomState::wait_cpu;
  task.wake_up_time = event.time;
}

void LatencyAnalyzer::on_runtime(const SchedRuntimeEvent& event) {
  auto [found, inserted] = tasks_.try_emplace(static_cast<std::uint32_t>(event.target));
  if (inserted) sched_out(found->second, true, event.time);
  found->second.runtime += event.runtime;
}

LatencyReport LatencyAnalyzer::finish(const LatencyOptions& options,
                                      const SchedWalkStats& walk) const {
  LatencyReport report;
  report.timestamps = timestamps_;
  report.unordered_timestamps = unordered_;
  report.context_switch_bugs = switch_bugs_;
  report.events = walk.records;
  report.lost_events = walk.lost;
  report.lost_chunks = walk.lost_records;

  std::vector<std::pair<std::uint32_t, const Task*>> threads;
  threads.reserve(tasks_.size());
  for (const auto& [tid, task] : tasks_) threads.emplace_back(tid, &task);
  // perf walks its threads by id, largest first: the first of a name represents the merged row,
  // and ties in the sort keep this order.
  std::sort(threads.begin(), threads.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<LatencyRow> rows;
  std::unordered_map<std::string, std::size_t> by_name;
  for (const auto& [tid, task] : threads) {
    std::string_view comm = names_.comm_of(tid);
    LatencyRow row;
    row.comm = comm.empty() ? fmt::format(":{}", tid) : std::string(comm);
    row.tid = tid;
    row.runtime = task->runtime;
    row.switches = task->switches;
    row.total_delay = task->total_delay;
    row.max_delay = task->max_delay;
    row.max_delay_start = task->max_delay_start;
    row.max_delay_end = task->max_delay_end;
    if (!options.per_thread) {
      auto [at, added] = by_name.try_emplace(row.comm, rows.size());
      if (!added) {
        LatencyRow& merged = rows[at->second];
        ++merged.merged;
        merged.runtime += row.runtime;
        merged.switches += row.switches;
        merged.total_delay += row.total_delay;
        if (merged.max_delay < row.max_delay) {
          merged.max_delay = row.max_delay;
          merged.max_delay_start = row.max_delay_start;
          merged.max_delay_end = row.max_delay_end;
        }
        continue;
      }
    }
    rows.push_back(std::move(row));
  }
  if (!options.per_thread) {
    // perf's merged tree is ordered by name, largest first.
    std::stable_sort(rows.begin(), rows.end(),
                     [](const LatencyRow& a, const LatencyRow& b) { return a.comm > b.comm; });
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const LatencyRow& a, const LatencyRow& b) {
    for (const auto& key : options.sort_keys) {
      int order = compare_key(key, a, b);
      if (order != 0) return order < 0;
    }
    return false;
  });
  for (auto& row : rows) {
    // The idle task (one for every CPU) is not a task that waits for one.
    if (row.switches == 0 || row.comm == "swapper") continue;
    report.total_runtime += row.runtime;
    report.total_switches += row.switches;
    report.rows.push_back(std::move(row));
  }
  return report;
}

std::string render_latency(const LatencyReport& report) {
  std::string out;
  auto put = [&](fmt::string_view format, const auto&... args) {
    fmt::vformat_to(std::back_inserter(out), format, fmt::make_format_args(args...));
  };
  const std::string wide_rule(139, '-');
  put("\n {}\n", wide_rule);
  put("  Task                  |   Runtime ms  | Switches | Avg delay ms    | Max delay ms    | "
      "Max delay start           | Max delay end          |\n");
  put(" {}\n", wide_rule);
  std::string name;
  char start[32], end[32];
  for (const auto& row : report.rows) {
    name = "  " + terminal_safe(row.comm);
    name += row.merged > 1 ? fmt::format(":({}) ", row.merged) : fmt::format(":{} ", row.tid);
    if (name.size() < 24) name.append(24 - name.size(), ' ');
    put("{}|{:11.3f} ms |{:9} | avg:{:8.3f} ms | max:{:8.3f} ms | max start: {:>12} s | max end: "
        "{:>12} s\n",
        name, static_cast<double>(row.runtime) / 1e6, row.switches,
        static_cast<double>(row.average_delay()) / 1e6, static_cast<double>(row.max_delay) / 1e6,
        perf_time(start, row.max_delay_start), perf_time(end, row.max_delay_end));
  }
  put(" {}\n", std::string(113, '-'));
  put("  TOTAL:                |{:11.3f} ms |{:9} |\n",
      static_cast<double>(report.total_runtime) / 1e6, report.total_switches);
  put(" {}\n", std::string(51, '-'));
  if (report.unordered_timestamps != 0 && report.timestamps != 0) {
    put("  INFO: {:.3f}% unordered timestamps ({} out of {})\n",
        static_cast<double>(report.unordered_timestamps) / static_cast<double>(report.timestamps) *
            100.0,
        report.unordered_timestamps, report.timestamps);
  }
  if (report.lost_events != 0 && report.events != 0) {
    put("  INFO: {:.3f}% lost events ({} out of {}, in {} chunks)\n",
        static_cast<double>(report.lost_events) / static_cast<double>(report.events) * 100.0,
        report.lost_events, report.events, report.lost_chunks);
  }
  if (report.context_switch_bugs != 0 && report.timestamps != 0) {
    put("  INFO: {:.3f}% context switch bugs ({} out of {}){}\n",
        static_cast<double>(report.context_switch_bugs) / static_cast<double>(report.timestamps) *
            100.0,
        report.context_switch_bugs, report.timestamps,
        report.lost_events != 0 ? " (due to lost events?)" : "");
  }
  put("\n");
  return out;
}

}  // namespace perfscope
