// LlvmDecoder: LLVM's MC layer behind a plain class. MCDisassembler decodes, MCInstPrinter writes
// the text (objdump_spelling rewrites it the way objdump writes it) and MCInstrAnalysis says which
// instructions branch and where. Compiled without RTTI, as Debian's LLVM is.
// It formats without {fmt}: a vtable this file emitted for one of fmt's templates (its memory
// buffer) would carry no type information, and where the linker keeps that copy for the whole
// program, UBSan's vptr check refuses every fmt::format call (seen at -O1).
#include "analysis/annotate/llvm_decoder.hpp"

#include <elf.h>
#include <llvm/MC/MCAsmInfo.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCDisassembler/MCDisassembler.h>
#include <llvm/MC/MCInst.h>
#include <llvm/MC/MCInstPrinter.h>
#include <llvm/MC/MCInstrAnalysis.h>
#include <llvm/MC/MCInstrInfo.h>
#include <llvm/MC/MCRegisterInfo.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/MCTargetOptions.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>

#include <mutex>
#include <stdexcept>
#include <string>

#include "analysis/annotate/objdump_spelling.hpp"

// LLVM's per-target registration functions (TargetSelect.h declares them for every target LLVM
// was built with; only these two are linked).
extern "C" void LLVMInitializeX86TargetInfo();
extern "C" void LLVMInitializeX86TargetMC();
extern "C" void LLVMInitializeX86Disassembler();
extern "C" void LLVMInitializeAArch64TargetInfo();
extern "C" void LLVMInitializeAArch64TargetMC();
extern "C" void LLVMInitializeAArch64Disassembler();

namespace perfscope {

namespace {

void register_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86Disassembler();
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64Disassembler();
  });
}

// x86's printer variants: 0 is AT&T, 1 Intel.
constexpr unsigned att_variant = 0;
constexpr unsigned intel_variant = 1;

}  // namespace

class LlvmDecoder::State {
 public:
  State(Architecture architecture, AssemblySyntax syntax)
      : architecture_(architecture), syntax_(syntax) {
    register_llvm_targets();
    bool x86 = architecture == Architecture::x86_64;
    const std::string triple_name = x86 ? "x86_64-unknown-linux-gnu" : "aarch64-unknown-linux-gnu";
    llvm::Triple triple(triple_name);
    std::string error;
    target_ = llvm::TargetRegistry::lookupTarget(triple_name, error);
    if (!target_) {
      throw std::runtime_error("LLVM cannot disassemble " +
                               std::string(architecture_name(architecture)) + ": " + error);
    }
    registers_.reset(target_->createMCRegInfo(triple_name));
    llvm::MCTargetOptions options;
    assembly_info_.reset(target_->createMCAsmInfo(*registers_, triple_name, options));
    // Every extension LLVM knows (SVE2, SME, MTE ... on AArch64; x86 decodes all without asking),
    // as llvm-objdump does: annotate reads code built for any CPU.
    subtarget_.reset(target_->createMCSubtargetInfo(triple_name, "", x86 ? "" : "+all"));
    instructions_.reset(target_->createMCInstrInfo());
    if (!registers_ || !assembly_info_ || !subtarget_ || !instructions_) {
      throw std::runtime_error("LLVM has no " + std::string(architecture_name(architecture)) +
                               " machine-code layer");
    }
    context_ = std::make_unique<llvm::MCContext>(triple, assembly_info_.get(), registers_.get(),
                                                 subtarget_.get());
    decoder_.reset(target_->createMCDisassembler(*subtarget_, *context_));
    analysis_.reset(target_->createMCInstrAnalysis(instructions_.get()));
    if (x86) {
      att_printer_ = make_printer(triple, att_variant);
      intel_printer_ = make_printer(triple, intel_variant);
      // Intel immediates in hex as objdump writes them; AT&T's too.
      att_printer_->setPrintImmHex(true);
      intel_printer_->setPrintImmHex(true);
    } else {
      att_printer_ = make_printer(triple, 0);
    }
    if (!decoder_ || !att_printer_ || (x86 && !intel_printer_)) {
      throw std::runtime_error("LLVM has no " + std::string(architecture_name(architecture)) +
                               " disassembler");
    }
  }

  std::vector<Instruction> disassemble(std::span<const std::uint8_t> code, std::uint64_t address) {
    std::vector<Instruction> out;
    const std::size_t minimum = architecture_ == Architecture::x86_64 ? 1 : 4;
    std::size_t offset = 0;
    while (offset < code.size()) {
      llvm::ArrayRef<std::uint8_t> rest(code.data() + offset, code.size() - offset);
      const std::uint64_t at = address + offset;
      llvm::MCInst decoded;
      std::uint64_t size = 0;
      auto status = decoder_->getInstruction(decoded, size, rest, at, llvm::nulls());
      if (status == llvm::MCDisassembler::Fail || size == 0) {
        size = std::clamp<std::uint64_t>(size, minimum, rest.size());
        out.push_back(undecoded(rest.take_front(size), at));
        offset += size;
        continue;
      }
      size = std::min<std::uint64_t>(size, rest.size());
      // LLVM decodes x86's lock prefix as an instruction of its own; objdump writes it in front
      // of the instruction it locks, and a sample in the pair lands on the prefix's address.
      if (is_lock_prefix(decoded, size) && size < rest.size()) {
        llvm::MCInst locked;
        std::uint64_t locked_size = 0;
        if (decoder_->getInstruction(locked, locked_size, rest.drop_front(size), at + size,
                                     llvm::nulls()) == llvm::MCDisassembler::Success &&
            locked_size > 0 && size + locked_size <= rest.size()) {
          Instruction instruction = described(locked, rest.slice(size, locked_size), at + size);
          instruction.address = at;
          instruction.size = static_cast<std::uint8_t>(size + locked_size);
          instruction.bytes.insert(instruction.bytes.begin(), rest.front());
          instruction.mnemonic = "lock " + instruction.mnemonic;
          out.push_back(std::move(instruction));
          offset += size + locked_size;
          continue;
        }
      }
      out.push_back(described(decoded, rest.take_front(size), at));
      offset += size;
    }
    return out;
  }

