// CachedFrameRule: what one CFI row says about the caller, reduced to the forms a fast walker
// can follow without libdwfl (x86-64), and CfiRules, the rows of one unwind table made once per
// pc. Shared by the tables of files on disk and those a jitdump carries for JIT code.
#pragma once

#include <elfutils/libdw.h>

#include <array>
#include <cstdint>
#include <vector>

#include "analysis/profile/flat_index_map.hpp"

namespace perfscope::unwind {

// What the CFI row covering one pc says about its caller, in the forms nearly all x86-64 code
// takes: the CFA is rsp or rbp plus an offset, the return address and a saved rbp sit at fixed
// offsets from it, rsp's caller value is the CFA. Anything else (expressions, signal frames,
// other CFA registers) is `unsupported` and sends the sample through libdwfl, which evaluates
// the full CFI; a sample walked by these rules gets exactly the frames libdwfl would give it.
struct CachedFrameRule {
  enum class Kind : std::uint8_t { unsupported, walk, outermost };
  enum class Saved : std::uint8_t { same, undefined, at_cfa };
  static constexpr std::uint32_t no_expression = ~std::uint32_t{0};
  Kind kind = Kind::unsupported;
  Saved frame_pointer = Saved::same;
  std::uint8_t cfa_register = 0;
  // Index into the file's CFA expressions when the CFA is computed (PLT entries), not reg+offset.
  std::uint32_t cfa_expression = no_expression;
  std::int64_t cfa_offset = 0, return_address_offset = 0, frame_pointer_offset = 0;
};

namespace x86_64_dwarf {
inline constexpr int rbp = 6, rsp = 7, return_address = 16;
}

// A DW_CFA_def_cfa_expression over rsp, rbp and rip with arithmetic only, as the linker writes
// for PLT entries (CFA = rsp + 8 + 8 * ((rip & 15) >= 11)).
struct CfaExpression {
  static constexpr std::size_t max_ops = 16;
  std::array<Dwarf_Op, max_ops> ops{};
  std::size_t count = 0;
};

// Evaluates a supported CFA expression; false on a stack underflow or overflow, or when it needs
// rbp and its value is not known.
bool evaluate_cfa_expression(const CfaExpression& expression, std::uint64_t rsp, std::uint64_t rbp,
                             bool rbp_known, std::uint64_t rip, std::uint64_t& cfa) noexcept;

// The rule of the CFI row holding `frame`, or `unsupported`. A CFA expression goes to
// `expressions`.
CachedFrameRule rule_of_frame(Dwarf_Frame* frame, std::vector<CfaExpression>& expressions);

// The rules of the pcs of one unwind table that a walk has met, each read once through libdw.
class CfiRules {
 public:
  // The rule of the row covering `pc` (as the table's addresses go) in `cfi` (null: none).
  const CachedFrameRule& rule_at(Dwarf_CFI* cfi, std::uint64_t pc);
  const CfaExpression& expression(std::uint32_t index) const noexcept {
    return expressions_[index];
  }

 private:
  detail::FlatIndexMap rule_of_pc_{64};
  std::vector<CachedFrameRule> rules_;
  std::vector<CfaExpression> expressions_;
};

}  // namespace perfscope::unwind
