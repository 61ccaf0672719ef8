#include "support/background_command.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "perfscope/sys/child_process.hpp"

namespace perfscope::testing {

namespace {

// An unnamed file the child's output goes to: reading it back never blocks the child.
int anonymous_file() {
  char name[] = "/tmp/perfscope-test-output-XXXXXX";
  int fd = ::mkostemp(name, O_CLOEXEC);
  if (fd >= 0) ::unlink(name);
  return fd;
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buffer, sizeof buffer, at);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    at += n;
  }
  return text;
}

void sleep_ms(int ms) {
  timespec pause{ms / 1000, (ms % 1000) * 1000000L};
  while (::nanosleep(&pause, &pause) < 0 && errno == EINTR) {
  }
}

}  // namespace

BackgroundCommand::BackgroundCommand(const std::vector<std::string>& argv, bool stdin_pipe) {
  out_fd_ = anonymous_file();
  err_fd_ = anonymous_file();
  int input[2] = {-1, -1};
  if (stdin_pipe && ::pipe2(input, O_CLOEXEC) < 0) return;
  if (out_fd_ < 0 || err_fd_ < 0 || argv.empty()) return;
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(stdin_pipe ? input[0] : null_fd, 0);
    ::dup2(out_fd_, 1);
    ::dup2(err_fd_, 2);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  if (stdin_pipe) {
    ::close(input[0]);
    stdin_fd_ = input[1];
  }
}

BackgroundCommand::~BackgroundCommand() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  for (int fd : {out_fd_, err_fd_, stdin_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

void BackgroundCommand::signal(int signal_number) const {
  if (pid_ > 0 && !reaped_) ::kill(pid_, signal_number);
}

void BackgroundCommand::write_stdin(std::string_view bytes) {
  if (stdin_fd_ < 0) return;
  ssize_t written = ::write(stdin_fd_, bytes.data(), bytes.size());
  (void)written;
}

void BackgroundCommand::close_stdin() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
}

std::string BackgroundCommand::out() const { return read_all(out_fd_); }
std::string BackgroundCommand::err() const { return read_all(err_fd_); }

bool BackgroundCommand::running() {
  if (pid_ <= 0 || reaped_) return false;
  int status = 0;
  pid_t result = ::waitpid(pid_, &status, WNOHANG);
  if (result == pid_) {
    reaped_ = true;
    wait_status_ = status;
    return false;
  }
  return true;
}

bool BackgroundCommand::wait_for_text(std::string (BackgroundCommand::*stream)() const,
                                      std::string_view text, int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms; waited += 5) {
    if ((this->*stream)().find(text) != std::string::npos) return true;
    if (!running()) return (this->*stream)().find(text) != std::string::npos;
    sleep_ms(5);
  }
  return false;
}

bool BackgroundCommand::wait_for_output(std::string_view text, int timeout_ms) {
  return wait_for_text(&BackgroundCommand::out, text, timeout_ms);
}

bool BackgroundCommand::wait_for_error(std::string_view text, int timeout_ms) {
  return wait_for_text(&BackgroundCommand::err, text, timeout_ms);
}

CommandResult run_enabled_by_control(BackgroundCommand& command, const std::string& control,
                                     const std::string& ack) {
  CommandResult failed;
  if (!command.wait_for_error("Events disabled\n", 20000)) {
    failed.exit_status = -1;
    failed.err = "no 'Events disabled' line: " + command.err();
    return failed;
  }
  ::usleep(300000);  // the workload's first phase, done at once
  std::string pinged = control_command(control, ack, "ping");
  std::string enabled = control_command(control, ack, "enable");
  CommandResult result = command.wait(30000);
  if (pinged != "ack\n" || enabled != "ack\n") {
    result.exit_status = -1;
    result.err +=
        "\nthe control FIFO answered '" + pinged + "' to ping, '" + enabled + "' to enable";
  }
  return result;
}

CommandResult BackgroundCommand::wait(int timeout_ms) {
  CommandResult result;
  if (pid_ <= 0) return result;
  for (int waited = 0; running(); waited += 5) {
    if (waited >= timeout_ms) {
      timed_out_ = true;
      ::kill(pid_, SIGKILL);
    }
    sleep_ms(5);
  }
  result.exit_status = sys::exit_status_from_wait(wait_status_);
  result.signal = WIFSIGNALED(wait_status_) ? WTERMSIG(wait_status_) : 0;
  result.out = out();
  result.err = err();
  return result;
}

}  // namespace perfscope::testing
