#include "perfscope/sys/exit_watch.hpp"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "perfscope/sys/child_process.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope::sys {

namespace {

// How often /proc is looked at without a pidfd: an exit is seen this late at most.
constexpr int proc_check_ms = 100;

}  // namespace

ExitWatch::ExitWatch(pid_t pid, bool thread) noexcept : pid_(pid) {
  int fd = open_pidfd(pid, thread);
  fd_ = fd >= 0 ? fd : -1;
}

ExitWatch::~ExitWatch() {
  if (fd_ >= 0) ::close(fd_);
}

ExitWatch::ExitWatch(ExitWatch&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), fd_(std::exchange(other.fd_, -1)) {}

ExitWatch& ExitWatch::operator=(ExitWatch&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    pid_ = std::exchange(other.pid_, -1);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

bool ExitWatch::exited() const noexcept {
  if (!watching()) return false;
  if (fd_ >= 0) return wait_readable(fd_, 0) == 1;
  try {
    return !process_exists(pid_);
  } catch (...) {
    return false;  // no memory for the path: looked at again next time
  }
}

int ExitWatch::wait(int timeout_ms) const noexcept {
  if (fd_ >= 0 || !watching()) return wait_readable(fd_, timeout_ms);
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (exited()) return 1;
    int slice = proc_check_ms;
    if (timeout_ms >= 0) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0) return 0;
      slice = static_cast<int>(std::min<long long>(left, proc_check_ms));
    }
    int slept = wait_readable(-1, slice);
    if (slept < 0) return slept;
  }
}

}  // namespace perfscope::sys
