#include "perf_task_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace perfscope::cli {

PerfTaskTable::PerfTaskTable() {
  // The idle task, which perf registers before reading.
  PerfTask& idle = find_or_add(0, 0);
  idle.comm = "swapper";
  idle.comm_set = true;
}

PerfTask& PerfTaskTable::find_or_add(std::int32_t pid, std::int32_t tid) {
  auto found = tasks_.find(tid);
  if (found != tasks_.end()) {
    if (found->second.pid == -1 && pid != -1) found->second.pid = pid;
    return found->second;
  }
  PerfTask task;
  task.pid = pid;
  task.tid = tid;
  task.comm = fmt::format(":{}", tid);
  tasks_.emplace(tid, std::move(task));
  if (pid != -1 && pid != tid) find_or_add(pid, pid);
  return tasks_.at(tid);
}

void PerfTaskTable::comm(const CommRecord& comm) {
  PerfTask& task =
      find_or_add(static_cast<std::int32_t>(comm.pid), static_cast<std::int32_t>(comm.tid));
  task.comm = std::string(comm.comm);
  task.comm_set = true;
}

void PerfTaskTable::fork(const TaskRecord& fork) {
  const auto pid = static_cast<std::int32_t>(fork.pid), tid = static_cast<std::int32_t>(fork.tid);
  const auto ppid = static_cast<std::int32_t>(fork.ppid);
  const auto ptid = static_cast<std::int32_t>(fork.ptid);
  PerfTask* parent = &find_or_add(ppid, ptid);
  if (parent->pid != ppid) {
    tasks_.erase(ptid);
    parent = &find_or_add(ppid, ptid);
  }
  PerfTask saved_parent = *parent;  // find_or_add below may move the table's entries
  tasks_.erase(tid);
  PerfTask& child = find_or_add(pid, tid);
  if (saved_parent.comm_set) {
    child.comm = saved_parent.comm;
    child.comm_set = true;
  }
  child.ppid = saved_parent.tid;
}

std::optional<std::string> PerfTaskTable::render() {
  std::vector<std::int32_t> order;
  for (const auto& [tid, task] : tasks_) order.push_back(tid);
  std::stable_sort(order.begin(), order.end(), [](std::int32_t a, std::int32_t b) {
    auto bucket = [](std::int32_t tid) { return static_cast<std::uint32_t>(tid) % 256; };
    return bucket(a) != bucket(b) ? bucket(a) < bucket(b) : a < b;
  });
  std::vector<std::int32_t> roots;
  for (std::int32_t tid : order) {
    std::int32_t at = tid;
    while (true) {
      PerfTask& task = tasks_.at(at);
      if (task.listed) break;
      if (task.ppid == -1) {
        task.listed = true;
        roots.push_back(at);
        break;
      }
      auto parent = tasks_.find(task.ppid);
      if (parent == tasks_.end()) return std::nullopt;
      task.listed = true;
      parent->second.children.push_back(at);
      at = task.ppid;
    }
  }
  std::string out = fmt::format("# {:>8} {:>8} {:>8}  {}\n", "pid", "tid", "ppid", "comm");
  for (std::int32_t root : roots) render(root, 0, out);
  return out;
}

void PerfTaskTable::render(std::int32_t tid, int level, std::string& out) const {
  const PerfTask& task = tasks_.at(tid);
  fmt::format_to(std::back_inserter(out), "  {:>8} {:>8} {:>8} |{:{}}{}\n", task.pid, task.tid,
                 task.ppid, "", level, task.comm);
  for (std::int32_t child : task.children) render(child, level + 1, out);
}

}  // namespace perfscope::cli
