// ExitWatch: whether a process (or thread) that perfscope attached to, not its child, has exited.
// Its pidfd when the kernel gives one: readable at the exit, zombie or not. Otherwise /proc, where
// the task stays until it is reaped: pidfd_open fails once the target is already reaped (it may
// exit and be reaped by its parent between the attach and the watch), and kernels before 5.3
// (or 6.9, for a thread) have no pidfd of the kind.
#pragma once

#include <sys/types.h>

#include "perfscope/export.hpp"

namespace perfscope::sys {

class PERFSCOPE_EXPORT ExitWatch {
 public:
  ExitWatch() = default;  // watches nothing: never exits
  ExitWatch(pid_t pid, bool thread) noexcept;
  ~ExitWatch();
  ExitWatch(ExitWatch&& other) noexcept;
  ExitWatch& operator=(ExitWatch&& other) noexcept;
  ExitWatch(const ExitWatch&) = delete;
  ExitWatch& operator=(const ExitWatch&) = delete;

  bool watching() const noexcept { return pid_ > 0; }
  // Whether the target has exited, now (no wait).
  bool exited() const noexcept;
  // Waits up to timeout_ms (-1: until the exit) for the target's exit. Returns 1 once it has
  // exited, 0 at the timeout, -EINTR when a signal came first (or another -errno of poll).
  int wait(int timeout_ms) const noexcept;

 private:
  pid_t pid_ = -1;
  int fd_ = -1;  // the pidfd, or -1: /proc is read instead
};

}  // namespace perfscope::sys
