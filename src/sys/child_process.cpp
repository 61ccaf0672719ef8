#include "perfscope/sys/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace perfscope::sys {

GatedChild::GatedChild(const std::vector<std::string>& argv) {
  if (argv.empty()) {
    error_ = EINVAL;
    return;
  }
  int gate[2];
  int exec_error[2];
  if (::pipe2(gate, O_CLOEXEC) < 0) {
    error_ = errno;
    return;
  }
  if (::pipe2(exec_error, O_CLOEXEC) < 0) {
    error_ = errno;
    ::close(gate[0]);
    ::close(gate[1]);
    return;
  }
  // argv is prepared before fork: the child must not allocate.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ < 0) {
    error_ = errno;
    for (int fd : {gate[0], gate[1], exec_error[0], exec_error[1]}) ::close(fd);
    return;
  }
  if (pid_ == 0) {
    ::close(gate[1]);
    ::close(exec_error[0]);
    char byte;
    ssize_t n;
    do {
      n = ::read(gate[0], &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(126);  // parent gave up: do not run the command
    ::execvp(args[0], args.data());
    int saved = errno;
    [[maybe_unused]] ssize_t ignored = ::write(exec_error[1], &saved, sizeof saved);
    ::_exit(127);
  }
  ::close(gate[0]);
  ::close(exec_error[1]);
  gate_fd_ = gate[1];
  exec_error_fd_ = exec_error[0];
}

GatedChild::~GatedChild() {
  if (pid_ > 0 && gate_fd_ >= 0) abandon();
  if (pid_ > 0 && !waited_) {
    // Never waited for: the session ends on an error (a full disk, a failed open). Like perf,
    // end the command rather than block here, silently, until it finishes on its own.
    ::kill(pid_, SIGTERM);
    wait();
  }
  if (gate_fd_ >= 0) ::close(gate_fd_);
  if (exec_error_fd_ >= 0) ::close(exec_error_fd_);
}

int GatedChild::release() noexcept {
  if (gate_fd_ < 0) return EBADF;
  char go = 'x';
  ssize_t n;
  do {
    n = ::write(gate_fd_, &go, 1);
  } while (n < 0 && errno == EINTR);
  ::close(gate_fd_);
  gate_fd_ = -1;
  int exec_errno = 0;
  do {
    n = ::read(exec_error_fd_, &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  ::close(exec_error_fd_);
  exec_error_fd_ = -1;
  return n == sizeof exec_errno ? exec_errno : 0;
}

void GatedChild::abandon() noexcept {
  if (gate_fd_ >= 0) {
    ::close(gate_fd_);  // EOF at the gate: the child exits without exec
    gate_fd_ = -1;
  }
}

int GatedChild::wait() noexcept {
  if (pid_ <= 0) return -ECHILD;
  int status = 0;
  rusage usage{};
  pid_t result;
  do {
    result = ::wait4(pid_, &status, 0, &usage);
  } while (result < 0 && errno == EINTR);
  if (result < 0) return -errno;
  waited_ = true;
  user_seconds_ = static_cast<double>(usage.ru_utime.tv_sec) + usage.ru_utime.tv_usec / 1e6;
  system_seconds_ = static_cast<double>(usage.ru_stime.tv_sec) + usage.ru_stime.tv_usec / 1e6;
  return status;
}

int exit_status_from_wait(int wait_status) noexcept {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace perfscope::sys

#include <poll.h>
#include <sys/syscall.h>

namespace perfscope::sys {

int open_pidfd(pid_t pid, bool thread) noexcept {
  constexpr unsigned pidfd_thread = O_EXCL;  // PIDFD_THREAD in <linux/pidfd.h>
  long fd = ::syscall(SYS_pidfd_open, pid, thread ? pidfd_thread : 0u);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

int wait_readable(int fd, int timeout_ms) noexcept {
  pollfd entry{fd, POLLIN, 0};
  int result = ::poll(&entry, fd >= 0 ? 1 : 0, timeout_ms);
  if (result < 0) return -errno;
  return result > 0 ? 1 : 0;
}

int divert_stdout_to_stderr() noexcept {
  int saved = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
  if (saved < 0) return -errno;
  if (::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    int errnum = errno;
    ::close(saved);
    return -errnum;
  }
  return saved;
}

int restore_stdout(int saved) noexcept {
  int result = ::dup2(saved, STDOUT_FILENO) < 0 ? -errno : 0;
  ::close(saved);
  return result;
}

}  // namespace perfscope::sys
