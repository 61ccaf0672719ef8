// Disassembler: machine code in, one decoded instruction each out, in process (no objdump).
// x86-64 in AT&T syntax (objdump's default) and AArch64, through capstone.
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
  std::string mnemonic;             // "add", "b.ne"; "(bad)" for bytes that decode to nothing
  std::string operands;             // "%rcx,%rax", "x0, x1, #0x1"
  BranchKind branch = BranchKind::none;
  // A direct jump's or call's destination; nullopt for indirect ones and everything else.
  std::optional<std::uint64_t> target;
};

class Disassembler {
 public:
  virtual ~Disassembler() = default;
  virtual Architecture architecture() const noexcept = 0;
  // Decodes `code`, loaded at `address`, to its end. Bytes that decode to nothing become one
  // "(bad)" instruction each (one byte on x86-64, four on AArch64) and decoding goes on after
  // them, as objdump does.
  virtual std::vector<Instruction> disassemble(std::span<const std::uint8_t> code,
                                               std::uint64_t address) = 0;
};

// The capstone disassembler for `architecture`; throws std::runtime_error when capstone cannot
// open it (a capstone built without that architecture).
std::unique_ptr<Disassembler> make_disassembler(Architecture architecture);

}  // namespace perfscope
