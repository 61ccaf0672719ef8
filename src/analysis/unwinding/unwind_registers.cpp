#include "analysis/unwinding/unwind_registers.hpp"

#include <elf.h>

#include <array>
#include <bit>

#include "perfscope/abi/sample_format.hpp"

namespace perfscope::unwind {

namespace {

// The sample's registers by perf number, spread out once: looking each up in the packed set
// (a population count per register, 17 per sample) was a tenth of a DWARF report's time.
struct PerfRegisters {
  // Only the `present` ones are read: left uninitialized, as zeroing 512 bytes per sample was a
  // tenth of the unwinding -g does while recording.
  std::array<std::uint64_t, 64> value;
  std::uint64_t present = 0;

  explicit PerfRegisters(const RegisterSet& registers) noexcept {
    std::size_t next = 0;
    for (std::uint64_t mask = registers.mask; mask != 0 && next < registers.values.size();
         mask &= mask - 1) {
      unsigned bit = static_cast<unsigned>(std::countr_zero(mask));
      value[bit] = registers.values[next++];
      present |= std::uint64_t{1} << bit;
    }
  }
  bool has(unsigned number) const noexcept { return number < 64 && (present >> number & 1); }
};

// Copies perf register `perf_number` into DWARF register `dwarf_number`.
bool take(const PerfRegisters& registers, unsigned perf_number, unsigned dwarf_number,
          InitialRegisters& out) noexcept {
  if (!registers.has(perf_number)) return false;
  out.dwarf[dwarf_number] = registers.value[perf_number];
  return true;
}

// The x86-64 psABI's DWARF order (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15) differs from
// perf's (ax, bx, cx, dx, si, di, bp, sp, ip, flags, segments, r8-r15).
bool x86_64_registers(const PerfRegisters& registers, InitialRegisters& out) noexcept {
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
bool arm64_registers(const PerfRegisters& registers, InitialRegisters& out) noexcept {
  for (unsigned n = perf_reg::arm64_x0; n <= perf_reg::arm64_sp; ++n) {
    if (!take(registers, n, n, out)) return false;
  }
  if (!registers.has(perf_reg::arm64_pc)) return false;
  out.count = 32;
  out.pc = registers.value[perf_reg::arm64_pc];
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
  PerfRegisters by_number(registers);
  switch (arch) {
    case UnwindArch::x86_64: return x86_64_registers(by_number, out);
    case UnwindArch::arm64: return arm64_registers(by_number, out);
    case UnwindArch::unsupported: return false;
  }
  return false;
}

}  // namespace perfscope::unwind
