// The Disassembler through capstone: cs_disasm_iter into one reused cs_insn, details on (the
// groups say which instructions branch, the operands where to).
#include <capstone/capstone.h>
#include <elf.h>
#include <fmt/format.h>

#include <stdexcept>

#include "perfscope/analysis/annotate/disassembler.hpp"

namespace perfscope {

std::string_view architecture_name(Architecture architecture) noexcept {
  return architecture == Architecture::x86_64 ? "x86-64" : "aarch64";
}

std::optional<Architecture> architecture_of_elf_machine(std::uint16_t machine) noexcept {
  if (machine == EM_X86_64) return Architecture::x86_64;
  if (machine == EM_AARCH64) return Architecture::aarch64;
  return std::nullopt;
}

namespace {

class CapstoneDisassembler final : public Disassembler {
 public:
  explicit CapstoneDisassembler(Architecture architecture) : architecture_(architecture) {
    bool x86 = architecture == Architecture::x86_64;
    cs_err error = x86 ? cs_open(CS_ARCH_X86, CS_MODE_64, &handle_)
                       : cs_open(CS_ARCH_ARM64, CS_MODE_LITTLE_ENDIAN, &handle_);
    if (error != CS_ERR_OK) {
      throw std::runtime_error(fmt::format("capstone cannot disassemble {}: {}",
                                           architecture_name(architecture), cs_strerror(error)));
    }
    // objdump's defaults: AT&T syntax on x86-64.
    if (x86) cs_option(handle_, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
    cs_option(handle_, CS_OPT_DETAIL, CS_OPT_ON);
    instruction_ = cs_malloc(handle_);
    if (!instruction_) {
      cs_close(&handle_);
      throw std::bad_alloc();
    }
  }
  ~CapstoneDisassembler() override {
    cs_free(instruction_, 1);
    cs_close(&handle_);
  }
  CapstoneDisassembler(const CapstoneDisassembler&) = delete;
  CapstoneDisassembler& operator=(const CapstoneDisassembler&) = delete;

  Architecture architecture() const noexcept override { return architecture_; }

  std::vector<Instruction> disassemble(std::span<const std::uint8_t> code,
                                       std::uint64_t address) override {
    std::vector<Instruction> out;
    const std::uint8_t* bytes = code.data();
    std::size_t left = code.size();
    std::uint64_t at = address;
    const std::size_t bad_size = architecture_ == Architecture::x86_64 ? 1 : 4;
    while (left > 0) {
      if (cs_disasm_iter(handle_, &bytes, &left, &at, instruction_)) {
        out.push_back(decoded(*instruction_));
        continue;
      }
      std::size_t skip = std::min(bad_size, left);
      Instruction bad;
      bad.address = at;
      bad.size = static_cast<std::uint8_t>(skip);
      bad.bytes.assign(bytes, bytes + skip);
      bad.mnemonic = "(bad)";
      out.push_back(std::move(bad));
      bytes += skip;
      left -= skip;
      at += skip;
    }
    return out;
  }

 private:
  Instruction decoded(const cs_insn& insn) const {
    Instruction out;
    out.address = insn.address;
    out.size = static_cast<std::uint8_t>(insn.size);
    out.bytes.assign(insn.bytes, insn.bytes + insn.size);
    out.mnemonic = insn.mnemonic;
    out.operands = insn.op_str;
    if (architecture_ == Architecture::aarch64) {
      out.branch = aarch64_branch(out.mnemonic);
    } else if (cs_insn_group(handle_, &insn, CS_GRP_CALL)) {
      out.branch = BranchKind::call;
    } else if (cs_insn_group(handle_, &insn, CS_GRP_RET)) {
      out.branch = BranchKind::ret;
    } else if (cs_insn_group(handle_, &insn, CS_GRP_JUMP)) {
      out.branch = BranchKind::jump;
    }
    if (out.branch == BranchKind::jump || out.branch == BranchKind::call) {
      out.target = direct_target(insn);
    }
    return out;
  }

  // capstone 4's AArch64 groups miss branches (b.cond, cbz, tbz) and calls (bl lands in the
  // jump group): the mnemonic says it.
  static BranchKind aarch64_branch(std::string_view mnemonic) noexcept {
    if (mnemonic == "bl" || mnemonic == "blr") return BranchKind::call;
    if (mnemonic == "ret") return BranchKind::ret;
    if (mnemonic == "b" || mnemonic.starts_with("b.") || mnemonic == "br" || mnemonic == "cbz" ||
        mnemonic == "cbnz" || mnemonic == "tbz" || mnemonic == "tbnz") {
      return BranchKind::jump;
    }
    return BranchKind::none;
  }

  // The immediate operand of a direct branch: the destination capstone already made absolute.
  std::optional<std::uint64_t> direct_target(const cs_insn& insn) const noexcept {
    if (!insn.detail) return std::nullopt;
    if (architecture_ == Architecture::x86_64) {
      const cs_x86& x86 = insn.detail->x86;
      if (x86.op_count == 1 && x86.operands[0].type == X86_OP_IMM) {
        return static_cast<std::uint64_t>(x86.operands[0].imm);
      }
      return std::nullopt;
    }
    const cs_arm64& arm64 = insn.detail->arm64;
    if (arm64.op_count > 0 && arm64.operands[arm64.op_count - 1].type == ARM64_OP_IMM) {
      return static_cast<std::uint64_t>(arm64.operands[arm64.op_count - 1].imm);
    }
    return std::nullopt;
  }

  Architecture architecture_;
  csh handle_ = 0;
  cs_insn* instruction_ = nullptr;
};

}  // namespace

std::unique_ptr<Disassembler> make_disassembler(Architecture architecture) {
  return std::make_unique<CapstoneDisassembler>(architecture);
}

}  // namespace perfscope
