// The kernel's numbering of user registers in sample_regs_user / PERF_SAMPLE_REGS_USER
// (arch/*/include/uapi/asm/perf_regs.h), reduced to what perfscope asks for.
#pragma once

#include <cstdint>

namespace perfscope::abi {

// The user registers a DWARF unwinder needs, as perf asks for them (PERF_REGS_MASK): every
// general-purpose register, the stack pointer and the program counter. x86-64: ax..r15 and
// ip/flags/cs/ss/sp, without ds/es/fs/gs (which the kernel refuses for 64-bit tasks); arm64:
// x0..x30, sp, pc. Zero where perfscope knows no unwinding registers.
constexpr std::uint64_t dwarf_unwind_register_mask() noexcept {
#if defined(__x86_64__)
  return 0xff0fffULL;
#elif defined(__aarch64__)
  return (1ULL << 33) - 1;
#else
  return 0;
#endif
}

}  // namespace perfscope::abi
