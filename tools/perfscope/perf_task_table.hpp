// The tasks of a recording as perf's machine keeps them while it reads the records: each task
// created by the first record that names it and called ":TID" until a COMM (or its parent's
// comm at its fork), its parent the task it forked from; the idle task "swapper" there from the
// start. For perf report --tasks and the "... thread:" lines of perf's raw dump (-D).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/core/records.hpp"

namespace perfscope::cli {

// A mapping as perf's thread maps keep it: perf report --mmaps's line of it. Its file is one of
// the table's files (perf's dsos), whose inode it prints.
struct PerfTaskMap {
  std::uint64_t start = 0, end = 0, pgoff = 0;
  std::uint32_t prot = 0, flags = 0;
  std::size_t file = 0;
};

// perf's dso_id: a file's device and inode, all zero when the record did not say (MMAP, or
// MMAP2 with a build id).
struct PerfFileId {
  std::uint32_t maj = 0, min = 0;
  std::uint64_t ino = 0, ino_generation = 0;
  bool empty() const { return maj == 0 && min == 0 && ino == 0 && ino_generation == 0; }
  bool operator==(const PerfFileId&) const = default;
};

struct PerfTask {
  std::int32_t pid = -1, tid = 0, ppid = -1;
  std::string comm;
  bool comm_set = false;
  bool listed = false;  // in the roots' list or a parent's children (render)
  std::vector<std::int32_t> children;
};

class PerfTaskTable {
 public:
  PerfTaskTable();

  // machine__findnew_thread: a task of another process brings its leader with it.
  PerfTask& find_or_add(std::int32_t pid, std::int32_t tid);
  void comm(const CommRecord& comm);
  // machine__process_fork_event: a task id seen again is a new task; a parent of another
  // process than the record says is replaced; the child takes its parent's comm.
  // `clone_maps`: a new process's maps are a copy of its parent's (not after a vfork that
  // execs: PERF_RECORD_MISC_FORK_EXEC).
  void fork(const TaskRecord& fork, bool clone_maps = true);
  // machine__process_mmap(2)_event: the task, and the mapping in its process's maps, over the
  // parts of the mappings it overlaps (maps__fixup_overlappings). The kernel's (pid -1) are not
  // a task's. MMAP records (without prot) map code unless `data`.
  void mmap(const MmapRecord& mmap, bool data);
  void mmap(const Mmap2Record& mmap);
  // perf's tasks_print: tasks in its threads' order (tid modulo 256, then tid), each under its
  // parent, with its process's maps under it when `maps` (perf report --mmaps); nullopt when a
  // parent is missing.
  std::optional<std::string> render(bool maps = false);

 private:
  void add_map(std::int32_t pid, std::int32_t tid, PerfTaskMap map, std::string name,
               const PerfFileId& id);
  // __dsos__findnew_id: the file of that name whose id matches (an empty id matches any), its
  // id filled in when it had none; else a new one.
  std::size_t find_or_add_file(const std::string& name, const PerfFileId& id);
  void render(std::int32_t tid, int level, bool maps, std::string& out) const;

  std::map<std::int32_t, PerfTask> tasks_;
  std::map<std::int32_t, std::map<std::uint64_t, PerfTaskMap>> maps_;  // by pid, then start
  std::vector<std::pair<std::string, PerfFileId>> files_;
};

}  // namespace perfscope::cli
