// objdump's spelling of LLVM's printed instructions (see the header for why).
#include "analysis/annotate/objdump_spelling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope {

namespace {

bool is_prefix_word(std::string_view word) {
  static constexpr std::array<std::string_view, 9> words{
      "rep", "repne", "lock", "data16", "notrack", "xacquire", "xrelease", "{vex}", "{evex}"};
  return std::find(words.begin(), words.end(), word) != words.end();
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

bool is_hex_digit(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Operands split at the commas between them (not those inside parentheses or brackets).
std::vector<std::string_view> split_operands(std::string_view operands) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    char c = operands[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(operands.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < operands.size()) out.push_back(operands.substr(start));
  return out;
}

// x86's legacy prefixes, REX, VEX and EVEX, then the opcode and the ModRM byte: only as much
// decoding as says where a memory operand's displacement is and which prefixes were given.
struct X86Layout {
  int operand_size_prefixes = 0;  // 0x66 bytes
  bool segment_prefix = false;    // 0x2e, 0x3e, 0x26, 0x36
  std::uint8_t segment = 0;       // the last of them
  bool displacement = false;      // a memory operand with an encoded displacement
};

X86Layout x86_layout(std::span<const std::uint8_t> bytes) {
  X86Layout layout;
  std::size_t at = 0;
  while (at < bytes.size()) {
    std::uint8_t b = bytes[at];
    if (b == 0x66) {
      ++layout.operand_size_prefixes;
    } else if (b == 0x2e || b == 0x3e || b == 0x26 || b == 0x36) {
      layout.segment_prefix = true;
      layout.segment = b;
    } else if (b != 0x67 && b != 0xf0 && b != 0xf2 && b != 0xf3 && b != 0x64 && b != 0x65) {
      break;
    }
    ++at;
  }
  if (at < bytes.size() && (bytes[at] & 0xf0) == 0x40) ++at;  // REX
  if (at >= bytes.size()) return layout;
  std::uint8_t first = bytes[at];
  if (first == 0xc5) {
    at += 3;  // c5 xx opcode
  } else if (first == 0xc4 || first == 0x8f) {
    at += 4;  // c4 xx xx opcode (8f: AMD's XOP)
  } else if (first == 0x62) {
    at += 5;  // 62 xx xx xx opcode
  } else if (first == 0x0f && at + 1 < bytes.size() &&
             (bytes[at + 1] == 0x38 || bytes[at + 1] == 0x3a)) {
    at += 3;
  } else if (first == 0x0f) {
    at += 2;
  } else {
    at += 1;
  }
  if (at >= bytes.size()) return layout;
  std::uint8_t modrm = bytes[at];
  unsigned mod = modrm >> 6;
  unsigned rm = modrm & 7;
  if (mod == 1 || mod == 2) {
    layout.displacement = true;
  } else if (mod == 0 && rm == 5) {
    layout.displacement = true;  // rip-relative
  } else if (mod == 0 && rm == 4 && at + 1 < bytes.size() && (bytes[at + 1] & 7) == 5) {
    layout.displacement = true;  // SIB without a base
  }
  return layout;
}

bool starts_with_any(std::string_view text, std::initializer_list<std::string_view> starts) {
  return std::any_of(starts.begin(), starts.end(),
                     [&](std::string_view start) { return text.starts_with(start); });
}

// movs, stos, lods, scas, cmps, ins and outs with their size letters; not SSE's movsd and cmpsd
// (their operands are vector registers) nor movsx.
bool is_string_instruction(std::string_view mnemonic, std::string_view operands) {
  return starts_with_any(mnemonic, {"movs", "stos", "lods", "scas", "cmps", "ins", "outs"}) &&
         mnemonic.size() <= 5 && mnemonic != "movsx" && operands.find("xmm") == std::string::npos;
}

// The width, in bits, that an AT&T size suffix names.
int suffix_bits(char suffix) {
  switch (suffix) {
    case 'b': return 8;
    case 'w': return 16;
    case 'l': return 32;
    default: return 64;
  }
}

// The width of a general-purpose register's name ("%eax" 32, "%r9w" 16); 0 for others.
int register_bits(std::string_view name) {
  if (name.starts_with('%')) name.remove_prefix(1);
  if (name.empty()) return 0;
  static constexpr std::array<std::string_view, 8> bytes{"al",  "bl",  "cl",  "dl",
                                                         "sil", "dil", "spl", "bpl"};
  static constexpr std::array<std::string_view, 8> words{"ax", "bx", "cx", "dx",
                                                         "si", "di", "sp", "bp"};
  if (std::find(bytes.begin(), bytes.end(), name) != bytes.end() || name == "ah" || name == "bh" ||
      name == "ch" || name == "dh") {
    return 8;
  }
  if (std::find(words.begin(), words.end(), name) != words.end()) return 16;
  if (name[0] == 'r' && name.size() >= 2 && std::isdigit(static_cast<unsigned char>(name[1]))) {
    char last = name.back();
    if (last == 'b') return 8;
    if (last == 'w') return 16;
    if (last == 'd') return 32;
    return 64;
  }
  if (name.size() == 3 && name[0] == 'e' &&
      std::find(words.begin(), words.end(), name.substr(1)) != words.end()) {
    return 32;
  }
  if (name.size() == 3 && name[0] == 'r' &&
      std::find(words.begin(), words.end(), name.substr(1)) != words.end()) {
    return 64;
  }
  return 0;
}

bool is_general_register(std::string_view operand) {
  return operand.starts_with('%') && register_bits(operand) != 0;
}

// "-0x10" as objdump writes an immediate of `bits`: two's complement.
std::string twos_complement(std::string_view negative_hex, int bits) {
  std::uint64_t magnitude = 0;
  std::string_view digits = negative_hex.substr(1);
  if (digits.starts_with("0x")) digits.remove_prefix(2);
  std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, 16);
  std::uint64_t value = 0 - magnitude;
  if (bits < 64) value &= (std::uint64_t{1} << bits) - 1;
  return fmt::format("{:#x}", value);
}

// A memory operand as objdump writes it: scale 1 written out and the zero displacement that the
// encoding holds ("0x0(%rax,%rax,1)").
std::string objdump_memory_operand(std::string operand, bool displacement_encoded) {
  std::size_t open = operand.find('(');
  if (open == std::string::npos) return operand;
  std::size_t close = operand.find(')', open);
  if (close == std::string::npos) return operand;
  std::string_view inside(operand.data() + open + 1, close - open - 1);
  if (std::count(inside.begin(), inside.end(), ',') == 1) {
    operand.insert(close, ",1");
  }
  bool has_displacement = open > 0 && (is_hex_digit(operand[open - 1]) || operand[open - 1] == ')');
  // "%fs:(%rax)": the segment ends in ':'.
  if (!has_displacement && displacement_encoded) operand.insert(open, "0x0");
  return operand;
}

// An Intel memory operand as objdump writes it: "[base+index*scale+disp]" with scale 1 written
// out, the zero displacement the encoding holds, and a rip-relative negative displacement in
// two's complement ("[rip+0xffffffffffffff00]"). LLVM writes "[base + scale*index - disp]".
std::string objdump_intel_memory(const std::string& operand, bool displacement_encoded) {
  std::size_t open = operand.find('[');
  std::size_t close = operand.rfind(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return operand;
  std::string inside = operand.substr(open + 1, close - open - 1);
  std::string base, index, scale, displacement;
  bool negative = false;
  std::size_t start = 0;
  bool sign = false;  // the sign before the current term
  for (std::size_t i = 0; i <= inside.size(); ++i) {
    if (i < inside.size() && inside[i] != '+' && inside[i] != '-') continue;
    std::string term = inside.substr(start, i - start);
    while (!term.empty() && term.front() == ' ') term.erase(0, 1);
    while (!term.empty() && term.back() == ' ') term.pop_back();
    if (!term.empty()) {
      std::size_t star = term.find('*');
      if (star != std::string::npos) {
        scale = term.substr(0, star);
        index = term.substr(star + 1);
      } else if (term.starts_with("0x") || std::isdigit(static_cast<unsigned char>(term[0]))) {
        displacement = term;
        negative = sign;
      } else if (base.empty()) {
        base = term;
      } else {
        index = term;
        scale = "1";
      }
    }
    if (i < inside.size()) sign = inside[i] == '-';
    start = i + 1;
  }
  std::string out = base;
  if (!index.empty()) out += (out.empty() ? "" : "+") + index + "*" + (scale.empty() ? "1" : scale);
  if (!displacement.empty()) {
    if (negative && base == "rip") {
      out += "+" + twos_complement("-" + displacement, 64);
    } else if (out.empty()) {
      out += displacement;
    } else {
      out += (negative ? "-" : "+") + displacement;
    }
  } else if (displacement_encoded) {
    out += out.empty() ? "0x0" : "+0x0";
  }
  return operand.substr(0, open + 1) + out + operand.substr(close);
}

// x87 names that LLVM spells its own way.
void rename_as_objdump(std::string& mnemonic) {
  if (mnemonic == "fucompi") mnemonic = "fucomip";
  if (mnemonic == "fcompi") mnemonic = "fcomip";
  if (mnemonic == "wait") mnemonic = "fwait";
}

bool is_shift_or_rotate(std::string_view mnemonic) {
  static constexpr std::array<std::string_view, 8> names{"sar", "shr", "shl", "sal",
                                                         "rol", "ror", "rcl", "rcr"};
  return std::find(names.begin(), names.end(), mnemonic) != names.end();
}

// The instructions whose data immediate objdump writes in hex ("add x0, x0, #0x10"); it writes
// memory offsets, shift amounts and bit numbers in decimal.
bool is_aarch64_hex_immediate(std::string_view mnemonic) {
  static constexpr std::array<std::string_view, 27> names{
      "add",  "adds", "sub",  "subs", "cmp", "cmn",  "mov",   "movk",   "movz",
      "movn", "and",  "ands", "orr",  "eor", "tst",  "ccmp",  "ccmn",   "movi",
      "svc",  "brk",  "hvc",  "smc",  "hlt", "mvni", "fccmp", "fccmpe", "bic"};
  return std::find(names.begin(), names.end(), mnemonic) != names.end();
}

// The immediates that stand as operands of their own (after ", ", not a shift's "lsl #16" or an
// extend's "uxtw #3") in hex; a negative one in two's complement of the first register's width,
// as objdump writes "mov w0, #0xffffffff".
std::string aarch64_hex_immediates(std::string operands) {
  for (std::size_t at = operands.find(", #"); at != std::string::npos;
       at = operands.find(", #", at + 1)) {
    std::size_t begin = at + 3;
    if (operands.compare(begin, 2, "0x") == 0 || operands.compare(begin, 3, "-0x") == 0) continue;
    std::size_t end = begin;
    bool negative = end < operands.size() && operands[end] == '-';
    if (negative) ++end;
    std::size_t digits = end;
    while (end < operands.size() && std::isdigit(static_cast<unsigned char>(operands[end]))) {
      ++end;
    }
    if (end == digits || (end < operands.size() && operands[end] == '.')) continue;
    std::uint64_t value = 0;
    std::from_chars(operands.data() + digits, operands.data() + end, value);
    if (negative) {
      value = 0 - value;
      if (operands.starts_with(", w")) value &= 0xffffffffu;
    }
    operands.replace(begin, end - begin, fmt::format("{:#x}", value));
  }
  return operands;
}

// The condition names objdump uses for the two that have aliases: cs for hs, cc for lo.
void aarch64_condition_names(std::string& mnemonic, std::string& operands) {
  if (mnemonic == "b.hs") mnemonic = "b.cs";
  if (mnemonic == "b.lo") mnemonic = "b.cc";
  if (operands.ends_with(", hs")) operands.replace(operands.size() - 2, 2, "cs");
  if (operands.ends_with(", lo")) operands.replace(operands.size() - 2, 2, "cc");
}

// The prefix words before the mnemonic as objdump writes them: MPX's bnd where LLVM says repne,
// repz before ret, CET's notrack on an indirect branch (a ds prefix LLVM drops) and data16 for
// each extra 0x66 of a padding nop.
std::string x86_prefixed(std::string prefix, std::string mnemonic, const X86Layout& layout,
                         bool indirect_branch) {
  bool stack_or_branch = starts_with_any(mnemonic, {"push", "pop", "call", "ret", "jmp"});
  if (prefix == "repne" && stack_or_branch) prefix = "bnd";
  if (prefix == "rep" && mnemonic.starts_with("ret")) prefix = "repz";
  if (layout.segment_prefix && layout.segment == 0x3e && stack_or_branch && indirect_branch) {
    prefix = prefix.empty() ? "notrack" : "notrack " + prefix;
  }
  for (int extra = 1; extra < layout.operand_size_prefixes && mnemonic.starts_with("nop");
       ++extra) {
    prefix = prefix.empty() ? "data16" : "data16 " + prefix;
  }
  return prefix.empty() ? mnemonic : prefix + " " + mnemonic;
}

}  // namespace

PrintedInstruction split_printed_instruction(std::string_view llvm_text) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= llvm_text.size(); ++i) {
    if (i == llvm_text.size() || llvm_text[i] == '\t' || llvm_text[i] == '\n') {
      std::string_view field = llvm_text.substr(start, i - start);
      while (!field.empty() && field.front() == ' ') field.remove_prefix(1);
      while (!field.empty() && field.back() == ' ') field.remove_suffix(1);
      if (!field.empty()) fields.push_back(field);
      start = i + 1;
    }
  }
  PrintedInstruction out;
  std::size_t next = 0;
  while (fields.size() - next >= 2 && is_prefix_word(fields[next])) {
    if (!out.prefix.empty()) out.prefix += ' ';
    out.prefix += fields[next++];
  }
  if (next < fields.size()) {
    std::string_view word = fields[next++];
    // "rep stosq" can come as one field.
    std::size_t space = word.find(' ');
    if (space != std::string_view::npos && is_prefix_word(word.substr(0, space))) {
      if (!out.prefix.empty()) out.prefix += ' ';
      out.prefix += word.substr(0, space);
      word.remove_prefix(space + 1);
    }
    out.mnemonic = word;
  }
  for (; next < fields.size(); ++next) {
    if (!out.operands.empty()) out.operands += ' ';
    out.operands += fields[next];
  }
  return out;
}

