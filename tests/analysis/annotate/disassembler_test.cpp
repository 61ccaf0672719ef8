// The disassembler against GNU objdump on every instruction of real binaries: the test workloads,
// this machine's C library (AT&T and Intel syntax), the AArch64 cross C library, a cross-compiled
// workload and hand-written AVX-512/AMX and SVE2/SME code. The encodings are taken from
// objdump's listing, decoded by us from each run's start, and compared instruction by
// instruction: address, length, and the text exactly as objdump writes it (less the target
// names and comments objdump adds beside it).
#include "perfscope/analysis/annotate/disassembler.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
using perfscope::Architecture;

struct ObjdumpInstruction {
  std::uint64_t address = 0;
  std::vector<std::uint8_t> bytes;
  std::string text;  // mnemonic and operands
};
struct ObjdumpFunction {
  std::string name;
  std::vector<ObjdumpInstruction> instructions;
};

// `objdump -d --insn-width=16` output: "<name>:" headers, then "  addr:\tbytes\ttext" lines.
// AArch64 prints each instruction as one 32-bit word, most significant digit first.
std::vector<ObjdumpFunction> parse_objdump(const std::string& text, Architecture architecture) {
  std::vector<ObjdumpFunction> functions;
  static const std::regex header(R"(^[0-9a-f]+ <(.*)>:$)");
  static const std::regex line(R"(^\s*([0-9a-f]+):\t([0-9a-f ]+)\t(.*)$)");
  std::istringstream stream(text);
  std::smatch match;
  for (std::string row; std::getline(stream, row);) {
    if (std::regex_match(row, match, header)) {
      functions.push_back({match[1], {}});
      continue;
    }
    if (functions.empty() || !std::regex_match(row, match, line)) continue;
    ObjdumpInstruction instruction;
    instruction.address = std::stoull(match[1], nullptr, 16);
    std::istringstream words(match[2].str());
    for (std::string word; words >> word;) {
      std::uint64_t value = std::stoull(word, nullptr, 16);
      std::size_t count = word.size() / 2;
      for (std::size_t i = 0; i < count; ++i) {
        std::size_t shift = architecture == Architecture::aarch64 ? 8 * i : 8 * (count - 1 - i);
        instruction.bytes.push_back(static_cast<std::uint8_t>(value >> shift));
      }
    }
    instruction.text = match[3];
    functions.back().instructions.push_back(std::move(instruction));
  }
  return functions;
}

