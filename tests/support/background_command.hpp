// A command run in the background while a test does something to it (signals, a second tool
// attaching), with its output captured in files (a full pipe would stall it) and a deadline on
// waiting for it (a hang fails the test instead of stalling the suite).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "support/test_support.hpp"

namespace perfscope::testing {

class BackgroundCommand {
 public:
  // Starts argv (no shell). `stdin_pipe`: the child's stdin is a pipe the test writes with
  // write_stdin(); otherwise /dev/null.
  explicit BackgroundCommand(const std::vector<std::string>& argv, bool stdin_pipe = false);
  // Kills (SIGKILL) and reaps a command still running.
  ~BackgroundCommand();
  BackgroundCommand(const BackgroundCommand&) = delete;
  BackgroundCommand& operator=(const BackgroundCommand&) = delete;

  pid_t pid() const noexcept { return pid_; }
  bool started() const noexcept { return pid_ > 0; }
  void signal(int signal_number) const;
  void write_stdin(std::string_view bytes);
  void close_stdin();
  // The output so far.
  std::string out() const;
  std::string err() const;
  // Waits until stdout contains `text`; false after timeout_ms (or when the command exited first).
  bool wait_for_output(std::string_view text, int timeout_ms);
  // The same for stderr.
  bool wait_for_error(std::string_view text, int timeout_ms);
  // True while the command has not exited (reaps it when it has).
  bool running();
  // Waits up to timeout_ms for the command to exit. On timeout it is killed and `timed_out` is
  // set; the result holds the output either way.
  CommandResult wait(int timeout_ms);
  bool timed_out() const noexcept { return timed_out_; }

 private:
  bool wait_for_text(std::string (BackgroundCommand::*stream)() const, std::string_view text,
                     int timeout_ms);
  pid_t pid_ = -1;
  int out_fd_ = -1;  // files the child writes, read back here
  int err_fd_ = -1;
  int stdin_fd_ = -1;
  bool reaped_ = false;
  bool timed_out_ = false;
  int wait_status_ = 0;
};

// perf's --control with -D -1, for a command started with --control fifo:CONTROL,ACK on
// work_helper getpid-delay-getpid (calls, a pause, calls): waits for its "Events disabled", lets
// the first calls pass, sends "ping" and "enable" (each must be acked), and waits for its end.
// A missing line or ack gives exit_status -1 with the reason in err.
CommandResult run_enabled_by_control(BackgroundCommand& command, const std::string& control,
                                     const std::string& ack);

}  // namespace perfscope::testing
