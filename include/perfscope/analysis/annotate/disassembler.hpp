// Disassembler: machine code in, one decoded instruction each out, in process (no objdump).
// x86-64 (through AVX-512, AMX and APX) and AArch64 (through SVE2 and SME), decoded by LLVM's MC
// disassembler and spelled as GNU objdump spells them: AT&T or Intel syntax on x86-64.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope {

enum class Architecture { x86_64, aarch64 };

// "x86-64", "aarch64".
std::string_view architecture_name(Architecture architecture) noexcept;
// The architecture of an ELF e_machine value; nullopt for one no disassembler here decodes.
std::optional<Architecture> architecture_of_elf_machine(std::uint16_t machine) noexcept;

// x86-64's two spellings (objdump -d and objdump -d -M intel); AArch64 has one.
enum class AssemblySyntax : std::uint8_t { att, intel };

enum class BranchKind : std::uint8_t {
  none,
  jump,  // conditional or not, direct or not
  call,
  ret,
};

struct Instruction {
  std::uint64_t address = 0;
  std::uint8_t size = 0;            // bytes
  std::vector<std::uint8_t> bytes;  // the encoding
  // "add", "lock cmpxchg", "b.ne"; ".byte" for bytes that decode to nothing.
  std::string mnemonic;
  // "%rcx,%rax", "x0, x1, #0x1"; a direct branch's destination in bare hex, as objdump writes it.
  std::string operands;
  BranchKind branch = BranchKind::none;
  // A direct jump's or call's destination; nullopt for indirect ones and everything else.
  std::optional<std::uint64_t> target;
};

class Disassembler {
 public:
  virtual ~Disassembler() = default;
  virtual Architecture architecture() const noexcept = 0;
  // Decodes `code`, loaded at `address`, to its end. Bytes that decode to nothing become one
  // ".byte 0x..." entry each, as long as the decoder says the undecodable instruction is (one byte
  // at least on x86-64, four on AArch64), so the instructions after them stay in step.
  virtual std::vector<Instruction> disassemble(std::span<const std::uint8_t> code,
                                               std::uint64_t address) = 0;
};

// The disassembler for `architecture`; `syntax` matters on x86-64 only. Throws
// std::runtime_error when LLVM was built without that architecture.
std::unique_ptr<Disassembler> make_disassembler(Architecture architecture,
                                                AssemblySyntax syntax = AssemblySyntax::att);

}  // namespace perfscope
