// A child process forked and held at a gate before exec, so that counters can be attached to it
// first (with enable_on_exec, only the command itself is counted).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "perfscope/export.hpp"

namespace perfscope::sys {

class PERFSCOPE_EXPORT GatedChild {
 public:
  // Forks; the child waits until release(). Returns with pid() == -1 and error() set on failure.
  explicit GatedChild(const std::vector<std::string>& argv);
  ~GatedChild();
  GatedChild(const GatedChild&) = delete;
  GatedChild& operator=(const GatedChild&) = delete;

  pid_t pid() const noexcept { return pid_; }
  int error() const noexcept { return error_; }

  // Lets the child exec. Returns 0, or the errno of a failed exec (the child then exits 127).
  int release() noexcept;
  // Kills a child that will not be released (setup failed).
  void abandon() noexcept;
  // waitpid, retried on EINTR. Returns the raw wait status, or -errno.
  int wait() noexcept;
  // Total CPU time the child used (user, system), valid after wait().
  double user_seconds() const noexcept { return user_seconds_; }
  double system_seconds() const noexcept { return system_seconds_; }

 private:
  pid_t pid_ = -1;
  int error_ = 0;
  int gate_fd_ = -1;        // parent's write end: closing it releases the child
  int exec_error_fd_ = -1;  // parent's read end: the child writes errno here if exec fails
  bool waited_ = false;
  double user_seconds_ = 0;
  double system_seconds_ = 0;
};

// Shell-style exit status from a wait status: the exit code, or 128 + signal.
PERFSCOPE_EXPORT int exit_status_from_wait(int wait_status) noexcept;

}  // namespace perfscope::sys

namespace perfscope::sys {
// pidfd_open(2): an fd that becomes readable when the process exits; -errno on failure.
// `thread`: `pid` is a thread id and the fd becomes readable when that thread exits
// (PIDFD_THREAD, Linux 6.9; EINVAL before).
PERFSCOPE_EXPORT int open_pidfd(pid_t pid, bool thread = false) noexcept;
// poll(2) on one fd (or none, when fd < 0: a plain sleep that a signal ends early).
// Returns 1 when readable, 0 on timeout, -errno (-EINTR on a signal).
PERFSCOPE_EXPORT int wait_readable(int fd, int timeout_ms) noexcept;
// Points this process's standard output at its standard error, so that a child forked meanwhile
// writes its output there: a recorder streaming perf.data to its stdout (record -o -) keeps the
// stream clean, as perf does. Returns the saved standard output (for restore_stdout) or -errno.
PERFSCOPE_EXPORT int divert_stdout_to_stderr() noexcept;
// Puts back the standard output divert_stdout_to_stderr saved (and closes the saved fd).
PERFSCOPE_EXPORT int restore_stdout(int saved) noexcept;
}  // namespace perfscope::sys
