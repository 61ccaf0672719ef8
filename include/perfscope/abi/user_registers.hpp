// The kernel's numbering of user registers in sample_regs_user / PERF_SAMPLE_REGS_USER
// (arch/*/include/uapi/asm/perf_regs.h), reduced to what perfscope asks for.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

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

// perf's register names (perf_reg_name) for a recording's architecture, by register number.
constexpr std::string_view register_name(unsigned reg, bool arm64) noexcept {
  constexpr std::array<std::string_view, 24> x86{
      "AX", "BX", "CX", "DX", "SI", "DI", "BP",  "SP",  "IP",  "FLAGS", "CS",  "SS",
      "DS", "ES", "FS", "GS", "R8", "R9", "R10", "R11", "R12", "R13",   "R14", "R15"};
  constexpr std::array<std::string_view, 33> aarch64{
      "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10",
      "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21",
      "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "lr",  "sp",  "pc"};
  if (arm64) {
    if (reg < aarch64.size()) return aarch64[reg];
    return reg == 46 ? "vg" : "unknown";
  }
  if (reg < x86.size()) return x86[reg];
  constexpr std::array<std::string_view, 16> xmm{
      "XMM0", "XMM1", "XMM2",  "XMM3",  "XMM4",  "XMM5",  "XMM6",  "XMM7",
      "XMM8", "XMM9", "XMM10", "XMM11", "XMM12", "XMM13", "XMM14", "XMM15"};
  if (reg >= 32 && reg < 64 && reg % 2 == 0) return xmm[(reg - 32) / 2];
  return "unknown";
}

}  // namespace perfscope::abi
