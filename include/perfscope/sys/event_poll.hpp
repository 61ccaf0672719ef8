// epoll(7) over perf fds (readable when a buffer crosses its wakeup threshold, hang-up when the
// monitored task exits), and fcntl(2) routing of overflow signals.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>

#include "perfscope/export.hpp"

namespace perfscope::sys {

struct PollEvent {
  std::uint64_t token = 0;  // what the caller registered with the fd
  bool readable = false;
  bool hang_up = false;  // POLLHUP: the event's task exited (per-task events)
};

class PERFSCOPE_EXPORT EventPoll {
 public:
  EventPoll() noexcept;
  ~EventPoll();
  EventPoll(const EventPoll&) = delete;
  EventPoll& operator=(const EventPoll&) = delete;

  int error() const noexcept { return error_; }  // errno of epoll_create1, or 0
  // Registers fd for readability; returns 0 or -errno.
  int add(int fd, std::uint64_t token) noexcept;
  int remove(int fd) noexcept;
  // Waits up to timeout_ms (-1: forever). Returns the number of events, or -errno (-EINTR).
  int wait(std::span<PollEvent> events, int timeout_ms) noexcept;

 private:
  int fd_ = -1;
  int error_ = 0;
};

// An eventfd: another thread makes it readable to end an EventPoll::wait() early (a drain
// thread told to stop). Level-triggered until clear(): a wake before the wait is not lost.
class PERFSCOPE_EXPORT PollWaker {
 public:
  PollWaker() noexcept;
  ~PollWaker();
  PollWaker(const PollWaker&) = delete;
  PollWaker& operator=(const PollWaker&) = delete;

  int error() const noexcept { return error_; }  // errno of eventfd, or 0
  int fd() const noexcept { return fd_; }
  void wake() noexcept;
  void clear() noexcept;

 private:
  int fd_ = -1;
  int error_ = 0;
};

// Sends `signal` to thread `tid` on every overflow of the event on `fd` (O_ASYNC, F_SETSIG,
// F_SETOWN_EX with F_OWNER_TID). Returns 0 or -errno.
PERFSCOPE_EXPORT int route_overflow_signal(int fd, int signal, pid_t tid) noexcept;

// The calling thread's id (gettid).
PERFSCOPE_EXPORT pid_t current_thread_id() noexcept;

}  // namespace perfscope::sys