SpelledInstruction x86_att_as_objdump(std::string_view att, std::string_view intel,
                                      std::span<const std::uint8_t> bytes,
                                      std::optional<std::uint64_t> target) {
  PrintedInstruction printed = split_printed_instruction(att);
  PrintedInstruction intel_printed = split_printed_instruction(intel);
  X86Layout layout = x86_layout(bytes);
  std::string mnemonic = printed.mnemonic;
  std::string operands = printed.operands;
  replace_all(operands, ", ", ",");
  replace_all(operands, " {", "{");

  // 66 90 is xchg %ax,%ax to objdump.
  if (bytes.size() == 2 && bytes[0] == 0x66 && bytes[1] == 0x90) return {"xchg", "%ax,%ax"};

  std::vector<std::string_view> parts = split_operands(operands);
  // The suffix: the letters the AT&T mnemonic has beyond the Intel one.
  char suffix = 0;
  if (mnemonic.size() == intel_printed.mnemonic.size() + 1 &&
      mnemonic.starts_with(intel_printed.mnemonic) &&
      std::string_view("bwlq").find(mnemonic.back()) != std::string_view::npos) {
    suffix = mnemonic.back();
  }
  int bits = suffix ? suffix_bits(suffix) : 0;
  bool sized_by_register = false;
  for (std::string_view part : parts) {
    std::string_view operand = part.starts_with('*') ? part.substr(1) : part;
    if (is_general_register(operand)) {
      sized_by_register = true;
      if (!bits) bits = register_bits(operand);
    }
  }
  if (!bits) bits = 64;
  bool stack_or_branch = starts_with_any(mnemonic, {"push", "pop", "call", "ret", "jmp"});
  bool string_operation = is_string_instruction(mnemonic, operands);
  // A string operation's suffix is part of LLVM's Intel mnemonic too; objdump drops it where a
  // register operand says the size (stos %rax,...), as elsewhere.
  if (string_operation && !suffix && sized_by_register &&
      std::string_view("bwlq").find(mnemonic.back()) != std::string_view::npos) {
    suffix = mnemonic.back();
  }
  // objdump leaves the suffix out where a register operand already says the size, and on the
  // stack and branch instructions whose size is the 64-bit default.
  if (suffix && (sized_by_register || stack_or_branch)) {
    mnemonic.pop_back();
  }
  if (mnemonic == "movabsq") mnemonic = "movabs";
  rename_as_objdump(mnemonic);
  if (mnemonic == "xabort") bits = 8;
  // objdump names xchg's register operand (ModRM's reg, or the accumulator) first.
  if (mnemonic.starts_with("xchg") && parts.size() == 2 && is_general_register(parts[1])) {
    std::swap(parts[0], parts[1]);
  }
  // A string operation's source: objdump names its segment.
  if (string_operation && !parts.empty() && parts[0] == "(%rsi)") parts[0] = "%ds:(%rsi)";

  std::string rebuilt;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::string part(parts[i]);
    if (part.starts_with("$-")) {
      part = "$" + twos_complement(std::string_view(part).substr(1), bits);
    } else if (part.find('(') != std::string::npos && !string_operation) {
      part = objdump_memory_operand(std::move(part), layout.displacement);
    }
    if (i) rebuilt += ',';
    rebuilt += part;
  }
  operands = std::move(rebuilt);
  if (target && operands.starts_with("0x")) operands = fmt::format("{:x}", *target);

  std::string prefix = printed.prefix;
  if (string_operation) {
    // objdump: repz/repnz on the string operations that compare, rep on the others.
    bool compares = mnemonic.starts_with("cmps") || mnemonic.starts_with("scas");
    if (prefix == "rep" && compares) prefix = "repz";
    if (prefix == "repne") prefix = "repnz";
  }
  // A segment override that 64-bit mode ignores: objdump writes it as a prefix word.
  for (std::string_view segment : {"%cs:", "%ds:", "%es:", "%ss:"}) {
    std::size_t at = operands.find(segment);
    if (at != std::string::npos && !string_operation) {
      operands.erase(at, segment.size());
      prefix = std::string(segment.substr(1, 2)) + (prefix.empty() ? "" : " " + prefix);
    }
  }
  mnemonic =
      x86_prefixed(std::move(prefix), std::move(mnemonic), layout, operands.starts_with('*'));
  return {std::move(mnemonic), std::move(operands)};
}

