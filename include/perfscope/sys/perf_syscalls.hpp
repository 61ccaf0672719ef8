// Thin wrappers over the syscalls perf_event needs. They return -errno instead of throwing and do
// no policy: the core layer decides what a failure means.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/export.hpp"

namespace perfscope::sys {

// Raw perf_event_open(2) over an attr buffer of any size (its size field included). Returns the
// fd, or -errno. On -E2BIG the kernel has written the size it supports into the buffer.
PERFSCOPE_EXPORT int perf_event_open_bytes(std::span<std::byte> attr, pid_t pid, int cpu,
                                           int group_fd, unsigned long flags) noexcept;

// What to do when the kernel knows a smaller attr than ours and a field beyond its size is set.
enum class SizePolicy {
  strict,    // fail with E2BIG: the caller asked for something this kernel cannot do
  truncate,  // retry with the kernel's size, dropping the fields it does not know
};

struct OpenOutcome {
  int fd = -1;                    // >= 0 on success
  int error = 0;                  // errno on failure
  std::uint32_t kernel_size = 0;  // attr size the kernel announced on E2BIG, else 0
  bool truncated = false;         // opened with kernel_size after dropping set fields
};

// perf_event_open with size renegotiation: on E2BIG the kernel's size is read back; if every byte
// beyond it is zero the open is retried with that size, otherwise `policy` decides.
PERFSCOPE_EXPORT OpenOutcome perf_event_open(const abi::PerfEventAttr& attr, pid_t pid, int cpu,
                                             int group_fd, unsigned long flags,
                                             SizePolicy policy = SizePolicy::strict) noexcept;

// The lowest offset at or beyond `size` whose byte is nonzero, or attr_bytes.size() when none is.
PERFSCOPE_EXPORT std::size_t first_nonzero_byte_beyond(std::span<const std::byte> attr_bytes,
                                                       std::size_t size) noexcept;

PERFSCOPE_EXPORT int perf_ioctl(int fd, unsigned long request, unsigned long argument) noexcept;
PERFSCOPE_EXPORT int perf_ioctl(int fd, unsigned long request, void* argument) noexcept;

// read(2) retried on EINTR; returns bytes read or -errno.
PERFSCOPE_EXPORT ssize_t read_fd(int fd, void* buffer, std::size_t size) noexcept;
PERFSCOPE_EXPORT void close_fd(int fd) noexcept;

// prctl(PR_TASK_PERF_EVENTS_ENABLE / DISABLE): every event attached to the calling process.
PERFSCOPE_EXPORT int task_perf_events_enable() noexcept;
PERFSCOPE_EXPORT int task_perf_events_disable() noexcept;

}  // namespace perfscope::sys
