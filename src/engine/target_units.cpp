#include "perfscope/engine/target_units.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "perfscope/sys/perf_syscalls.hpp"

namespace perfscope {

TargetUnits::~TargetUnits() { sys::close_fd(cgroup_fd_); }

std::optional<std::string> raise_open_files_for(std::size_t descriptors) {
  // Room for what else the process has open (standard streams, the output file, epoll).
  std::uint64_t wanted = descriptors + 16;
  auto before = sys::open_files_limit();
  if (before.soft >= wanted) return std::nullopt;
  sys::raise_open_files_limit(wanted);
  auto after = sys::open_files_limit();
  if (after.soft == before.soft) return std::nullopt;
  return fmt::format(
      "raised the open-files soft limit (RLIMIT_NOFILE) from {} to {}: the events need about {} "
      "file descriptors{}",
      before.soft, after.soft, descriptors,
      after.soft < wanted ? fmt::format(" (the hard limit is {})", after.hard) : std::string());
}

namespace {

int open_cgroup(const std::string& path) {
  // An absolute directory is taken as it is; anything else is relative to the cgroup2 mount.
  int fd = !path.empty() && path[0] == '/' ? sys::open_directory(path) : -ENOENT;
  if (fd >= 0) return fd;
  auto root = sys::cgroup2_root();
  if (!root) {
    throw Error(ENOENT, "no cgroup v2 hierarchy is mounted",
                "mount one (mount -t cgroup2 none /sys/fs/cgroup) to measure per cgroup.");
  }
  auto first = path.find_first_not_of('/');
  std::string under_root = *root + "/" + (first == std::string::npos ? "" : path.substr(first));
  fd = sys::open_directory(under_root);
  if (fd < 0) {
    throw Error(
        -fd, fmt::format("cannot open cgroup '{}' ({}): {}", path, under_root, std::strerror(-fd)),
        fmt::format("give a cgroup v2 directory, absolute or relative to {}.", *root));
  }
  return fd;
}

}  // namespace

void TargetUnits::resolve(const Target& target, pid_t command_pid, bool tasks_per_cpu) {
  units_.clear();
  auto cpus_or_online = [&target] {
    return target.cpu_list().empty() ? online_cpus() : target.cpu_list();
  };
  std::vector<pid_t> tasks;
  switch (target.kind()) {
    case Target::Kind::calling_thread: tasks.push_back(0); break;
    case Target::Kind::thread: tasks.push_back(target.pid()); break;
    case Target::Kind::command: tasks.push_back(command_pid); break;
    case Target::Kind::process:
      tasks = sys::list_threads(target.pid());
      if (tasks.empty()) {
        throw Error(ESRCH, fmt::format("process {} does not exist", target.pid()),
                    "check the pid (it may have exited); `ps -e` lists running processes.");
      }
      break;
    case Target::Kind::cpus:
      for (int cpu : cpus_or_online()) units_.push_back({-1, cpu, 0});
      return;
    case Target::Kind::cgroup:
      if (cgroup_fd_ < 0) cgroup_fd_ = open_cgroup(target.cgroup_path());
      for (int cpu : cpus_or_online()) {
        units_.push_back({cgroup_fd_, cpu, abi::open_flag::pid_cgroup});
      }
      return;
  }
  if (!tasks_per_cpu) {
    for (pid_t task : tasks) units_.push_back({task, -1, 0});
    return;
  }
  for (int cpu : online_cpus()) {
    for (pid_t task : tasks) units_.push_back({task, cpu, 0});
  }
}

}  // namespace perfscope