SpelledInstruction x86_intel_as_objdump(std::string_view intel, std::span<const std::uint8_t> bytes,
                                        std::optional<std::uint64_t> target) {
  if (bytes.size() == 2 && bytes[0] == 0x66 && bytes[1] == 0x90) return {"xchg", "ax,ax"};
  PrintedInstruction printed = split_printed_instruction(intel);
  std::string operands = printed.operands;
  replace_all(operands, ", ", ",");
  replace_all(operands, " {", "{");
  // Longest first: "word ptr" is inside "dword ptr".
  for (std::string_view size : {"xmmword ptr", "ymmword ptr", "zmmword ptr", "dword ptr",
                                "qword ptr", "tbyte ptr", "fword ptr", "word ptr", "byte ptr"}) {
    std::string upper(size);
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    replace_all(operands, size, upper);
  }
  std::vector<std::string_view> parts = split_operands(operands);
  int bits = 0;
  for (std::string_view part : parts) {
    if (!bits) bits = register_bits(part);
  }
  for (std::string_view part : parts) {
    if (bits) break;
    if (part.starts_with("QWORD")) bits = 64;
    if (part.starts_with("DWORD")) bits = 32;
    if (part.starts_with("WORD")) bits = 16;
    if (part.starts_with("BYTE")) bits = 8;
  }
  if (!bits) bits = 64;
  std::string mnemonic = printed.mnemonic;
  std::string prefix = printed.prefix;
  if (mnemonic == "xabort") bits = 8;
  rename_as_objdump(mnemonic);
  bool string_operation = is_string_instruction(mnemonic, operands);
  // The operands say the size (a register or "QWORD PTR"): objdump drops the letter.
  if (string_operation && !parts.empty() &&
      std::string_view("bwdq").find(mnemonic.back()) != std::string_view::npos) {
    mnemonic.pop_back();
  }

  // objdump names xchg's register operands the other way round from LLVM.
  if (mnemonic.starts_with("xchg") && parts.size() == 2 && register_bits(parts[0]) &&
      register_bits(parts[1])) {
    std::swap(parts[0], parts[1]);
  }
  X86Layout layout = x86_layout(bytes);
  std::string rebuilt;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::string part(parts[i]);
    if (part.starts_with("-0x")) part = twos_complement(part, bits);
    if (string_operation && part.ends_with(" PTR [rsi]")) part.insert(part.size() - 5, "ds:");
    std::size_t open = part.find('[');
    if (open != std::string::npos && !string_operation) {
      bool absolute = part.compare(open, 3, "[0x") == 0 &&
                      part.find('+', open) == std::string::npos &&
                      part.find('-', open) == std::string::npos;
      if (absolute) {
        // "[0x10]" is "ds:0x10", "fs:[0x28]" is "fs:0x28": objdump names the segment.
        bool segment = open > 0 && part[open - 1] == ':';
        part = part.substr(0, open) + (segment ? "" : "ds:") +
               part.substr(open + 1, part.size() - open - 2);
      } else {
        part = objdump_intel_memory(part, layout.displacement);
      }
      // A segment override that 64-bit mode ignores: objdump writes it as a prefix word.
      for (std::string_view segment : {"cs:", "ds:", "es:", "ss:"}) {
        std::size_t at = part.find(std::string(segment) + "[");
        if (at != std::string::npos) {
          part.erase(at, segment.size());
          prefix = std::string(segment.substr(0, 2)) + (prefix.empty() ? "" : " " + prefix);
        }
      }
    }
    if (i) rebuilt += ',';
    rebuilt += part;
  }
  operands = std::move(rebuilt);
  // A shift by one (opcodes d0-d3 with no count byte): objdump writes the 1.
  if (is_shift_or_rotate(mnemonic) && parts.size() == 1) operands += ",1";
  if (target && operands.starts_with("0x")) operands = fmt::format("{:x}", *target);
  mnemonic = x86_prefixed(std::move(prefix), std::move(mnemonic), layout, !target);
  return {std::move(mnemonic), std::move(operands)};
}

