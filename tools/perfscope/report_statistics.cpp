#include "report_statistics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope::cli {

namespace {

// perf_event__names: the kernel's record types, then perf's own (64 and up) as perf names them.
std::string_view perf_record_name(std::uint32_t type) {
  static constexpr std::array<std::string_view, 19> user_names = {
      "ATTR",      "EVENT_TYPE",    "TRACING_DATA", "BUILD_ID",       "FINISHED_ROUND",
      "ID_INDEX",  "AUXTRACE_INFO", "AUXTRACE",     "AUXTRACE_ERROR", "THREAD_MAP",
      "CPU_MAP",   "STAT_CONFIG",   "STAT",         "STAT_ROUND",     "EVENT_UPDATE",
      "TIME_CONV", "FEATURE",       "COMPRESSED",   "FINISHED_INIT"};
  if (type >= 64) return type - 64 < user_names.size() ? user_names[type - 64] : "";
  return record_type_name(type);
}

}  // namespace

std::optional<PerfDataError> print_record_statistics(const PerfDataReader& reader, std::FILE* out,
                                                     bool skip_empty) {
  std::map<std::uint32_t, std::uint64_t> by_type;
  std::uint64_t total = 0;
  std::vector<std::uint64_t> samples(reader.events().size()), lost_samples(samples.size());
  std::uint64_t last_carrier = ~std::uint64_t{0};
  const auto compressed = static_cast<std::uint32_t>(abi::UserRecordType::compressed);
  auto count = [&](std::uint32_t type) {
    ++by_type[type];
    ++total;
  };
  auto error = reader.for_each_record([&](const PerfDataRecord& record) {
    const std::uint32_t type = record.view.header.type;
    // A COMPRESSED record is counted once, with every record it carried.
    if (record.decompressed) {
      if (record.offset != last_carrier) count(compressed);
      last_carrier = record.offset;
    }
    count(type);
    if (type == static_cast<std::uint32_t>(abi::RecordType::sample)) {
      ++samples[record.event];
    } else if (type == static_cast<std::uint32_t>(abi::RecordType::lost_samples) &&
               record.view.bytes.size() >= 16) {
      std::uint64_t lost = 0;  // after the header
      std::memcpy(&lost, record.view.bytes.data() + 8, sizeof lost);
      lost_samples[record.event] += lost;
    }
  });
  const auto& present = reader.features().present;
  const bool aux = std::find(present.begin(), present.end(),
                             static_cast<unsigned>(perf_data::Feature::auxtrace)) != present.end();
  fmt::print(
      out, "\nAggregated stats:{}\n",
      aux ? " (excludes AUX area (e.g. instruction trace) decoded / synthesized events)" : "");
  fmt::print(out, "{:>16} events: {:>10}\n", "TOTAL", total);
  if (!skip_empty) {
    // Every type perf 6.1 names: the kernel's up to AUX_OUTPUT_HW_ID, perf's own after.
    for (std::uint32_t type = 1; type <= 21; ++type) by_type.try_emplace(type, 0);
    for (std::uint32_t type = 64; type <= 82; ++type) by_type.try_emplace(type, 0);
  }
  for (const auto& [type, n] : by_type) {
    std::string_view name = perf_record_name(type);
    if (name.empty()) continue;
    fmt::print(out, "{:>16} events: {:>10}  ({:4.1f}%)\n", name, n,
               100.0 * static_cast<double>(n) / static_cast<double>(total));
  }
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (skip_empty && samples[i] == 0 && lost_samples[i] == 0) continue;
    fmt::print(out, "{} stats:\n", reader.events()[i].name);
    if (samples[i] != 0) fmt::print(out, "{:>16} events: {:>10}\n", "SAMPLE", samples[i]);
    if (lost_samples[i] != 0) {
      fmt::print(out, "{:>16} events: {:>10}\n", "LOST_SAMPLES", lost_samples[i]);
    }
  }
  return error;
}

