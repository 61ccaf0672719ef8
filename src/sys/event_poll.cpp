#include "perfscope/sys/event_poll.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace perfscope::sys {

EventPoll::EventPoll() noexcept {
  fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (fd_ < 0) error_ = errno;
}

EventPoll::~EventPoll() {
  if (fd_ >= 0) ::close(fd_);
}

int EventPoll::add(int fd, std::uint64_t token) noexcept {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = token;
  return ::epoll_ctl(fd_, EPOLL_CTL_ADD, fd, &event) < 0 ? -errno : 0;
}

int EventPoll::remove(int fd) noexcept {
  return ::epoll_ctl(fd_, EPOLL_CTL_DEL, fd, nullptr) < 0 ? -errno : 0;
}

int EventPoll::wait(std::span<PollEvent> events, int timeout_ms) noexcept {
  constexpr int batch = 64;
  epoll_event raw[batch];
  int capacity = static_cast<int>(events.size() < batch ? events.size() : batch);
  int count = ::epoll_wait(fd_, raw, capacity, timeout_ms);
  if (count < 0) return -errno;
  for (int i = 0; i < count; ++i) {
    events[static_cast<std::size_t>(i)] = {raw[i].data.u64, (raw[i].events & EPOLLIN) != 0,
                                           (raw[i].events & (EPOLLHUP | EPOLLERR)) != 0};
  }
  return count;
}

PollWaker::PollWaker() noexcept {
  fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd_ < 0) error_ = errno;
}

PollWaker::~PollWaker() {
  if (fd_ >= 0) ::close(fd_);
}

void PollWaker::wake() noexcept {
  std::uint64_t one = 1;
  // Fails only when the count would overflow: it is readable then anyway.
  if (fd_ >= 0 && ::write(fd_, &one, sizeof one) < 0) return;
}

void PollWaker::clear() noexcept {
  std::uint64_t count = 0;
  // EAGAIN when nothing woke it: nothing to clear.
  if (fd_ >= 0 && ::read(fd_, &count, sizeof count) < 0) return;
}

int route_overflow_signal(int fd, int signal, pid_t tid) noexcept {
  f_owner_ex owner{F_OWNER_TID, tid};
  if (::fcntl(fd, F_SETOWN_EX, &owner) < 0) return -errno;
  if (::fcntl(fd, F_SETSIG, signal) < 0) return -errno;
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return -errno;
  if (::fcntl(fd, F_SETFL, flags | O_ASYNC) < 0) return -errno;
  return 0;
}

pid_t current_thread_id() noexcept { return static_cast<pid_t>(::syscall(SYS_gettid)); }

}  // namespace perfscope::sys
