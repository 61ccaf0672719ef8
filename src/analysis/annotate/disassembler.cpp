// The Disassembler of the public header, over LlvmDecoder.
#include "perfscope/analysis/annotate/disassembler.hpp"

#include <elf.h>

#include "analysis/annotate/llvm_decoder.hpp"

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

class LlvmDisassembler final : public Disassembler {
 public:
  LlvmDisassembler(Architecture architecture, AssemblySyntax syntax)
      : architecture_(architecture), decoder_(architecture, syntax) {}

  Architecture architecture() const noexcept override { return architecture_; }

  std::vector<Instruction> disassemble(std::span<const std::uint8_t> code,
                                       std::uint64_t address) override {
    return decoder_.disassemble(code, address);
  }

 private:
  Architecture architecture_;
  LlvmDecoder decoder_;
};

}  // namespace

std::unique_ptr<Disassembler> make_disassembler(Architecture architecture, AssemblySyntax syntax) {
  return std::make_unique<LlvmDisassembler>(architecture, syntax);
}

}  // namespace perfscope
