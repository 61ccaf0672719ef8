#include "control_channel.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace perfscope::cli {

namespace {

int descriptor(const std::string& text) {
  int fd = -1;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), fd);
  if (error != std::errc{} || end != text.data() + text.size() || fd < 0 ||
      ::fcntl(fd, F_GETFD) < 0) {
    throw CLI::ValidationError(
        "--control", fmt::format("'{}' is not an open file descriptor of this process", text));
  }
  return fd;
}

int open_fifo(const std::string& path, int flags) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) {
    throw std::runtime_error(fmt::format(
        "--control: {} is not a FIFO (make one with mkfifo {}, as perf's --control asks)", path,
        path));
  }
  // Read-write: opening never waits for the other end, and a writer that closes leaves no
  // end of file behind for every later poll.
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error(
        fmt::format("--control: cannot open {}: {}", path, std::strerror(errno)));
  }
  return fd;
}

}  // namespace

std::string control_spec_error(const std::string& spec) {
  auto colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  bool named = colon != std::string::npos && colon + 1 < spec.size() && spec[colon + 1] != ',';
  if ((kind == "fifo" || kind == "fd") && named) return "";
  return fmt::format(
      "'{}': give fifo:CTL[,ACK] (FIFO paths) or fd:CTL[,ACK] (open descriptors), as perf", spec);
}

ControlChannel::ControlChannel(const std::string& spec, ControlHandlers handlers)
    : handlers_(std::move(handlers)) {
  if (std::string error = control_spec_error(spec); !error.empty()) {
    throw CLI::ValidationError("--control", error);
  }
  auto colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  std::string rest = spec.substr(colon + 1);
  std::string control = rest.substr(0, rest.find(','));
  std::string ack = rest.find(',') == std::string::npos ? "" : rest.substr(rest.find(',') + 1);
  if (kind == "fd") {
    control_fd_ = descriptor(control);
    if (!ack.empty()) ack_fd_ = descriptor(ack);
  } else {
    owns_fds_ = true;
    control_fd_ = open_fifo(control, O_RDWR | O_NONBLOCK);
    if (!ack.empty()) {
      try {
        ack_fd_ = open_fifo(ack, O_RDWR);
      } catch (...) {
        ::close(control_fd_);
        throw;
      }
    }
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
}

ControlChannel::~ControlChannel() {
  if (reader_.joinable()) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto written = ::write(wake_fd_, &one, sizeof one);
    reader_.join();
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (owns_fds_) {
    ::close(control_fd_);
    if (ack_fd_ >= 0) ::close(ack_fd_);
  }
}

void ControlChannel::start() {
  reader_ = std::thread([this] { serve(); });
}

void ControlChannel::serve() {
  std::string pending;
  for (;;) {
    pollfd fds[2] = {{control_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int ready = ::poll(fds, 2, -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0 || (fds[1].revents & POLLIN) != 0) return;
    char bytes[256];
    ssize_t got = ::read(control_fd_, bytes, sizeof bytes);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got <= 0) return;  // a descriptor's writer closed it: no more commands
    pending.append(bytes, static_cast<std::size_t>(got));
    for (auto end = pending.find('\n'); end != std::string::npos; end = pending.find('\n')) {
      std::string command = pending.substr(0, end);
      pending.erase(0, end + 1);
      while (!command.empty() && (command.back() == '\r' || command.back() == ' ')) {
        command.pop_back();
      }
      run(command);
    }
  }
}

void ControlChannel::run(const std::string& command) {
  if (command == "enable") {
    handlers_.enable();
    if (!handlers_.quiet) fmt::print(stderr, "Events enabled\n");
  } else if (command == "disable") {
    handlers_.disable();
    if (!handlers_.quiet) fmt::print(stderr, "Events disabled\n");
  } else if (command == "stop") {
    handlers_.stop();
  } else if (command != "ping") {
    fmt::print(stderr,
               "perfscope: --control: '{}' is not a command perfscope takes (enable, disable, "
               "ping, stop)\n",
               command);
    return;  // no ack, as perf's for a command it does not know
  }
  if (ack_fd_ >= 0) {
    [[maybe_unused]] auto written = ::write(ack_fd_, "ack\n", 4);
  }
}

}  // namespace perfscope::cli
