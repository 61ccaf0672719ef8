#include "perfscope/analysis/symbols/frame_pointer_check.hpp"

#include <elf.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/elf_image.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

double FramePointerReport::fraction() const noexcept {
  if (functions.empty()) return 0;
  return static_cast<double>(functions_with_frame_pointer) / static_cast<double>(functions.size());
}

namespace {
// GCC leaves the frame pointer out of leaf functions that need no stack frame even under
// -fno-omit-frame-pointer (they cost fp call graphs at most their caller), so a frame-pointer
// build shows from about half of its functions up; a build without shows almost none.
constexpr double mostly_frame_pointers = 0.5;
}  // namespace

bool FramePointerReport::frame_pointers_usable() const noexcept {
  return fraction() >= mostly_frame_pointers;
}

namespace {

// Compilers put the frame set-up first, or right after a shrink-wrapped early exit: looking this
// far into a function finds it without reaching into unrelated code.
constexpr std::size_t prologue_window = 64;

bool matches_at(const std::uint8_t* code, std::size_t size, std::size_t at,
                std::initializer_list<std::uint8_t> bytes) {
  if (at + bytes.size() > size) return false;
  return std::equal(bytes.begin(), bytes.end(), code + at);
}

std::uint32_t aarch64_instruction(const std::uint8_t* code, std::size_t index) {
  // A64 instructions are little-endian words whatever the data endianness.
  const std::uint8_t* at = code + index * 4;
  return static_cast<std::uint32_t>(at[0]) | static_cast<std::uint32_t>(at[1]) << 8 |
         static_cast<std::uint32_t>(at[2]) << 16 | static_cast<std::uint32_t>(at[3]) << 24;
}

}  // namespace

bool x86_64_sets_frame_pointer(const std::uint8_t* code, std::size_t size) noexcept {
  // push %rbp, then mov %rsp,%rbp in either encoding (48 89 e5 or 48 8b ec); GCC schedules
  // argument moves between the two.
  std::size_t end = std::min(size, prologue_window);
  bool pushed_rbp = false;
  for (std::size_t at = 0; at < end; ++at) {
    if (pushed_rbp && (matches_at(code, size, at, {0x48, 0x89, 0xe5}) ||
                       matches_at(code, size, at, {0x48, 0x8b, 0xec}))) {
      return true;
    }
    pushed_rbp = pushed_rbp || code[at] == 0x55;
  }
  return false;
}

bool aarch64_sets_frame_pointer(const std::uint8_t* code, std::size_t size) noexcept {
  std::size_t count = std::min(size, prologue_window) / 4;
  bool saved_frame_record = false;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t word = aarch64_instruction(code, i);
    // stp x29, x30, [sp, #imm]! (pre-index) or [sp, #imm] (signed offset): imm7 masked out.
    if ((word & 0xffc07fffU) == 0xa9807bfdU || (word & 0xffc07fffU) == 0xa9007bfdU) {
      saved_frame_record = true;
    } else if (saved_frame_record && (word & 0xff8003ffU) == 0x910003fdU) {
      // add x29, sp, #imm (mov x29, sp is the #0 form).
      return true;
    }
  }
  return false;
}

namespace {

std::string machine_name(GElf_Half machine) {
  switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "i386";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390";
    default: return fmt::format("e_machine {}", machine);
  }
}

struct CodeSection {
  GElf_Shdr header;
  Elf_Data* data;
};

void check_functions(Elf* elf, Elf_Scn* symbols, const GElf_Shdr& symbols_header, bool relocatable,
                     GElf_Half machine, FramePointerReport& report) {
  Elf_Data* data = elf_getdata(symbols, nullptr);
  if (!data || symbols_header.sh_entsize == 0) return;
  std::size_t count = symbols_header.sh_size / symbols_header.sh_entsize;
  std::vector<std::optional<CodeSection>> sections;  // by section index, filled as needed
  std::vector<bool> looked_up;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym symbol;
    if (!gelf_getsym(data, static_cast<int>(i), &symbol)) continue;
    if (GELF_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_size == 0) continue;
    std::size_t index = symbol.st_shndx;
    if (index == SHN_UNDEF || index >= SHN_LORESERVE) continue;
    if (index >= sections.size()) {
      sections.resize(index + 1);
      looked_up.resize(index + 1);
    }
    if (!looked_up[index]) {
      looked_up[index] = true;
      Elf_Scn* section = elf_getscn(elf, index);
      GElf_Shdr header;
      // Only code present in this file: a debug-info-only file has .text as NOBITS.
      if (section && gelf_getshdr(section, &header) && header.sh_type == SHT_PROGBITS &&
          (header.sh_flags & SHF_EXECINSTR)) {
        if (Elf_Data* code = elf_rawdata(section, nullptr); code && code->d_buf) {
          sections[index] = CodeSection{header, code};
        }
      }
    }
    if (!sections[index]) continue;
    const CodeSection& code = *sections[index];
    std::uint64_t offset = relocatable ? symbol.st_value : symbol.st_value - code.header.sh_addr;
    if (!relocatable && symbol.st_value < code.header.sh_addr) continue;
    if (offset >= code.data->d_size) continue;
    std::size_t available = static_cast<std::size_t>(
        std::min<std::uint64_t>(symbol.st_size, code.data->d_size - offset));
    const auto* bytes = static_cast<const std::uint8_t*>(code.data->d_buf) + offset;
    FunctionFramePointer function;
    const char* name = elf_strptr(elf, symbols_header.sh_link, symbol.st_name);
    function.name = name ? name : "";
    function.address = symbol.st_value;
    function.size = symbol.st_size;
    function.sets_frame_pointer = machine == EM_X86_64
                                      ? x86_64_sets_frame_pointer(bytes, available)
                                      : aarch64_sets_frame_pointer(bytes, available);
    report.functions.push_back(std::move(function));
  }
  // Aliases (memcpy and __memcpy_avx, a function and its local copy) are one function.
  std::stable_sort(report.functions.begin(), report.functions.end(),
                   [](const auto& a, const auto& b) { return a.address < b.address; });
  report.functions.erase(
      std::unique(report.functions.begin(), report.functions.end(),
                  [](const auto& a, const auto& b) { return a.address == b.address; }),
      report.functions.end());
  report.functions_with_frame_pointer = static_cast<std::size_t>(
      std::count_if(report.functions.begin(), report.functions.end(),
                    [](const auto& function) { return function.sets_frame_pointer; }));
}

