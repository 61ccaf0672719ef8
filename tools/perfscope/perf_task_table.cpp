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

void PerfTaskTable::fork(const TaskRecord& fork, bool clone_maps) {
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
  // A thread shares its process's maps; a new process starts from a copy of its parent's.
  if (pid != ppid) {
    auto parent_maps = maps_.find(ppid);
    if (clone_maps && parent_maps != maps_.end()) {
      maps_[pid] = parent_maps->second;
    } else {
      maps_.erase(pid);
    }
  }
}

void PerfTaskTable::mmap(const MmapRecord& mmap, bool data) {
  PerfTaskMap map{mmap.addr, mmap.addr + mmap.len, mmap.pgoff, data ? 0u : 4u /* PROT_EXEC */, 0,
                  0};
  add_map(static_cast<std::int32_t>(mmap.pid), static_cast<std::int32_t>(mmap.tid), map,
          std::string(mmap.filename), PerfFileId{});
}

void PerfTaskTable::mmap(const Mmap2Record& mmap) {
  PerfTaskMap map{mmap.addr, mmap.addr + mmap.len, mmap.pgoff, mmap.prot, mmap.flags, 0};
  PerfFileId id;
  if (!mmap.has_build_id) id = {mmap.maj, mmap.min, mmap.ino, mmap.ino_generation};
  add_map(static_cast<std::int32_t>(mmap.pid), static_cast<std::int32_t>(mmap.tid), map,
          std::string(mmap.filename), id);
}

std::size_t PerfTaskTable::find_or_add_file(const std::string& name, const PerfFileId& id) {
  for (std::size_t i = 0; i < files_.size(); ++i) {
    auto& [file_name, file_id] = files_[i];
    if (file_name != name || !(id.empty() || file_id.empty() || id == file_id)) continue;
    if (file_id.empty()) file_id = id;
    return i;
  }
  files_.emplace_back(name, id);
  return files_.size() - 1;
}

void PerfTaskTable::add_map(std::int32_t pid, std::int32_t tid, PerfTaskMap map, std::string name,
                            const PerfFileId& id) {
  if (pid == -1) return;  // the kernel's and its modules'
  find_or_add(pid, tid);
  // perf's map__new: executable anonymous memory is JIT code, named by its perf map file.
  constexpr std::uint32_t prot_exec = 4;
  bool anonymous = name.starts_with("//anon") || name.starts_with("/dev/zero") ||
                   name.starts_with("/anon_hugepage");
  bool no_file = name.starts_with("[stack") || name.starts_with("/SYSV") || name == "[heap]";
  if ((anonymous || no_file) && (map.prot & prot_exec) != 0) {
    name = fmt::format("/tmp/perf-{}.map", pid);
  }
  // The kernel's vDSO is no file: perf keeps no offset for it (old kernels gave its address).
  if (name == "[vdso]") map.pgoff = 0;
  map.file = find_or_add_file(name, id);
  auto& maps = maps_[pid];
  // maps__fixup_overlappings: what the new mapping covers of the others goes; their parts
  // before and after it stay, the part after at its own file offset.
  std::vector<PerfTaskMap> kept;
  for (auto it = maps.begin(); it != maps.end();) {
    PerfTaskMap& old = it->second;
    if (old.end <= map.start || old.start >= map.end) {
      ++it;
      continue;
    }
    if (old.start < map.start) {
      PerfTaskMap before = old;
      before.end = map.start;
      kept.push_back(before);
    }
    if (old.end > map.end) {
      PerfTaskMap after = old;
      after.pgoff += map.end - old.start;
      after.start = map.end;
      kept.push_back(after);
    }
    it = maps.erase(it);
  }
  for (PerfTaskMap& part : kept) maps.emplace(part.start, std::move(part));
  maps[map.start] = std::move(map);
}

std::optional<std::string> PerfTaskTable::render(bool maps) {
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
  for (std::int32_t root : roots) render(root, 0, maps, out);
  return out;
}

void PerfTaskTable::render(std::int32_t tid, int level, bool maps, std::string& out) const {
  const PerfTask& task = tasks_.at(tid);
  std::size_t line_start = out.size();
  fmt::format_to(std::back_inserter(out), "  {:>8} {:>8} {:>8} |{:{}}", task.pid, task.tid,
                 task.ppid, "", level);
  // perf's map__fprintf_task: under the comm's column.
  const std::size_t indent = out.size() - line_start;
  out += task.comm + "\n";
  auto process_maps = maps ? maps_.find(task.pid) : maps_.end();
  if (process_maps != maps_.end()) {
    constexpr std::uint32_t prot_read = 1, prot_write = 2, prot_exec = 4, map_shared = 1;
    for (const auto& [start, map] : process_maps->second) {
      fmt::format_to(std::back_inserter(out), "{:{}}  {:x}-{:x} {}{}{}{} {:08x} {} {}\n", "",
                     indent, map.start, map.end, (map.prot & prot_read) ? 'r' : '-',
                     (map.prot & prot_write) ? 'w' : '-', (map.prot & prot_exec) ? 'x' : '-',
                     (map.flags & map_shared) ? 's' : 'p', map.pgoff, files_[map.file].second.ino,
                     files_[map.file].first);
    }
  }
  for (std::int32_t child : task.children) render(child, level + 1, maps, out);
}

}  // namespace perfscope::cli
