// Event: one open perf_event fd, owned, with every ioctl of the manual.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/event_attr.hpp"
#include "perfscope/core/reading.hpp"
#include "perfscope/export.hpp"
#include "perfscope/sys/perf_syscalls.hpp"

namespace perfscope {

class PERFSCOPE_EXPORT Event {
 public:
  Event() = default;
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Opens the event; throws perfscope::Error with a diagnosis on failure. pid/cpu as in the
  // manual; `leader` makes it a group member. FD_CLOEXEC is always added.
  static Event open(const EventAttr& attr, pid_t pid = 0, int cpu = -1,
                    const Event* leader = nullptr, unsigned long flags = 0,
                    std::string_view name = {},
                    sys::SizePolicy size_policy = sys::SizePolicy::strict);
  // Same, without throwing: returns an invalid Event and sets `errnum`.
  static Event try_open(const EventAttr& attr, pid_t pid, int cpu, const Event* leader,
                        unsigned long flags, int& errnum,
                        sys::SizePolicy size_policy = sys::SizePolicy::strict) noexcept;

  bool valid() const noexcept { return fd_ >= 0; }
  int fd() const noexcept { return fd_; }
  const EventAttr& attr() const noexcept { return attr_; }
  // True when the kernel knew a smaller attr and fields beyond it were dropped (truncate policy).
  bool attr_truncated() const noexcept { return truncated_; }
  std::uint32_t kernel_attr_size() const noexcept { return kernel_attr_size_; }

  // ENABLE/DISABLE/RESET/REFRESH: 0 or errno; never throw (they are used around hot regions).
  // `whole_group` passes PERF_IOC_FLAG_GROUP so the leader's whole group is acted on at once.
  int enable(bool whole_group = false) noexcept;
  int disable(bool whole_group = false) noexcept;
  int reset(bool whole_group = false) noexcept;
  int refresh(int overflows) noexcept;

  // Setup ioctls: throw perfscope::Error on failure.
  void set_period(std::uint64_t period_or_freq);
  void set_output(const Event& target);  // route this event's records into target's buffer
  void clear_output();                   // stop routing (SET_OUTPUT with -1)
  void set_filter(const std::string& filter);
  std::uint64_t id() const;
  void set_bpf(int bpf_prog_fd);
  void pause_output(bool paused);
  std::vector<std::uint32_t> query_bpf(std::uint32_t max_ids = 64) const;
  void modify_attributes(const EventAttr& attr);

  // Raw read(2) into words: bytes read or -errno. No allocation, no throw.
  ssize_t read_words(std::span<std::uint64_t> words) const noexcept;
  // Read of a single (non-group) event; false on failure.
  bool read(Reading& out) const noexcept;

  void close() noexcept;

 private:
  Event(int fd, const EventAttr& attr) : fd_(fd), attr_(attr) {}
  int fd_ = -1;
  EventAttr attr_{};
  bool truncated_ = false;
  std::uint32_t kernel_attr_size_ = 0;
};

}  // namespace perfscope
