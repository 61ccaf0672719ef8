// UserPage: the first mmap'd page of a perf event, read the way perf_event_open(2) prescribes so
// that a task counting itself reads its counter without a system call (rdpmc on x86-64, mrs on
// arm64), with read(2) as the fallback whenever the page does not allow that. Every read says
// which path served it.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

#include "perfscope/abi/perf_event_mmap_page.hpp"
#include "perfscope/core/reading.hpp"
#include "perfscope/export.hpp"
#include "perfscope/sys/memory_map.hpp"

namespace perfscope {

class Event;

enum class ReadPath : std::uint8_t {
  user_space,  // the page's seqlock protocol and the counter instruction
  syscall,     // read(2) on the event's fd
};
PERFSCOPE_EXPORT std::string_view read_path_name(
    ReadPath path) noexcept;  // "user space", "read(2)"

// cycles * mult >> shift without overflowing 64 bits in the product, as the manual computes it.
constexpr std::uint64_t multiply_shift(std::uint64_t cycles, std::uint32_t mult,
                                       std::uint16_t shift) noexcept {
  if (shift >= 64) return 0;  // the kernel keeps shift below 32; anything else is not a clock
  std::uint64_t quotient = cycles >> shift;
  std::uint64_t remainder = cycles & ((std::uint64_t{1} << shift) - 1);
  return quotient * mult + ((remainder * mult) >> shift);
}

// A counter value of `width` valid bits, sign-extended: the kernel programs counters to negative
// values (overflow at zero), and above `width` the hardware may return anything.
constexpr std::int64_t sign_extend_counter(std::uint64_t raw, std::uint16_t width) noexcept {
  if (width == 0 || width >= 64) return static_cast<std::int64_t>(raw);
  unsigned unused = 64U - width;
  return static_cast<std::int64_t>(raw << unused) >> unused;
}

// The page's conversion between the timestamp counter (TSC, CNTVCT_EL0) and the perf clock
// (cap_user_time; time_zero with cap_user_time_zero, time_cycles/time_mask with
// cap_user_time_short).
struct PageClock {
  std::uint64_t time_offset = 0;
  std::uint64_t time_zero = 0;
  std::uint64_t time_cycles = 0;
  std::uint64_t time_mask = ~std::uint64_t{0};
  std::uint32_t time_mult = 0;
  std::uint16_t time_shift = 0;
  bool has_time_zero = false;

  // cap_user_time_short: the kernel's clock is only time_mask wide and time_cycles its last
  // value; a mask of all ones (the default) leaves the cycles as they are.
  constexpr std::uint64_t widen(std::uint64_t cycles) const noexcept {
    return time_cycles + ((cycles - time_cycles) & time_mask);
  }
  // Nanoseconds since the kernel last updated the page, to add to time_enabled (and, while the
  // event is on a counter, time_running).
  constexpr std::uint64_t delta_since_update(std::uint64_t cycles) const noexcept {
    return time_offset + multiply_shift(widen(cycles), time_mult, time_shift);
  }
  // The perf clock time (sample timestamps) of a timestamp-counter value (cap_user_time_zero).
  constexpr std::uint64_t perf_time(std::uint64_t cycles) const noexcept {
    return time_zero + multiply_shift(widen(cycles), time_mult, time_shift);
  }
  // The timestamp-counter value at a perf clock time (the manual's inverse of perf_time).
  constexpr std::uint64_t cycles_at(std::uint64_t perf_timestamp) const noexcept {
    if (time_mult == 0 || time_shift >= 64) return 0;
    std::uint64_t time = perf_timestamp - time_zero;
    std::uint64_t quotient = time / time_mult;
    std::uint64_t remainder = time % time_mult;
    return (quotient << time_shift) + (remainder << time_shift) / time_mult;
  }
};

// What one pass of the page's seqlock protocol saw.
struct UserPageSample {
  bool consistent = false;     // the lock did not move (false: gave up after the retry limit)
  bool counter_read = false;   // cap_user_rdpmc and index != 0: `count` is the live count
  bool times_current = false;  // cap_user_time: enabled/running brought up to now; else as of
                               // the kernel's last update of the page (a context switch)
  std::uint32_t index = 0;     // hardware counter + 1, 0 when not on one
  std::uint32_t retries = 0;   // passes repeated because the kernel updated the page meanwhile
  std::uint64_t count = 0;     // offset + sign-extended counter
  std::uint64_t enabled = 0;   // time_enabled, extrapolated to now when cap_user_time
  std::uint64_t running = 0;   // time_running, likewise while the event is on a counter
};

// The kernel updates the page in a few hundred instructions with preemption off; a reader that
// still sees it move this many times in a row is not the task the page belongs to.
inline constexpr std::uint32_t max_seqlock_retries = 64;

namespace detail {
template <class T>
T load_once(const T& field) noexcept {
  return *static_cast<const volatile T*>(&field);
}
inline void compiler_barrier() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }
}  // namespace detail