namespace {

// A task as perf's machine keeps it: created by the first record that names it, called ":TID"
// until a COMM (or its parent's comm at its fork), its parent the task it forked from.
struct Task {
  std::int32_t pid = -1, tid = 0, ppid = -1;
  std::string comm;
  bool comm_set = false;
  bool listed = false;  // in the roots' list or a parent's children
  std::vector<std::int32_t> children;
};

class TaskTable {
 public:
  TaskTable() {
    // The idle task, which perf registers before reading.
    Task& idle = find_or_add(0, 0);
    idle.comm = "swapper";
    idle.comm_set = true;
  }

  // machine__findnew_thread: a task of another process brings its leader with it.
  Task& find_or_add(std::int32_t pid, std::int32_t tid) {
    auto found = tasks_.find(tid);
    if (found != tasks_.end()) {
      if (found->second.pid == -1 && pid != -1) found->second.pid = pid;
      return found->second;
    }
    Task task;
    task.pid = pid;
    task.tid = tid;
    task.comm = fmt::format(":{}", tid);
    tasks_.emplace(tid, std::move(task));
    if (pid != -1 && pid != tid) find_or_add(pid, pid);
    return tasks_.at(tid);
  }

  // perf report --tasks reads COMM, FORK and EXIT records alone: samples and maps make no task.
  void comm(const CommRecord& comm) {
    Task& task =
        find_or_add(static_cast<std::int32_t>(comm.pid), static_cast<std::int32_t>(comm.tid));
    task.comm = std::string(comm.comm);
    task.comm_set = true;
  }

  // machine__process_fork_event: a task id seen again is a new task; a parent of another
  // process than the record says is replaced; the child takes its parent's comm.
  void fork(const TaskRecord& fork) {
    const auto pid = static_cast<std::int32_t>(fork.pid), tid = static_cast<std::int32_t>(fork.tid);
    const auto ppid = static_cast<std::int32_t>(fork.ppid);
    const auto ptid = static_cast<std::int32_t>(fork.ptid);
    Task* parent = &find_or_add(ppid, ptid);
    if (parent->pid != ppid) {
      tasks_.erase(ptid);
      parent = &find_or_add(ppid, ptid);
    }
    Task saved_parent = *parent;  // find_or_add below may move the table's entries
    tasks_.erase(tid);
    Task& child = find_or_add(pid, tid);
    if (saved_parent.comm_set) {
      child.comm = saved_parent.comm;
      child.comm_set = true;
    }
    child.ppid = saved_parent.tid;
  }

  // perf's tasks_print: tasks in its threads' order (tid modulo 256, then tid), each linked
  // under its parent; those without a parent are the roots.
  std::optional<std::string> render() {
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
        Task& task = tasks_.at(at);
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

 private:
  void render(std::int32_t tid, int level, std::string& out) const {
    const Task& task = tasks_.at(tid);
    fmt::format_to(std::back_inserter(out), "  {:>8} {:>8} {:>8} |{:{}}{}\n", task.pid, task.tid,
                   task.ppid, "", level, task.comm);
    for (std::int32_t child : task.children) render(child, level + 1, out);
  }

  std::map<std::int32_t, Task> tasks_;
};

}  // namespace

std::optional<PerfDataError> print_task_tree(const PerfDataReader& reader, std::FILE* out) {
  TaskTable tasks;
  Record decoded;
  auto error = reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    const std::uint32_t type = record.view.header.type;
    if (type != static_cast<std::uint32_t>(abi::RecordType::fork) &&
        type != static_cast<std::uint32_t>(abi::RecordType::comm)) {
      return;
    }
    DecodeError decode_error;
    if (!decode_record(record.view, reader.events()[record.event].config, decoded, decode_error)) {
      return;
    }
    if (type == static_cast<std::uint32_t>(abi::RecordType::fork)) {
      tasks.fork(std::get<TaskRecord>(decoded));
    } else if (type == static_cast<std::uint32_t>(abi::RecordType::comm)) {
      tasks.comm(std::get<CommRecord>(decoded));
    }
  });
  auto tree = tasks.render();
  if (!tree) {
    throw std::runtime_error(
        "the recording's tasks do not form a tree: a FORK names a parent that no record "
        "created (perf says: failed to process tasks)");
  }
  std::fputs(tree->c_str(), out);
  return error;
}

}  // namespace perfscope::cli