// objdump's text without what objdump adds beside the instruction: the symbolic name of a
// target ("<main+0x10>"), its comments ("# 4010 <x>", "// #1"), and the padding after the
// mnemonic. Nothing of the instruction's own spelling is changed.
std::string without_annotations(std::string text, Architecture architecture) {
  for (const char* comment : {" <", "\t<", " #", "\t#", " //", "\t//"}) {
    // AArch64 immediates start with '#' too: only "// comment" and "<name>" go there.
    if (architecture == Architecture::aarch64 && comment[1] == '#') continue;
    std::size_t at = text.find(comment);
    if (at != std::string::npos) text.erase(at);
  }
  std::string collapsed;
  for (char c : text) {
    if (c == '\t') c = ' ';
    if (c == ' ' && (collapsed.empty() || collapsed.back() == ' ')) continue;
    collapsed += c;
  }
  while (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
  return collapsed;
}

struct Comparison {
  std::size_t instructions = 0;
  std::vector<std::string> differences;
};

struct ComparisonInput {
  std::string objdump;
  std::string binary;
  Architecture architecture = Architecture::x86_64;
  perfscope::AssemblySyntax syntax = perfscope::AssemblySyntax::att;
  // Only the functions whose names match (all when empty).
  std::string functions;
};

Comparison compare_with_objdump(const ComparisonInput& input) {
  Comparison result;
  std::vector<std::string> command{input.objdump, "-d", "--insn-width=16"};
  if (input.syntax == perfscope::AssemblySyntax::intel) command.push_back("-Mintel");
  command.push_back(input.binary);
  pt::CommandResult listing = pt::run_command(command);
  EXPECT_EQ(listing.exit_status, 0) << listing.err;
  auto functions = parse_objdump(listing.out, input.architecture);
  EXPECT_FALSE(functions.empty()) << listing.out.substr(0, 2000);
  auto disassembler = perfscope::make_disassembler(input.architecture, input.syntax);
  std::regex wanted(input.functions.empty() ? ".*" : input.functions);
  for (const ObjdumpFunction& listed : functions) {
    if (listed.instructions.empty() || !std::regex_search(listed.name, wanted)) continue;
    // objdump writes "..." for a run of zero bytes and goes on after it: each run of contiguous
    // instructions is decoded from its start.
    std::vector<ObjdumpFunction> runs;
    for (const auto& instruction : listed.instructions) {
      const auto* last = runs.empty() || runs.back().instructions.empty()
                             ? nullptr
                             : &runs.back().instructions.back();
      if (!last || last->address + last->bytes.size() != instruction.address) {
        runs.push_back({listed.name, {}});
      }
      runs.back().instructions.push_back(instruction);
    }
    for (const ObjdumpFunction& function : runs) {
      std::vector<std::uint8_t> code;
      for (const auto& instruction : function.instructions) {
        code.insert(code.end(), instruction.bytes.begin(), instruction.bytes.end());
      }
      auto ours = disassembler->disassemble(code, function.instructions.front().address);
      // In step while the addresses agree; the first disagreement ends the run's comparison.
      for (std::size_t i = 0; i < ours.size() && i < function.instructions.size(); ++i) {
        const ObjdumpInstruction& theirs = function.instructions[i];
        ++result.instructions;
        std::string mine =
            ours[i].operands.empty() ? ours[i].mnemonic : ours[i].mnemonic + " " + ours[i].operands;
        std::string expected = without_annotations(theirs.text, input.architecture);
        if (ours[i].address != theirs.address || ours[i].size != theirs.bytes.size() ||
            mine != expected) {
          result.differences.push_back(fmt::format("{} {:#x}: ours '{}' ({} bytes), objdump '{}'",
                                                   function.name, theirs.address, mine,
                                                   ours[i].size, expected));
          if (ours[i].address != theirs.address || ours[i].size != theirs.bytes.size()) break;
        }
      }
      if (ours.size() != function.instructions.size()) {
        result.differences.push_back(fmt::format("{}: {} instructions, objdump has {}",
                                                 function.name, ours.size(),
                                                 function.instructions.size()));
      }
    }
  }
  return result;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  // PERFSCOPE_ALL_DIFFERENCES=1 lists every one (while porting to a new objdump or LLVM).
  std::size_t shown = std::getenv("PERFSCOPE_ALL_DIFFERENCES") ? lines.size() : 200;
  for (std::size_t i = 0; i < lines.size() && i < shown; ++i) out += lines[i] + "\n";
  return out;
}

TEST(Disassembler, X86AgreesWithObjdumpOnEveryInstructionOfTheTestBinaries) {
  if (::access(PERFSCOPE_OBJDUMP, X_OK) != 0)
    GTEST_SKIP() << "no objdump (binutils) to compare with";
  for (const char* binary : {PERFSCOPE_KNOWN_ANSWER_FP_PATH, PERFSCOPE_KNOWN_ANSWER_NOFP_PATH,
                             PERFSCOPE_WORK_HELPER_PATH}) {
    Comparison comparison = compare_with_objdump(
        {PERFSCOPE_OBJDUMP, binary, Architecture::x86_64, perfscope::AssemblySyntax::att, ""});
    EXPECT_GT(comparison.instructions, 100u) << binary;
    EXPECT_TRUE(comparison.differences.empty()) << binary << ": " << comparison.differences.size()
                                                << " of " << comparison.instructions << " differ:\n"
                                                << joined(comparison.differences);
  }
}

// The C library of this machine: every glibc string function takes an AVX2 or EVEX path on a
// current server, and those are the functions people annotate.
std::string libc_path() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::size_t slash = line.find('/');
    if (slash != std::string::npos && line.find("/libc.so.6") != std::string::npos) {
      return line.substr(slash);
    }
  }
  return {};
}

