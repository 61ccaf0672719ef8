#include "perfscope/engine/target.hpp"

#include <fmt/format.h>

#include "perfscope/core/cpu_list.hpp"

namespace perfscope {

Target Target::calling_thread() { return Target{}; }

Target Target::thread(pid_t tid) {
  Target target;
  target.kind_ = Kind::thread;
  target.pid_ = tid;
  return target;
}

Target Target::process(pid_t pid) {
  Target target;
  target.kind_ = Kind::process;
  target.pid_ = pid;
  return target;
}

Target Target::cpus(std::vector<int> cpu_list) {
  Target target;
  target.kind_ = Kind::cpus;
  target.cpus_ = std::move(cpu_list);
  return target;
}

Target Target::cgroup(std::string path, std::vector<int> cpu_list) {
  Target target;
  target.kind_ = Kind::cgroup;
  target.cgroup_path_ = std::move(path);
  target.cpus_ = std::move(cpu_list);
  return target;
}

Target Target::command(std::vector<std::string> argv) {
  Target target;
  target.kind_ = Kind::command;
  target.argv_ = std::move(argv);
  return target;
}

Target& Target::bounded_by(std::vector<std::string> argv) {
  argv_ = std::move(argv);
  return *this;
}

sys::ExitWatch Target::exit_watch() const noexcept {
  if (kind_ != Kind::process && kind_ != Kind::thread) return sys::ExitWatch();
  return sys::ExitWatch(pid_, kind_ == Kind::thread);
}

std::string Target::describe() const {
  std::string command;
  for (const auto& arg : argv_) command += (command.empty() ? "" : " ") + arg;
  switch (kind_) {
    case Kind::calling_thread: return "this thread";
    case Kind::thread: return fmt::format("thread id '{}'", pid_);
    case Kind::process: return fmt::format("process id '{}'", pid_);
    case Kind::cpus:
      return cpus_.empty() ? "system wide" : fmt::format("CPU(s) {}", format_cpu_list(cpus_));
    case Kind::cgroup: return fmt::format("cgroup '{}'", cgroup_path_);
    case Kind::command: return fmt::format("'{}'", command);
  }
  return {};
}

}  // namespace perfscope