// The read loop of perf_event_open(2) over one page: read_counter(index - 1) reads the hardware
// counter and read_timestamp() the timestamp counter. The kernel rewrites the page on the
// reader's own CPU (at interrupts and context switches), so compiler barriers order it; an odd
// lock is an update in progress.
template <class ReadCounter, class ReadTimestamp>
UserPageSample read_user_page(const abi::PerfEventMmapPage& page, ReadCounter&& read_counter,
                              ReadTimestamp&& read_timestamp) noexcept {
  namespace cap = abi::mmap_capability;
  using detail::compiler_barrier;
  using detail::load_once;
  UserPageSample sample;
  for (std::uint32_t attempt = 0; attempt < max_seqlock_retries; ++attempt) {
    std::uint32_t sequence = load_once(page.lock);
    compiler_barrier();
    std::uint64_t capabilities = load_once(page.capabilities);
    std::uint64_t enabled = load_once(page.time_enabled);
    std::uint64_t running = load_once(page.time_running);
    bool timed = (capabilities & cap::user_time) != 0;
    std::uint64_t cycles = 0;
    PageClock clock;
    if (timed) {
      cycles = read_timestamp();
      clock.time_offset = load_once(page.time_offset);
      clock.time_mult = load_once(page.time_mult);
      clock.time_shift = load_once(page.time_shift);
      if (capabilities & cap::user_time_short) {
        clock.time_cycles = load_once(page.time_cycles);
        clock.time_mask = load_once(page.time_mask);
      }
    }
    std::uint32_t index = load_once(page.index);
    std::uint64_t count = static_cast<std::uint64_t>(load_once(page.offset));
    bool counter_read = (capabilities & cap::user_rdpmc) != 0 && index != 0;
    if (counter_read) {
      std::uint16_t width = load_once(page.pmc_width);
      count += static_cast<std::uint64_t>(sign_extend_counter(read_counter(index - 1), width));
    }
    compiler_barrier();
    if ((sequence & 1U) == 0 && load_once(page.lock) == sequence) {
      if (timed) {
        std::uint64_t delta = clock.delta_since_update(cycles);
        enabled += delta;
        if (index != 0) running += delta;
      }
      sample.consistent = true;
      sample.counter_read = counter_read;
      sample.times_current = timed;
      sample.index = index;
      sample.retries = attempt;
      sample.count = count;
      sample.enabled = enabled;
      sample.running = running;
      return sample;
    }
  }
  sample.retries = max_seqlock_retries;
  return sample;
}

// One read of an event through its page.
struct CounterRead {
  Reading reading;  // value; enabled/running/id as the event's read_format asks
  ReadPath path = ReadPath::syscall;
  bool ok = false;  // false: read(2) failed (the event's fd was closed)
};

// Capability bits of the page (stable for the life of the event on one kernel).
struct PageCapabilities {
  bool user_rdpmc = false;
  bool user_time = false;
  bool user_time_zero = false;
  bool user_time_short = false;
  std::uint16_t pmc_width = 0;
};

// The clock conversion of any event's first page (a ring buffer's too), read under its seqlock;
// nullopt without cap_user_time or when the page kept changing.
PERFSCOPE_EXPORT std::optional<PageClock> page_clock(const abi::PerfEventMmapPage& page) noexcept;

class PERFSCOPE_EXPORT UserPage {
 public:
  UserPage() = default;

  // Maps the first page of `event`'s fd. `pid` is the pid the event was opened with: user-space
  // reads are possible only for an event counting the calling thread (pid 0 or its own tid)
  // without inherit, and only from that thread. The Event must stay open while the page is used
  // (read(2) falls back to its fd). Throws perfscope::Error when the page cannot be mapped or
  // the event is a group read (PERF_FORMAT_GROUP: read it with CountingSession).
  static UserPage map(const Event& event, pid_t pid = 0);

  bool mapped() const noexcept { return mapping_.mapped(); }
  // The counter's current value: from user space when the page allows it at this moment, by
  // read(2) otherwise. No allocation, no exception.
  CounterRead read() const noexcept;

  // Why a read now would take read(2), in words with the fix; empty when it would not.
  std::string_view syscall_reason() const noexcept;
  PageCapabilities capabilities() const noexcept;
  // The clock conversion, when the kernel provides one (cap_user_time).
  std::optional<PageClock> clock() const noexcept;
  const abi::PerfEventMmapPage& page() const noexcept {
    return *static_cast<const abi::PerfEventMmapPage*>(mapping_.data());
  }

 private:
  sys::MemoryMap mapping_;
  int fd_ = -1;
  std::uint64_t read_format_ = 0;
  std::uint64_t id_ = 0;
  pthread_t owner_{};
  bool self_monitoring_ = false;  // the calling thread, no inherit
  bool needs_syscall_ = false;    // read_format has something only read(2) reports
  bool wants_times_ = false;      // read_format has TOTAL_TIME_ENABLED or _RUNNING
};

}  // namespace perfscope