void write_advice(FramePointerReport& report) {
  if (!report.architecture_supported) {
    report.advice.push_back(fmt::format(
        "frame-pointer prologues are recognised on x86-64 and aarch64 only, not {}; record with "
        "--call-graph dwarf to be independent of them",
        report.machine));
  } else if (report.functions.empty()) {
    report.advice.push_back(
        "no function symbols with code to inspect (no .symtab or .dynsym, or a debug-info-only "
        "file): check the binary itself, not its separate debug file");
  } else if (report.frame_pointers_usable()) {
    report.advice.push_back(fmt::format(
        "{:.0f}% of functions set up frame pointers (the rest are mostly leaf functions without "
        "a stack frame): --call-graph fp walks these stacks",
        report.fraction() * 100));
  } else {
    std::string unwind = report.has_eh_frame || report.has_debug_info
                             ? "or record with --call-graph dwarf"
                             : "--call-graph dwarf would need .eh_frame or debug info, which "
                               "this binary lacks too";
    report.advice.push_back(fmt::format(
        "only {:.0f}% of functions set up frame pointers, so fp call graphs lose the callers: "
        "build with -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer, {}",
        report.fraction() * 100, unwind));
  }
  if (report.stripped) {
    report.advice.push_back(
        report.symbol_table.empty()
            ? "no symbol table at all: profiles show bare addresses; keep the symbols (do not "
              "strip) or install the debug-symbol package"
            : "stripped (no .symtab): profiles name only exported functions; keep the symbols "
              "(do not strip) or install the debug-symbol package");
  }
  if (!report.has_debug_info) {
    report.advice.push_back(
        "no .debug_info: no source lines or inlined frames; build with -g or install the "
        "debug-symbol package");
  }
  if (report.build_id.empty()) {
    report.advice.push_back(
        "no build-id note: link with -Wl,--build-id so profiles and separate debug info can be "
        "matched to this exact build");
  }
}

}  // namespace

FramePointerReport check_frame_pointers(const std::string& path) {
  ElfImage::OpenError failure;
  auto image = ElfImage::open(path, failure);
  if (!image) {
    switch (failure.errnum) {
      case ENOEXEC:
        throw Error(ENOEXEC, fmt::format("'{}' is not an ELF file", path),
                    "give the path of an executable, shared library or object file");
      case ENODEV:
        throw Error(ENODEV,
                    fmt::format("'{}' is not a regular file (a directory?), not an ELF file", path),
                    "give the path of an executable, shared library or object file");
      case ENOSYS: throw Error(ENOSYS, failure.message, "rebuild against the installed libelf");
      default:
        throw Error(failure.errnum,
                    fmt::format("cannot read '{}': {}", path, std::strerror(failure.errnum)),
                    "give the path of a readable executable or shared library");
    }
  }
  Elf* elf = image->elf();
  std::size_t names_index = 0;
  if (elf_getshdrstrndx(elf, &names_index) != 0) {
    throw Error(ENOEXEC, fmt::format("'{}' has no section-name table: {}", path, elf_errmsg(-1)),
                "the file is truncated or corrupt");
  }

  FramePointerReport report;
  report.path = path;
  report.machine = machine_name(image->machine());
  report.architecture_supported = image->machine() == EM_X86_64 || image->machine() == EM_AARCH64;
  auto build_id = image->build_id();
  report.build_id = build_id_hex(std::vector<std::uint8_t>(build_id.begin(), build_id.end()));

  Elf_Scn* symtab = nullptr;
  Elf_Scn* dynsym = nullptr;
  GElf_Shdr symtab_header{}, dynsym_header{};
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section; section = elf_nextscn(elf, section)) {
    GElf_Shdr section_header;
    if (!gelf_getshdr(section, &section_header)) continue;
    std::string_view name = image->section_name(section);
    if (section_header.sh_type == SHT_SYMTAB) {
      symtab = section;
      symtab_header = section_header;
    } else if (section_header.sh_type == SHT_DYNSYM) {
      dynsym = section;
      dynsym_header = section_header;
    }
    if (name == ".debug_info" || name == ".zdebug_info") report.has_debug_info = true;
    if (name == ".eh_frame") report.has_eh_frame = true;
  }
  report.stripped = symtab == nullptr;
  report.symbol_table = symtab ? ".symtab" : dynsym ? ".dynsym" : "";
  if (report.architecture_supported && (symtab || dynsym)) {
    check_functions(elf, symtab ? symtab : dynsym, symtab ? symtab_header : dynsym_header,
                    image->type() == ET_REL, image->machine(), report);
  }
  write_advice(report);
  return report;
}

}  // namespace perfscope
