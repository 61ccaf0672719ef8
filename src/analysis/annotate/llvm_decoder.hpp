// LlvmDecoder: LLVM's MC disassembler behind a class of our own types. Its source is compiled
// without RTTI (as Debian's LLVM is); keeping LLVM's types out of this header keeps every other
// file, the Disassembler implementation included, on the project's normal flags.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "perfscope/analysis/annotate/disassembler.hpp"

namespace perfscope {

class LlvmDecoder {
 public:
  // Throws std::runtime_error when LLVM was built without `architecture`.
  LlvmDecoder(Architecture architecture, AssemblySyntax syntax);
  ~LlvmDecoder();
  LlvmDecoder(const LlvmDecoder&) = delete;
  LlvmDecoder& operator=(const LlvmDecoder&) = delete;

  // Disassembler::disassemble's contract.
  std::vector<Instruction> disassemble(std::span<const std::uint8_t> code, std::uint64_t address);

 private:
  class State;
  std::unique_ptr<State> state_;
};

}  // namespace perfscope
