#include "perfscope/core/user_page.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/counter_instructions.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/sys/perf_syscalls.hpp"

namespace perfscope {

namespace rf = abi::read_format;
namespace cap = abi::mmap_capability;

std::string_view read_path_name(ReadPath path) noexcept {
  return path == ReadPath::user_space ? "user space" : "read(2)";
}

UserPage UserPage::map(const Event& event, pid_t pid) {
  const auto& attr = event.attr();
  std::uint64_t read_format = attr.raw().read_format;
  if (read_format & rf::group) {
    throw Error(EINVAL, "a UserPage reads one event, but this one has PERF_FORMAT_GROUP",
                "open it without PERF_FORMAT_GROUP (each member has its own page), or read the "
                "group with CountingSession.",
                attr);
  }
  UserPage user_page;
  if (int r = user_page.mapping_.map(event.fd(), sys::page_size(), sys::MapAccess::read_only);
      r < 0) {
    std::string diagnosis =
        -r == EPERM || -r == ENOMEM
            ? "one page per event is needed: check RLIMIT_MEMLOCK (ulimit -l) and "
              "kernel.perf_event_mlock_kb."
        : -r == EINVAL && attr.has(abi::attr_flag::inherit)
            ? "the kernel refuses to map a per-task event with inherit (its children would "
              "share the page): open it without inherit to read it in user space, or read "
              "it with Event::read."
            : "the fd must be an open perf event.";
    throw Error(-r, fmt::format("cannot map the user page of the event: {}", std::strerror(-r)),
                std::move(diagnosis), attr);
  }
  user_page.fd_ = event.fd();
  user_page.read_format_ = read_format;
  if (read_format & rf::id) user_page.id_ = event.id();
  user_page.owner_ = ::pthread_self();
  // read(2) of an inherited event adds its children's counts; the counter holds only ours.
  user_page.self_monitoring_ =
      (pid == 0 || pid == ::gettid()) && !attr.has(abi::attr_flag::inherit);
  user_page.needs_syscall_ = (read_format & rf::lost) != 0;
  user_page.wants_times_ = (read_format & (rf::total_time_enabled | rf::total_time_running)) != 0;
  return user_page;
}

CounterRead UserPage::read() const noexcept {
  CounterRead result;
  if (arch::has_user_counter_reads && mapped() && self_monitoring_ && !needs_syscall_ &&
      ::pthread_equal(::pthread_self(), owner_)) {
    UserPageSample sample =
        read_user_page(page(), arch::read_hardware_counter, arch::read_timestamp_counter);
    // Without cap_user_time the page's times date from the last context switch: scaling with
    // them would silently miscount, so asked-for times come from read(2).
    if (sample.consistent && sample.counter_read && (sample.times_current || !wants_times_)) {
      result.reading.value = sample.count;
      if (read_format_ & rf::total_time_enabled) result.reading.enabled = sample.enabled;
      if (read_format_ & rf::total_time_running) result.reading.running = sample.running;
      result.reading.id = id_;
      result.path = ReadPath::user_space;
      result.ok = true;
      return result;
    }
  }
  // value, enabled, running, id, lost: the most a single event's read returns.
  std::uint64_t words[5];
  ssize_t bytes = sys::read_fd(fd_, words, sizeof words);
  result.path = ReadPath::syscall;
  result.ok = bytes > 0 && decode_read({words, static_cast<std::size_t>(bytes) / sizeof words[0]},
                                       read_format_, {&result.reading, 1}) == 1;
  return result;
}

std::string_view UserPage::syscall_reason() const noexcept {
  if (!mapped()) return "the page is not mapped.";
  if (!arch::has_user_counter_reads) {
    return "perfscope knows no user-space counter instruction on this architecture.";
  }
  if (!self_monitoring_) {
    return "the event does not count just the calling thread (another task, a CPU, or "
           "inherit into children): only read(2) sees its whole count.";
  }
  if (needs_syscall_) return "read_format asks for PERF_FORMAT_LOST, which only read(2) reports.";
  if (!::pthread_equal(::pthread_self(), owner_)) {
    return "called from a thread other than the one the event counts: only that thread can "
           "read its counter directly.";
  }
  if (!(detail::load_once(page().capabilities) & cap::user_rdpmc)) {
    return "the kernel does not let user space read this counter (cap_user_rdpmc is 0): on "
           "arm64 set kernel.perf_user_access=1 and open the event with config1 bit 1 "
           "(EventAttr::request_arm64_user_read); on x86 <pmu>/rdpmc in sysfs must not be 0; "
           "software events have no counter.";
  }
  if (wants_times_ && !(detail::load_once(page().capabilities) & cap::user_time)) {
    return "read_format asks for time_enabled/time_running and the kernel gives no "
           "cap_user_time to bring the page's times up to now (its clock is not the TSC or "
           "arch timer): open the event without PERF_FORMAT_TOTAL_TIME_* to read the count "
           "alone from user space.";
  }
  if (detail::load_once(page().index) == 0) {
    return "the event is not on a hardware counter now (disabled, multiplexed out, or on arm64 "
           "kernel.perf_user_access is 0).";
  }
  return {};
}

PageCapabilities UserPage::capabilities() const noexcept {
  PageCapabilities result;
  if (!mapped()) return result;
  std::uint64_t bits = detail::load_once(page().capabilities);
  result.user_rdpmc = bits & cap::user_rdpmc;
  result.user_time = bits & cap::user_time;
  result.user_time_zero = bits & cap::user_time_zero;
  result.user_time_short = bits & cap::user_time_short;
  result.pmc_width = detail::load_once(page().pmc_width);
  return result;
}

std::optional<PageClock> UserPage::clock() const noexcept {
  if (!mapped()) return std::nullopt;
  return page_clock(page());
}

std::optional<PageClock> page_clock(const abi::PerfEventMmapPage& p) noexcept {
  for (std::uint32_t attempt = 0; attempt < max_seqlock_retries; ++attempt) {
    std::uint32_t sequence = detail::load_once(p.lock);
    detail::compiler_barrier();
    std::uint64_t bits = detail::load_once(p.capabilities);
    if (!(bits & cap::user_time)) return std::nullopt;
    PageClock clock;
    clock.time_offset = detail::load_once(p.time_offset);
    clock.time_mult = detail::load_once(p.time_mult);
    clock.time_shift = detail::load_once(p.time_shift);
    clock.has_time_zero = bits & cap::user_time_zero;
    if (clock.has_time_zero) clock.time_zero = detail::load_once(p.time_zero);
    if (bits & cap::user_time_short) {
      clock.time_cycles = detail::load_once(p.time_cycles);
      clock.time_mask = detail::load_once(p.time_mask);
    }
    detail::compiler_barrier();
    if ((sequence & 1U) == 0 && detail::load_once(p.lock) == sequence) return clock;
  }
  return std::nullopt;
}

}  // namespace perfscope
