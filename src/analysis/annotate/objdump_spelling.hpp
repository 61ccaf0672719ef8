// objdump's spelling of an instruction that LLVM's instruction printer wrote. perf annotate shows
// objdump's text, and its users read it: LLVM writes the same instruction with other words in a
// few places (operand-size suffixes, "lock" as an instruction of its own, ", " between operands,
// signed immediates, scale 1 and a zero displacement left out). These functions rewrite LLVM's
// text; they know nothing of LLVM's types, so they are tested on text alone.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace perfscope {

struct SpelledInstruction {
  std::string mnemonic;  // with its prefixes: "lock cmpxchg", "rep stos", "cs nopw"
  std::string operands;
};

// LLVM's text of one instruction split into its prefix words, its mnemonic and its operands:
// "\trep\t\tstosq\t%rax, %es:(%rdi)" has the prefix "rep".
struct PrintedInstruction {
  std::string prefix;
  std::string mnemonic;
  std::string operands;
};
PrintedInstruction split_printed_instruction(std::string_view llvm_text);

// x86-64 in AT&T syntax. `att` and `intel` are LLVM's two printings of the instruction (the Intel
// mnemonic tells which letters of the AT&T one are a size suffix), `bytes` its encoding (which
// says whether a displacement is encoded and which prefixes LLVM left out) and `target` a direct
// branch's destination.
SpelledInstruction x86_att_as_objdump(std::string_view att, std::string_view intel,
                                      std::span<const std::uint8_t> bytes,
                                      std::optional<std::uint64_t> target);

// x86-64 in Intel syntax, as `objdump -M intel` writes it.
SpelledInstruction x86_intel_as_objdump(std::string_view intel, std::span<const std::uint8_t> bytes,
                                        std::optional<std::uint64_t> target);

// AArch64 (LLVM printed its immediates in decimal).
SpelledInstruction aarch64_as_objdump(std::string_view text, std::optional<std::uint64_t> target);

}  // namespace perfscope
