// The (pid, cpu, flags) triples perf_event_open is called with for a Target: one per thread for
// task targets (or one per thread and CPU, which sampling with inherit needs), one per CPU for
// CPU-wide targets, one per CPU with the cgroup's fd for cgroup targets.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/engine/target.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

struct TargetUnit {
  pid_t pid;
  int cpu;
  unsigned long flags;  // abi::open_flag::pid_cgroup for cgroup units
};

// Every event on every unit takes a file descriptor: raises the soft RLIMIT_NOFILE (up to the hard
// limit) when `descriptors` would not fit under it, as perf does. Returns the notice to give the
// user when the limit was changed; a hard limit too low still fails the opens with EMFILE.
PERFSCOPE_EXPORT std::optional<std::string> raise_open_files_for(std::size_t descriptors);

class PERFSCOPE_EXPORT TargetUnits {
 public:
  TargetUnits() = default;
  ~TargetUnits();
  TargetUnits(const TargetUnits&) = delete;
  TargetUnits& operator=(const TargetUnits&) = delete;

  // Resolves `target` (command_pid: the launched command's pid for Target::command). With
  // `tasks_per_cpu`, task targets get one unit per thread and online CPU. Throws perfscope::Error
  // when the process or cgroup does not exist.
  void resolve(const Target& target, pid_t command_pid, bool tasks_per_cpu);

  const std::vector<TargetUnit>& units() const noexcept { return units_; }

 private:
  std::vector<TargetUnit> units_;
  int cgroup_fd_ = -1;
};

}  // namespace perfscope