TEST(Disassembler, X86AgreesWithObjdumpOnEveryInstructionOfTheCLibrary) {
  if (::access(PERFSCOPE_OBJDUMP, X_OK) != 0)
    GTEST_SKIP() << "no objdump (binutils) to compare with";
  std::string libc = libc_path();
  ASSERT_FALSE(libc.empty());
  for (auto syntax : {perfscope::AssemblySyntax::att, perfscope::AssemblySyntax::intel}) {
    Comparison comparison =
        compare_with_objdump({PERFSCOPE_OBJDUMP, libc, Architecture::x86_64, syntax, ""});
    EXPECT_GT(comparison.instructions, 100000u);
    EXPECT_TRUE(comparison.differences.empty())
        << comparison.differences.size() << " of " << comparison.instructions << " differ:\n"
        << joined(comparison.differences);
  }
}

TEST(Disassembler, Aarch64AgreesWithCrossObjdumpOnACrossCompiledBinary) {
  std::string object = PERFSCOPE_AARCH64_BINARY;
  if (object.empty() || ::access(object.c_str(), R_OK) != 0) {
    GTEST_SKIP() << "no AArch64 cross compiler here (apt-get install g++-aarch64-linux-gnu)";
  }
  const std::string objdump = "/usr/bin/aarch64-linux-gnu-objdump";
  if (::access(objdump.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no aarch64-linux-gnu-objdump (apt-get install binutils-aarch64-linux-gnu)";
  }
  Comparison comparison = compare_with_objdump(
      {objdump, object, Architecture::aarch64, perfscope::AssemblySyntax::att, ""});
  EXPECT_GT(comparison.instructions, 30u);
  EXPECT_TRUE(comparison.differences.empty())
      << comparison.differences.size() << " of " << comparison.instructions << " differ:\n"
      << joined(comparison.differences);
  // The cross C library: its string functions take SVE paths (__memcpy_sve, __strlen_asimd).
  const std::string libc = "/usr/aarch64-linux-gnu/lib/libc.so.6";
  if (::access(libc.c_str(), R_OK) != 0) return;
  comparison = compare_with_objdump(
      {objdump, libc, Architecture::aarch64, perfscope::AssemblySyntax::att, ""});
  EXPECT_GT(comparison.instructions, 100000u);
  EXPECT_TRUE(comparison.differences.empty())
      << comparison.differences.size() << " of " << comparison.instructions << " differ:\n"
      << joined(comparison.differences);
}

// Hand-written AVX-512 (masks, broadcast, rounding, gathers, VBMI, VNNI, FP16), AMX and SVE2/SME
// code: the instructions capstone 4 could not decode, spelled exactly as objdump spells them.
TEST(Disassembler, VectorInstructionsOfCurrentServersAgreeWithObjdump) {
  if (::access(PERFSCOPE_OBJDUMP, X_OK) != 0)
    GTEST_SKIP() << "no objdump (binutils) to compare with";
  Comparison x86 = compare_with_objdump({PERFSCOPE_OBJDUMP, PERFSCOPE_X86_VECTOR_OBJECT,
                                         Architecture::x86_64, perfscope::AssemblySyntax::att, ""});
  EXPECT_EQ(x86.instructions, 33u);
  EXPECT_TRUE(x86.differences.empty()) << joined(x86.differences);
  auto decoded = perfscope::make_disassembler(Architecture::x86_64)
                     ->disassemble(std::vector<std::uint8_t>{0x62, 0xf3, 0x7d, 0x40, 0x3e, 0x0f,
                                                             0x04, 0xc5, 0xfb, 0x93, 0xc1},
                                   0);
  ASSERT_EQ(decoded.size(), 2u);
  EXPECT_EQ(decoded[0].mnemonic + " " + decoded[0].operands, "vpcmpnequb (%rdi),%zmm16,%k1");
  EXPECT_EQ(decoded[1].mnemonic + " " + decoded[1].operands, "kmovd %k1,%eax");

  std::string aarch64_object = PERFSCOPE_AARCH64_VECTOR_OBJECT;
  const std::string objdump = "/usr/bin/aarch64-linux-gnu-objdump";
  if (aarch64_object.empty() || ::access(objdump.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no AArch64 binutils here (apt-get install binutils-aarch64-linux-gnu)";
  }
  Comparison arm = compare_with_objdump(
      {objdump, aarch64_object, Architecture::aarch64, perfscope::AssemblySyntax::att, ""});
  EXPECT_EQ(arm.instructions, 18u);
  EXPECT_TRUE(arm.differences.empty()) << joined(arm.differences);
}

TEST(Disassembler, BranchesCarryTheirKindAndTarget) {
  auto x86 = perfscope::make_disassembler(Architecture::x86_64);
  // call +0 (to the next instruction), jne -2 (to itself), ret
  std::vector<std::uint8_t> code{0xe8, 0x00, 0x00, 0x00, 0x00, 0x75, 0xfe, 0xc3};
  auto decoded = x86->disassemble(code, 0x1000);
  ASSERT_EQ(decoded.size(), 3u);
  EXPECT_EQ(decoded[0].branch, perfscope::BranchKind::call);
  EXPECT_EQ(decoded[0].target, 0x1005u);
  EXPECT_EQ(decoded[1].branch, perfscope::BranchKind::jump);
  EXPECT_EQ(decoded[1].target, 0x1005u);
  EXPECT_EQ(decoded[2].branch, perfscope::BranchKind::ret);
  EXPECT_FALSE(decoded[2].target);

  auto arm = perfscope::make_disassembler(Architecture::aarch64);
  // b.ne -4; bl +8; ret (little-endian words 0x54ffffe1, 0x94000002, 0xd65f03c0)
  std::vector<std::uint8_t> words{0xe1, 0xff, 0xff, 0x54, 0x02, 0x00,
                                  0x00, 0x94, 0xc0, 0x03, 0x5f, 0xd6};
  decoded = arm->disassemble(words, 0x2000);
  ASSERT_EQ(decoded.size(), 3u);
  EXPECT_EQ(decoded[0].mnemonic, "b.ne");
  EXPECT_EQ(decoded[0].branch, perfscope::BranchKind::jump);
  EXPECT_EQ(decoded[0].target, 0x1ffcu);
  EXPECT_EQ(decoded[1].branch, perfscope::BranchKind::call);
  EXPECT_EQ(decoded[1].target, 0x200cu);
  EXPECT_EQ(decoded[2].branch, perfscope::BranchKind::ret);
}

TEST(Disassembler, UndecodableBytesBecomeBadAndDecodingGoesOn) {
  auto x86 = perfscope::make_disassembler(Architecture::x86_64);
  // 0x06 (push %es) is invalid in 64-bit mode; then nop.
  std::vector<std::uint8_t> code{0x06, 0x90};
  auto decoded = x86->disassemble(code, 0x10);
  ASSERT_EQ(decoded.size(), 2u);
  EXPECT_EQ(decoded[0].mnemonic, ".byte");
  EXPECT_EQ(decoded[0].operands, "0x06");
  EXPECT_EQ(decoded[0].size, 1u);
  EXPECT_EQ(decoded[1].mnemonic, "nop");
  EXPECT_EQ(decoded[1].address, 0x11u);
}

}  // namespace
