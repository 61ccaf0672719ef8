// JitUnwindTable: the unwinding information a jitdump carries for one piece of JIT code
// (CODE_UNWINDING_INFO), as libdw CFI. The runtime lays out .eh_frame and then .eh_frame_hdr
// right after the code, 8-byte aligned (V8 does; perf inject --jit places them the same way),
// and the FDEs address the code relative to that place. libdw reads CFI only out of an ELF, so
// the .eh_frame goes into a small ELF image in memory, at the address the runtime gave it.
#pragma once

#include <elfutils/libdw.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "analysis/unwinding/cached_frame_rule.hpp"
#include "perfscope/analysis/symbols/jitdump.hpp"

namespace perfscope::unwind {

class JitUnwindTable {
 public:
  // Null when `code` carries no .eh_frame (V8's builtins carry a header alone), or its CFI has
  // no row for the code's first byte (the information is not laid out as described above).
  // `machine` is the dump's ELF machine (EM_X86_64): it picks libdw's register conventions.
  static std::unique_ptr<JitUnwindTable> make(const JitCode& code, unsigned machine);
  ~JitUnwindTable();
  JitUnwindTable(const JitUnwindTable&) = delete;
  JitUnwindTable& operator=(const JitUnwindTable&) = delete;

  // The rule of the row covering `pc` (a process address inside the code).
  const CachedFrameRule& rule_at(std::uint64_t pc) { return rules_.rule_at(cfi_, pc); }
  const CfiRules& rules() const noexcept { return rules_; }

 private:
  JitUnwindTable() = default;
  std::vector<char> image_;  // the ELF image elf_ reads
  Elf* elf_ = nullptr;
  Dwarf_CFI* cfi_ = nullptr;
  CfiRules rules_;
};

// Where a runtime places the .eh_frame of code at `start` of `size` bytes.
constexpr std::uint64_t jit_eh_frame_address(std::uint64_t start, std::uint64_t size) noexcept {
  return start + ((size + 7) & ~std::uint64_t{7});
}

}  // namespace perfscope::unwind
