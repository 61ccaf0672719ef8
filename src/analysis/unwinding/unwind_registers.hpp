// The user registers of a `--call-graph dwarf` sample as DWARF register numbers: perf numbers
// registers by its own per-architecture enums (arch/*/include/uapi/asm/perf_regs.h), the CFI an
// unwinder evaluates numbers them by the architecture's DWARF ABI.
#pragma once

#include <array>
#include <cstdint>

#include "perfscope/core/records.hpp"

namespace perfscope::unwind {

enum class UnwindArch : std::uint8_t { unsupported, x86_64, arm64 };

// The architecture of code in an ELF file of machine `e_machine` (EM_X86_64, EM_AARCH64).
UnwindArch arch_of_machine(unsigned e_machine) noexcept;

// perf's register numbers (PERF_REG_X86_* / PERF_REG_ARM64_*) that an unwinder reads.
namespace perf_reg {
inline constexpr unsigned x86_ax = 0, x86_bx = 1, x86_cx = 2, x86_dx = 3, x86_si = 4, x86_di = 5,
                          x86_bp = 6, x86_sp = 7, x86_ip = 8, x86_r8 = 16, x86_r15 = 23;
inline constexpr unsigned arm64_x0 = 0, arm64_lr = 30, arm64_sp = 31, arm64_pc = 32;
}  // namespace perf_reg

// The first frame's state: DWARF registers 0..count-1, and the pc and stack pointer.
struct InitialRegisters {
  static constexpr std::size_t max_registers = 32;
  std::array<std::uint64_t, max_registers> dwarf{};
  unsigned count = 0;
  std::uint64_t pc = 0;
  std::uint64_t sp = 0;
  unsigned sp_dwarf_number = 0;  // the stack pointer's DWARF register number
};

// Converts the 64-bit register set of a sample. False when the set is not a 64-bit one of
// `arch`, or lacks a register the unwinder needs (every general-purpose one, sp and pc).
bool initial_registers(UnwindArch arch, const RegisterSet& registers,
                       InitialRegisters& out) noexcept;

}  // namespace perfscope::unwind
