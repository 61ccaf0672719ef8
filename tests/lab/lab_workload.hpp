// Workloads with an exact instruction count for the emulated PMU lab (aarch64 only): under QEMU's
// -icount every retired instruction is counted, so counts can be compared exactly.
#pragma once

#include <cstdint>
#include <string>

#include "perfscope/abi/ioctl_request.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope::lab {

// A two-instruction loop (subs; b.ne) run `iterations` times: 2 * iterations + 1 instructions
// with the mov that loads the count.
inline void run_loop(std::uint64_t iterations) noexcept {
  asm volatile(
      "mov x9, %[n]\n"
      "1:\n\t"
      "subs x9, x9, #1\n\t"
      "b.ne 1b\n"
      :
      : [n] "r"(iterations)
      : "x9", "cc", "memory");
}

// The loop between an ENABLE and a DISABLE ioctl on `fd` issued from the same asm block, so that
// the user-mode instructions counted are fixed by this code alone, not by the compiler: after the
// enable's svc returns, the mov loading the count, the loop, the four movs setting up the
// disable and its svc. See exact_count_constant in exact_counting_test.cpp for what the PMU
// counts of that.
inline void run_counted_loop(int fd, std::uint64_t iterations, bool whole_group) noexcept {
  const std::uint64_t file = static_cast<std::uint64_t>(fd);
  const std::uint64_t enable = abi::ioctl_request::enable;
  const std::uint64_t disable = abi::ioctl_request::disable;
  const std::uint64_t group = whole_group ? 1 : 0;  // PERF_IOC_FLAG_GROUP
  asm volatile(
      "mov x0, %[fd]\n\t"
      "mov x1, %[enable]\n\t"
      "mov x2, %[group]\n\t"
      "mov x8, #29\n\t"  // __NR_ioctl on arm64
      "svc #0\n\t"
      "mov x9, %[n]\n"
      "1:\n\t"
      "subs x9, x9, #1\n\t"
      "b.ne 1b\n\t"
      "mov x0, %[fd]\n\t"
      "mov x1, %[disable]\n\t"
      "mov x2, %[group]\n\t"
      "mov x8, #29\n\t"
      "svc #0\n"
      :
      : [fd] "r"(file), [enable] "r"(enable), [disable] "r"(disable), [group] "r"(group),
        [n] "r"(iterations)
      : "x0", "x1", "x2", "x8", "x9", "cc", "memory");
}

// Takes the second CPU offline for the life of the object. QEMU's -icount instruction counter is
// one count shared by all vCPUs, and the emulated PMU adds what the other vCPU retires meanwhile
// (its kernel work) to this CPU's event counters: exact counts need that vCPU stopped.
class SecondCpuOffline {
 public:
  SecondCpuOffline() : result_(perfscope::sys::write_text_file(path, "0")) {}
  ~SecondCpuOffline() {
    if (result_ == 0) perfscope::sys::write_text_file(path, "1");
  }
  SecondCpuOffline(const SecondCpuOffline&) = delete;
  SecondCpuOffline& operator=(const SecondCpuOffline&) = delete;
  int result() const noexcept { return result_; }

 private:
  static constexpr const char* path = "/sys/devices/system/cpu/cpu1/online";
  int result_;
};

}  // namespace perfscope::lab
