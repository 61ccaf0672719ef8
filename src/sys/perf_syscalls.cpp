#include "perfscope/sys/perf_syscalls.hpp"

#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "perfscope/abi/prctl_option.hpp"

namespace perfscope::sys {

int perf_event_open_bytes(std::span<std::byte> attr, pid_t pid, int cpu, int group_fd,
                          unsigned long flags) noexcept {
  long fd = ::syscall(SYS_perf_event_open, attr.data(), pid, cpu, group_fd, flags);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

std::size_t first_nonzero_byte_beyond(std::span<const std::byte> attr_bytes,
                                      std::size_t size) noexcept {
  for (std::size_t i = size; i < attr_bytes.size(); ++i) {
    if (attr_bytes[i] != std::byte{0}) return i;
  }
  return attr_bytes.size();
}

OpenOutcome perf_event_open(const abi::PerfEventAttr& attr, pid_t pid, int cpu, int group_fd,
                            unsigned long flags, SizePolicy policy) noexcept {
  // The kernel may overwrite the size field, so it works on a copy.
  abi::PerfEventAttr copy = attr;
  auto bytes = std::as_writable_bytes(std::span{&copy, 1});
  OpenOutcome outcome;
  int result = perf_event_open_bytes(bytes, pid, cpu, group_fd, flags);
  if (result == -E2BIG && copy.size >= abi::attr_size::ver0 && copy.size < attr.size) {
    outcome.kernel_size = copy.size;
    std::size_t kernel_size = copy.size;
    abi::PerfEventAttr original = attr;
    auto original_bytes = std::as_bytes(std::span{&original, 1});
    bool tail_is_zero =
        first_nonzero_byte_beyond(original_bytes, kernel_size) == original_bytes.size();
    if (tail_is_zero || policy == SizePolicy::truncate) {
      copy = attr;
      auto truncated_bytes = std::as_writable_bytes(std::span{&copy, 1});
      std::fill(truncated_bytes.begin() + static_cast<std::ptrdiff_t>(kernel_size),
                truncated_bytes.end(), std::byte{0});
      copy.size = static_cast<std::uint32_t>(kernel_size);
      result = perf_event_open_bytes(truncated_bytes, pid, cpu, group_fd, flags);
      outcome.truncated = !tail_is_zero;
    }
  }
  if (result < 0) {
    outcome.error = -result;
  } else {
    outcome.fd = result;
  }
  return outcome;
}

int perf_ioctl(int fd, unsigned long request, unsigned long argument) noexcept {
  return ::ioctl(fd, request, argument) < 0 ? -errno : 0;
}

int perf_ioctl(int fd, unsigned long request, void* argument) noexcept {
  int result = ::ioctl(fd, request, argument);
  return result < 0 ? -errno : result;
}

ssize_t read_fd(int fd, void* buffer, std::size_t size) noexcept {
  for (;;) {
    ssize_t n = ::read(fd, buffer, size);
    if (n >= 0) return n;
    if (errno != EINTR) return -errno;
  }
}

void close_fd(int fd) noexcept {
  if (fd >= 0) ::close(fd);
}

int task_perf_events_enable() noexcept {
  return ::prctl(abi::pr_task_perf_events_enable, 0, 0, 0, 0) < 0 ? -errno : 0;
}

int task_perf_events_disable() noexcept {
  return ::prctl(abi::pr_task_perf_events_disable, 0, 0, 0, 0) < 0 ? -errno : 0;
}

}  // namespace perfscope::sys
