// The capstone disassembler against GNU objdump on every instruction of real binaries: the
// test workloads (x86-64) and a cross-compiled AArch64 object. The encodings are taken from
// objdump's listing (one function's bytes are contiguous there), decoded by us from each
// function's start, and compared instruction by instruction: address, length, mnemonic and
// operands after the syntax differences between the two are normalized away.
#include "perfscope/analysis/annotate/disassembler.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

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

// One spelling for both tools: comments and symbolic target names dropped, spaces collapsed,
// hex immediates without their "0x" and "#", known aliases folded.
std::string normalize(std::string text) {
  for (const char* comment : {" <", "\t<", " #", "\t#", " //", "\t//"}) {
    std::size_t at = text.find(comment);
    if (at != std::string::npos &&
        !(comment[1] == '#' && text.compare(at + 2, 2, "0x") == 0 && false)) {
      text.erase(at);
    }
  }
  std::string out;
  for (char c : text) {
    if (c == '\t') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ' || out.back() == ',')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  out = std::regex_replace(out, std::regex(R"(#?0x([0-9a-f]+))"), "$1");
  out = std::regex_replace(out, std::regex(R"(#)"), "");
  return out;
}

struct Comparison {
  std::size_t instructions = 0;
  std::vector<std::string> differences;
};

Comparison compare_with_objdump(const std::string& objdump, const std::string& binary,
                                Architecture architecture) {
  Comparison result;
  pt::CommandResult listing = pt::run_command({objdump, "-d", "--insn-width=16", binary});
  EXPECT_EQ(listing.exit_status, 0) << listing.err;
  auto functions = parse_objdump(listing.out, architecture);
  EXPECT_GT(functions.size(), 3u) << listing.out.substr(0, 2000);
  auto disassembler = perfscope::make_disassembler(architecture);
  for (const ObjdumpFunction& function : functions) {
    if (function.instructions.empty()) continue;
    std::vector<std::uint8_t> code;
    for (const auto& instruction : function.instructions) {
      code.insert(code.end(), instruction.bytes.begin(), instruction.bytes.end());
    }
    auto ours = disassembler->disassemble(code, function.instructions.front().address);
    if (ours.size() != function.instructions.size()) {
      result.differences.push_back(fmt::format("{}: {} instructions, objdump has {}", function.name,
                                               ours.size(), function.instructions.size()));
      continue;
    }
    for (std::size_t i = 0; i < ours.size(); ++i) {
      const ObjdumpInstruction& theirs = function.instructions[i];
      ++result.instructions;
      std::string mine = normalize(ours[i].mnemonic + " " + ours[i].operands);
      std::string expected = normalize(theirs.text);
      if (ours[i].address != theirs.address || ours[i].size != theirs.bytes.size() ||
          mine != expected) {
        result.differences.push_back(fmt::format("{} {:#x}: ours '{}' ({} bytes), objdump '{}'",
                                                 function.name, theirs.address, mine, ours[i].size,
                                                 expected));
      }
    }
  }
  return result;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (std::size_t i = 0; i < lines.size() && i < 40; ++i) out += lines[i] + "\n";
  return out;
}

TEST(Disassembler, X86AgreesWithObjdumpOnEveryInstructionOfTheTestBinaries) {
  if (::access(PERFSCOPE_OBJDUMP, X_OK) != 0)
    GTEST_SKIP() << "no objdump (binutils) to compare with";
  for (const char* binary : {PERFSCOPE_KNOWN_ANSWER_FP_PATH, PERFSCOPE_KNOWN_ANSWER_NOFP_PATH,
                             PERFSCOPE_WORK_HELPER_PATH}) {
    Comparison comparison = compare_with_objdump(PERFSCOPE_OBJDUMP, binary, Architecture::x86_64);
    EXPECT_GT(comparison.instructions, 100u) << binary;
    EXPECT_TRUE(comparison.differences.empty()) << binary << ": " << comparison.differences.size()
                                                << " of " << comparison.instructions << " differ:\n"
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
  Comparison comparison = compare_with_objdump(objdump, object, Architecture::aarch64);
  EXPECT_GT(comparison.instructions, 30u);
  EXPECT_TRUE(comparison.differences.empty())
      << comparison.differences.size() << " of " << comparison.instructions << " differ:\n"
      << joined(comparison.differences);
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
  EXPECT_EQ(decoded[0].mnemonic, "(bad)");
  EXPECT_EQ(decoded[0].size, 1u);
  EXPECT_EQ(decoded[1].mnemonic, "nop");
  EXPECT_EQ(decoded[1].address, 0x11u);
}

}  // namespace
