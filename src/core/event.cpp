#include "perfscope/core/event.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "perfscope/abi/ioctl_request.hpp"
#include "perfscope/core/error.hpp"

namespace perfscope {

Event::~Event() { close(); }

Event::Event(Event&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      attr_(other.attr_),
      truncated_(other.truncated_),
      kernel_attr_size_(other.kernel_attr_size_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    attr_ = other.attr_;
    truncated_ = other.truncated_;
    kernel_attr_size_ = other.kernel_attr_size_;
  }
  return *this;
}

void Event::close() noexcept {
  sys::close_fd(fd_);
  fd_ = -1;
}

Event Event::try_open(const EventAttr& attr, pid_t pid, int cpu, const Event* leader,
                      unsigned long flags, int& errnum, sys::SizePolicy size_policy) noexcept {
  int group_fd = leader ? leader->fd() : -1;
  auto outcome = sys::perf_event_open(attr.raw(), pid, cpu, group_fd,
                                      flags | abi::open_flag::fd_cloexec, size_policy);
  errnum = outcome.error;
  Event event;
  event.attr_ = attr;
  event.kernel_attr_size_ = outcome.kernel_size;
  if (outcome.fd >= 0) {
    event.fd_ = outcome.fd;
    event.truncated_ = outcome.truncated;
  }
  return event;
}

Event Event::open(const EventAttr& attr, pid_t pid, int cpu, const Event* leader,
                  unsigned long flags, std::string_view name, sys::SizePolicy size_policy) {
  int errnum = 0;
  Event event = try_open(attr, pid, cpu, leader, flags, errnum, size_policy);
  if (!event.valid()) {
    OpenContext context;
    context.pid = pid;
    context.cpu = cpu;
    context.group_fd = leader ? leader->fd() : -1;
    context.flags = flags;
    context.event_name = std::string(name);
    context.kernel_attr_size = event.kernel_attr_size_;
    throw_open_error(errnum, attr, context);
  }
  return event;
}

namespace {
unsigned long group_argument(bool whole_group) { return whole_group ? abi::ioc_flag_group : 0; }

[[noreturn]] void throw_ioctl_error(int errnum, std::string_view request, const EventAttr& attr,
                                    std::string diagnosis) {
  if (diagnosis.empty() && errnum == ENOTTY) {
    diagnosis = "this kernel does not know the ioctl (it is newer than the kernel).";
  }
  throw Error(errnum,
              fmt::format("PERF_EVENT_IOC_{} failed: {} ({})", request, std::strerror(errnum),
                          errno_name(errnum)),
              std::move(diagnosis), attr);
}
}  // namespace

int Event::enable(bool whole_group) noexcept {
  return -sys::perf_ioctl(fd_, abi::ioctl_request::enable, group_argument(whole_group));
}
int Event::disable(bool whole_group) noexcept {
  return -sys::perf_ioctl(fd_, abi::ioctl_request::disable, group_argument(whole_group));
}
int Event::reset(bool whole_group) noexcept {
  return -sys::perf_ioctl(fd_, abi::ioctl_request::reset, group_argument(whole_group));
}
int Event::refresh(int overflows) noexcept {
  return -sys::perf_ioctl(fd_, abi::ioctl_request::refresh, static_cast<unsigned long>(overflows));
}

void Event::set_period(std::uint64_t period_or_freq) {
  std::uint64_t value = period_or_freq;
  if (int r = sys::perf_ioctl(fd_, abi::ioctl_request::period, &value); r < 0) {
    throw_ioctl_error(-r, "PERIOD", attr_,
                      -r == EINVAL ? "the period must be nonzero and below 2^63, and in "
                                     "frequency mode at most perf_event_max_sample_rate."
                                   : "");
  }
  attr_.raw().sample_period_or_freq = period_or_freq;
}

void Event::set_output(const Event& target) {
  if (int r = sys::perf_ioctl(fd_, abi::ioctl_request::set_output,
                              static_cast<unsigned long>(target.fd()));
      r < 0) {
    throw_ioctl_error(-r, "SET_OUTPUT", attr_,
                      -r == EINVAL ? "both events must be on the same CPU (or the same task for "
                                     "per-task events), use the same clock, and the target "
                                     "must have a buffer mapped; this event must not have one."
                                   : "");
  }
}

void Event::clear_output() {
  if (int r = sys::perf_ioctl(fd_, abi::ioctl_request::set_output, static_cast<unsigned long>(-1));
      r < 0) {
    throw_ioctl_error(-r, "SET_OUTPUT", attr_, "");
  }
}

void Event::set_filter(const std::string& filter) {
  if (int r =
          sys::perf_ioctl(fd_, abi::ioctl_request::set_filter, const_cast<char*>(filter.c_str()));
      r < 0) {
    std::string diagnosis;
    if (-r == EINVAL) {
      diagnosis = fmt::format(
          "the filter '{}' does not parse for this event: tracepoint filters name fields of the "
          "event's format (see its format file in tracefs)",
          filter);
    } else if (-r == EEXIST) {
      diagnosis =
          "the event already has a filter, and the kernel does not replace it: open a "
          "new event for a different filter.";
    }
    throw_ioctl_error(-r, "SET_FILTER", attr_, std::move(diagnosis));
  }
}

std::uint64_t Event::id() const {
  std::uint64_t value = 0;
  if (int r = sys::perf_ioctl(fd_, abi::ioctl_request::id, &value); r < 0) {
    throw_ioctl_error(-r, "ID", attr_, "");
  }
  return value;
}

void Event::set_bpf(int bpf_prog_fd) {
  if (int r = sys::perf_ioctl(fd_, abi::ioctl_request::set_bpf,
                              static_cast<unsigned long>(bpf_prog_fd));
      r < 0) {
    throw_ioctl_error(-r, "SET_BPF", attr_,
                      "a BPF program can be attached only to tracepoint, kprobe or uprobe "
                      "events, and must be of the matching program type.");
  }
}

void Event::pause_output(bool paused) {
  if (int r = sys::perf_ioctl(fd_, abi::ioctl_request::pause_output,
                              static_cast<unsigned long>(paused ? 1 : 0));
      r < 0) {
    throw_ioctl_error(-r, "PAUSE_OUTPUT", attr_,
                      -r == EINVAL ? "the event has no ring buffer mapped." : "");
  }
}

std::vector<std::uint32_t> Event::query_bpf(std::uint32_t max_ids) const {
  std::vector<std::uint32_t> buffer(2 + max_ids, 0);
  buffer[0] = max_ids;  // ids_len
  if (int r = sys::perf_ioctl(fd_, abi::ioctl_request::query_bpf, buffer.data()); r < 0) {
    throw_ioctl_error(-r, "QUERY_BPF", attr_,
                      -r == EINVAL ? "only tracepoint, kprobe and uprobe events carry BPF "
                                     "programs."
                                   : "");
  }
  std::uint32_t count = std::min(buffer[1], max_ids);
  return {buffer.begin() + 2, buffer.begin() + 2 + count};
}

void Event::modify_attributes(const EventAttr& attr) {
  abi::PerfEventAttr copy = attr.raw();
  if (int r = sys::perf_ioctl(fd_, abi::ioctl_request::modify_attributes, &copy); r < 0) {
    throw_ioctl_error(-r, "MODIFY_ATTRIBUTES", attr_,
                      -r == EINVAL ? "only breakpoint events can be modified, and only their "
                                     "bp_addr, bp_len and bp_type, with the same type."
                                   : "");
  }
  attr_ = attr;
}

ssize_t Event::read_words(std::span<std::uint64_t> words) const noexcept {
  return sys::read_fd(fd_, words.data(), words.size_bytes());
}

bool Event::read(Reading& out) const noexcept {
  std::uint64_t words[5];
  ssize_t n = read_words(words);
  if (n <= 0) return false;
  return decode_read({words, static_cast<std::size_t>(n) / sizeof(std::uint64_t)},
                     attr_.raw().read_format, {&out, 1}) == 1;
}

}  // namespace perfscope
