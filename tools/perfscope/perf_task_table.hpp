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
  void fork(const TaskRecord& fork);
  // perf's tasks_print: tasks in its threads' order (tid modulo 256, then tid), each under its
  // parent; nullopt when a parent is missing.
  std::optional<std::string> render();

 private:
  void render(std::int32_t tid, int level, std::string& out) const;

  std::map<std::int32_t, PerfTask> tasks_;
};

}  // namespace perfscope::cli