SpelledInstruction aarch64_as_objdump(std::string_view text, std::optional<std::uint64_t> target) {
  PrintedInstruction printed = split_printed_instruction(text);
  std::string operands = printed.operands;
  std::string mnemonic = printed.mnemonic;
  aarch64_condition_names(mnemonic, operands);
  replace_all(operands, "{ ", "{");
  replace_all(operands, " }", "}");
  // System registers in lower case: "mrs x0, tpidr_el0".
  if (mnemonic == "mrs" || mnemonic == "msr") {
    std::transform(operands.begin(), operands.end(), operands.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  // The widening moves by zero are sxtl/uxtl to objdump.
  for (auto [shift, alias] : {std::pair{"sshll", "sxtl"}, std::pair{"ushll", "uxtl"},
                              std::pair{"sshll2", "sxtl2"}, std::pair{"ushll2", "uxtl2"}}) {
    if (mnemonic == shift && operands.ends_with(", #0")) {
      mnemonic = alias;
      operands.resize(operands.size() - 4);
    }
  }
  // Floating-point immediates with objdump's 18 digits: "#1.000000000000000000e+00".
  if (std::size_t at = operands.rfind(", #"); mnemonic == "fmov" && at != std::string::npos &&
                                              operands.find('.', at) != std::string::npos) {
    double value = std::strtod(operands.c_str() + at + 3, nullptr);
    operands = fmt::format("{}, #{:.18e}", operands.substr(0, at), value);
  }
  if (target) {
    // The destination, the last operand, in bare hex: "b.ne 1ffc", "tbz w0, #3, 2010".
    std::size_t comma = operands.rfind(", ");
    std::size_t start = comma == std::string::npos ? 0 : comma + 2;
    operands = operands.substr(0, start) + fmt::format("{:x}", *target);
  } else if ((mnemonic == "adrp" || mnemonic == "adr") &&
             operands.find(", 0x") != std::string::npos) {
    std::size_t at = operands.find(", 0x");
    operands.erase(at + 2, 2);
  } else if (is_aarch64_hex_immediate(mnemonic)) {
    // svc #0: the only operand has no ", " before it.
    operands = aarch64_hex_immediates(", " + operands).substr(2);
  }
  return {std::move(mnemonic), std::move(operands)};
}

}  // namespace perfscope
