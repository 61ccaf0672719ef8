// The unprivileged instructions that read a hardware counter and the timestamp counter directly:
// rdpmc/rdtsc on x86-64, mrs of the PMU and generic-timer registers on arm64. They are not system
// calls, so they live in core next to the one user of them (UserPage); the kernel must have
// granted access first (the mmap'd page's cap_user_rdpmc and index say when it has).
#pragma once

#include <cstdint>

namespace perfscope::arch {

#if defined(__x86_64__) || defined(__aarch64__)
inline constexpr bool has_user_counter_reads = true;
#else
inline constexpr bool has_user_counter_reads = false;
#endif

// Reads hardware counter `counter`: the mmap page's index minus one.
inline std::uint64_t read_hardware_counter(std::uint32_t counter) noexcept {
#if defined(__x86_64__)
  std::uint32_t low = 0;
  std::uint32_t high = 0;
  asm volatile("rdpmc" : "=a"(low), "=d"(high) : "c"(counter));
  return (std::uint64_t{high} << 32) | low;
#elif defined(__aarch64__)
  // The kernel publishes the cycle counter as index 32 (counter 31, the number the architecture
  // gives PMCCNTR_EL0 in PMSELR_EL0) and event counter n as index n + 1.
  constexpr std::uint32_t cycle_counter = 31;
  std::uint64_t value = 0;
  if (counter == cycle_counter) {
    asm volatile("mrs %0, pmccntr_el0" : "=r"(value));
  } else {
    // The select takes effect for PMXEVCNTR_EL0 only after a context synchronization (the kernel
    // does the same isb). A preemption in between zeroes PMSELR_EL0, but it also moves the page's
    // seqlock, so the caller retries.
    asm volatile("msr pmselr_el0, %1\n\tisb\n\tmrs %0, pmxevcntr_el0"
                 : "=r"(value)
                 : "r"(std::uint64_t{counter}));
  }
  return value;
#else
  (void)counter;
  return 0;
#endif
}

// The clock the page's time_* fields convert: the TSC on x86-64, CNTVCT_EL0 on arm64.
inline std::uint64_t read_timestamp_counter() noexcept {
#if defined(__x86_64__)
  std::uint32_t low = 0;
  std::uint32_t high = 0;
  asm volatile("rdtsc" : "=a"(low), "=d"(high));
  return (std::uint64_t{high} << 32) | low;
#elif defined(__aarch64__)
  // isb: without it the counter may be read early, ahead of the seqlock read before it.
  std::uint64_t value = 0;
  asm volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(value)::"memory");
  return value;
#else
  return 0;
#endif
}

}  // namespace perfscope::arch
