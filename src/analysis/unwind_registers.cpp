#include "unwind_registers.hpp"

#include <elf.h>

#include "perfscope/abi/sample_format.hpp"

namespace perfscope::unwind {

namespace {

// Copies perf register `perf_number` into DWARF register `dwarf_number`.
bool take(const RegisterSet& registers, unsigned perf_number, unsigned dwarf_number,
          InitialRegisters& out) noexcept {
  auto value = registers.value(perf_number);
  if (!value) return false;
  out.dwarf[dwarf_number] = *value;
  return true;
}

// The x86-64 psABI's DWARF order (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15) differs from
// perf's (ax, bx, cx, dx, si, di, bp, sp, ip, flags, segments, r8-r15).
bool x86_64_registers(const RegisterSet& registers, InitialRegisters& out) noexcept {
  namespace r = perf_reg;
  constexpr unsigned perf_of_dwarf[8] = {r::x86_ax, r::x86_dx, r::x86_cx, r::x86_bx,
                                         r::x86_si, r::x86_di, r::x86_bp, r::x86_sp};
  for (unsigned dwarf = 0; dwarf < 8; ++dwarf) {
    if (!take(registers, perf_of_dwarf[dwarf], dwarf, out)) return false;
  }
  for (unsigned n = 0; n <= r::x86_r15 - r::x86_r8; ++n) {
    if (!take(registers, r::x86_r8 + n, 8 + n, out)) return false;
  }
  // DWARF register 16 is the return-address column: in the first frame it holds the pc.
  if (!take(registers, r::x86_ip, 16, out)) return false;
  out.count = 17;
  out.pc = out.dwarf[16];
  out.sp = out.dwarf[7];
  out.sp_dwarf_number = 7;
  return true;
}

// AArch64: x0-x30 and sp share their numbers with DWARF (0-31); the pc has no DWARF number.
bool arm64_registers(const RegisterSet& registers, InitialRegisters& out) noexcept {
  for (unsigned n = perf_reg::arm64_x0; n <= perf_reg::arm64_sp; ++n) {
    if (!take(registers, n, n, out)) return false;
  }
  auto pc = registers.value(perf_reg::arm64_pc);
  if (!pc) return false;
  out.count = 32;
  out.pc = *pc;
  out.sp = out.dwarf[31];
  out.sp_dwarf_number = 31;
  return true;
}

}  // namespace

UnwindArch arch_of_machine(unsigned e_machine) noexcept {
  switch (e_machine) {
    case EM_X86_64: return UnwindArch::x86_64;
    case EM_AARCH64: return UnwindArch::arm64;
    default: return UnwindArch::unsupported;
  }
}

bool initial_registers(UnwindArch arch, const RegisterSet& registers,
                       InitialRegisters& out) noexcept {
  if (registers.abi != static_cast<std::uint64_t>(abi::SampleRegsAbi::abi64)) return false;
  switch (arch) {
    case UnwindArch::x86_64: return x86_64_registers(registers, out);
    case UnwindArch::arm64: return arm64_registers(registers, out);
    case UnwindArch::unsupported: return false;
  }
  return false;
}

}  // namespace perfscope::unwind