 private:
  std::unique_ptr<llvm::MCInstPrinter> make_printer(const llvm::Triple& triple, unsigned variant) {
    std::unique_ptr<llvm::MCInstPrinter> printer(target_->createMCInstPrinter(
        triple, variant, *assembly_info_, *instructions_, *registers_));
    if (printer) printer->setPrintBranchImmAsAddress(true);
    return printer;
  }

  bool is_lock_prefix(const llvm::MCInst& decoded, std::uint64_t size) const {
    if (architecture_ != Architecture::x86_64 || size != 1) return false;
    return instructions_->getName(decoded.getOpcode()) == "LOCK_PREFIX";
  }

  std::string printed(llvm::MCInstPrinter& printer, const llvm::MCInst& decoded, std::uint64_t at) {
    text_.clear();
    llvm::raw_string_ostream stream(text_);
    printer.printInst(&decoded, at, "", *subtarget_, stream);
    stream.flush();
    return text_;
  }

  Instruction described(const llvm::MCInst& decoded, llvm::ArrayRef<std::uint8_t> bytes,
                        std::uint64_t at) {
    Instruction out;
    out.address = at;
    out.size = static_cast<std::uint8_t>(bytes.size());
    out.bytes.assign(bytes.begin(), bytes.end());
    if (analysis_) {
      if (analysis_->isCall(decoded)) {
        out.branch = BranchKind::call;
      } else if (analysis_->isReturn(decoded)) {
        out.branch = BranchKind::ret;
      } else if (analysis_->isBranch(decoded)) {
        out.branch = BranchKind::jump;
      }
      std::uint64_t destination = 0;
      if ((out.branch == BranchKind::jump || out.branch == BranchKind::call) &&
          analysis_->evaluateBranch(decoded, at, bytes.size(), destination)) {
        out.target = destination;
      }
    }
    std::span<const std::uint8_t> encoding(bytes.data(), bytes.size());
    SpelledInstruction spelled;
    if (architecture_ == Architecture::aarch64) {
      spelled = aarch64_as_objdump(printed(*att_printer_, decoded, at), out.target);
    } else if (syntax_ == AssemblySyntax::intel) {
      spelled = x86_intel_as_objdump(printed(*intel_printer_, decoded, at), encoding, out.target);
    } else {
      std::string att = printed(*att_printer_, decoded, at);
      spelled =
          x86_att_as_objdump(att, printed(*intel_printer_, decoded, at), encoding, out.target);
    }
    out.mnemonic = std::move(spelled.mnemonic);
    out.operands = std::move(spelled.operands);
    return out;
  }

  static Instruction undecoded(llvm::ArrayRef<std::uint8_t> bytes, std::uint64_t at) {
    Instruction out;
    out.address = at;
    out.size = static_cast<std::uint8_t>(bytes.size());
    out.bytes.assign(bytes.begin(), bytes.end());
    out.mnemonic = ".byte";
    static constexpr char hex[] = "0123456789abcdef";
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (i != 0) out.operands += ',';
      out.operands += "0x";
      out.operands += hex[bytes[i] >> 4];
      out.operands += hex[bytes[i] & 0xf];
    }
    return out;
  }

  Architecture architecture_;
  AssemblySyntax syntax_;
  const llvm::Target* target_ = nullptr;
  std::unique_ptr<llvm::MCRegisterInfo> registers_;
  std::unique_ptr<llvm::MCAsmInfo> assembly_info_;
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget_;
  std::unique_ptr<llvm::MCInstrInfo> instructions_;
  std::unique_ptr<llvm::MCContext> context_;
  std::unique_ptr<llvm::MCDisassembler> decoder_;
  std::unique_ptr<llvm::MCInstrAnalysis> analysis_;
  std::unique_ptr<llvm::MCInstPrinter> att_printer_;  // AArch64's only printer
  std::unique_ptr<llvm::MCInstPrinter> intel_printer_;
  std::string text_;  // reused by every printing
};

LlvmDecoder::LlvmDecoder(Architecture architecture, AssemblySyntax syntax)
    : state_(std::make_unique<State>(architecture, syntax)) {}

LlvmDecoder::~LlvmDecoder() = default;

std::vector<Instruction> LlvmDecoder::disassemble(std::span<const std::uint8_t> code,
                                                  std::uint64_t address) {
  return state_->disassemble(code, address);
}

}  // namespace perfscope
