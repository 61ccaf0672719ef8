// What to count: the calling thread, a thread, a process with all its threads, CPUs
// (system-wide), a cgroup, or a launched command — possibly a CPU-wide target bounded by the
// lifetime of a command (`stat -a -- sleep 1`).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "perfscope/export.hpp"
#include "perfscope/sys/exit_watch.hpp"

namespace perfscope {

class PERFSCOPE_EXPORT Target {
 public:
  enum class Kind { calling_thread, thread, process, cpus, cgroup, command };

  static Target calling_thread();
  static Target thread(pid_t tid);
  // Every thread the process has now, and (with inherit) every thread and child created later.
  static Target process(pid_t pid);
  // Every process on these CPUs; empty means all online CPUs.
  static Target cpus(std::vector<int> cpu_list = {});
  // Processes of a cgroup v2 directory (absolute, or relative to the cgroup2 mount), per CPU.
  static Target cgroup(std::string path, std::vector<int> cpu_list = {});
  // A command started by the session: counted from its exec to its exit.
  static Target command(std::vector<std::string> argv);

  // Bounds a cpus/cgroup/process/thread target by a command's run: the measurement ends when the
  // command exits (perf's `stat -a -- sleep 1`, `stat -p PID -- sleep 1`). (For a command target
  // the command is the target itself.)
  Target& bounded_by(std::vector<std::string> argv);

  Kind kind() const noexcept { return kind_; }
  pid_t pid() const noexcept { return pid_; }
  const std::vector<int>& cpu_list() const noexcept { return cpus_; }
  const std::string& cgroup_path() const noexcept { return cgroup_path_; }
  const std::vector<std::string>& argv() const noexcept { return argv_; }
  bool has_command() const noexcept { return !argv_.empty(); }
  // "process 1234", "CPUs 0-3", "'sleep 1'", for headers and messages.
  std::string describe() const;
  // A watch of an attached process's or thread's exit (which ends a measurement of it); for any
  // other target a watch of nothing. Made once the events are attached.
  sys::ExitWatch exit_watch() const noexcept;

 private:
  Kind kind_ = Kind::calling_thread;
  pid_t pid_ = 0;
  std::vector<int> cpus_;
  std::string cgroup_path_;
  std::vector<std::string> argv_;
};

}  // namespace perfscope
