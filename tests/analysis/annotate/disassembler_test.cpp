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

// Numbers in one spelling: unsigned 64-bit decimal, whatever base and sign they were written in
// ("0x8", "8", "#0x8", "-0x8").
std::string canonical_numbers(const std::string& text) {
  static const std::regex number(R"((-?)(0x[0-9a-f]+|\b[0-9]+\b))");
  std::string out;
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), number), end; it != end; ++it) {
    const std::smatch& match = *it;
    out.append(last, match[0].first);
    std::string digits = match[2];
    std::uint64_t value =
        digits.starts_with("0x") ? std::stoull(digits.substr(2), nullptr, 16) : std::stoull(digits);
    // Negative as two's complement: capstone writes "$-1" where objdump writes
    // "$0xffffffffffffffff".
    out += std::to_string(match[1].length() > 0 ? 0 - value : value);
    last = match[0].second;
  }
  out.append(last, text.cend());
  return out;
}

// One spelling for both tools, "modulo syntax settings": objdump's comments and symbolic names
// of targets dropped, spaces collapsed, numbers in decimal, and the places where the two spell
// the same instruction differently folded:
//   x86-64: capstone writes the operand-size suffix always (movq), objdump only when the operands
//   leave the size open; objdump writes a zero displacement (0x0(%rax)) and scale 1
//   ((%rax,%rax,1)), capstone not; objdump writes the segment prefix of a nop before the
//   mnemonic (cs nopw), capstone in the operand (%cs:), and drops no redundant data16 prefix;
//   a 64-bit move to an XMM register is movq to objdump, movd to capstone;
//   66 90 is "xchg %ax,%ax" to objdump and "nop" to capstone; a shift by one is "sar %rsi" to
//   objdump and "sar $1, %rsi" to capstone; branch targets are bare hex in objdump.
//   AArch64: capstone 4 writes movz where objdump writes its alias mov; branch and adrp targets
//   are bare hex in objdump, "#0x..." in capstone.
std::string normalize(std::string text, Architecture architecture) {
  for (const char* comment : {" <", "\t<", " #", "\t#", " //", "\t//"}) {
    std::size_t at = text.find(comment);
    // AArch64 immediates start with '#' too: only objdump's "  // comment" and "<name>" go.
    if (architecture == Architecture::aarch64 && comment[1] == '#') continue;
    if (at != std::string::npos) text.erase(at);
  }
  std::string collapsed;
  for (char c : text) {
    if (c == '\t') c = ' ';
    if (c == ' ' && (collapsed.empty() || collapsed.back() == ' ' || collapsed.back() == ',')) {
      continue;
    }
    collapsed += c;
  }
  while (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
  std::size_t space = collapsed.find(' ');
  std::string mnemonic = collapsed.substr(0, space);
  std::string operands = space == std::string::npos ? "" : collapsed.substr(space + 1);
  auto bare_hex = [](std::string& target) {
    if (std::regex_match(target, std::regex("[0-9a-f]+"))) target = "0x" + target;
  };
  if (architecture == Architecture::x86_64) {
    while ((mnemonic == "data16" || mnemonic == "cs" || mnemonic == "ds") && !operands.empty()) {
      space = operands.find(' ');
      mnemonic = operands.substr(0, space);
      operands = space == std::string::npos ? "" : operands.substr(space + 1);
    }
    if (mnemonic == "xchg" && operands == "%ax,%ax") mnemonic = "nop", operands.clear();
    // A 64-bit move between a general register and an XMM one: movq to objdump, movd to capstone.
    if (mnemonic == "movd" && operands.find("%xmm") != std::string::npos &&
        std::regex_search(operands, std::regex("%r[0-9a-z]+"))) {
      mnemonic = "movq";
    }
    if (mnemonic.starts_with('j') || mnemonic.starts_with("call")) bare_hex(operands);
    operands = std::regex_replace(operands, std::regex("%(cs|ds):"), "");
    operands = canonical_numbers(operands);
    operands = std::regex_replace(operands, std::regex(R"((^|[^0-9a-z_])0\()"), "$1(");
    operands = std::regex_replace(operands, std::regex(R"(,1\))"), ")");
    static const std::regex shift("(sar|shr|shl|sal|rol|ror|rcl|rcr)[bwlq]?");
    if (std::regex_match(mnemonic, shift) && operands.starts_with("$1,")) operands.erase(0, 3);
    static const std::regex sized(
        "(push|pop|mov|call|ret|jmp|add|sub|cmp|test|xor|and|or|lea|imul|inc|dec|neg|not|shl|"
        "shr|sar|sal|movabs|nop|adc|sbb|rol|ror|xchg|bt|bts|btr|cmpxchg|xadd|mul|div|idiv)[bwlq]");
    if (std::regex_match(mnemonic, sized)) mnemonic.pop_back();
  } else {
    if (mnemonic == "movz") mnemonic = "mov";
    static const std::regex branch("b|bl|cbz|cbnz|tbz|tbnz|adr|adrp|b\\..*");
    if (std::regex_match(mnemonic, branch) && !operands.empty()) {
      std::size_t comma = operands.rfind(',');
      std::string target = operands.substr(comma == std::string::npos ? 0 : comma + 1);
      bare_hex(target);
      operands = operands.substr(0, comma == std::string::npos ? 0 : comma + 1) + target;
    }
    operands = canonical_numbers(operands);
    operands = std::regex_replace(operands, std::regex("#"), "");
  }
  return operands.empty() ? mnemonic : mnemonic + " " + operands;
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
      std::string mine = normalize(ours[i].mnemonic + " " + ours[i].operands, architecture);
      std::string expected = normalize(theirs.text, architecture);
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
