#include "analysis/symbols/vmlinux_symbols.hpp"

#include <fmt/format.h>
#include <gelf.h>

#include <string_view>

#include "perfscope/analysis/symbols/elf_image.hpp"

namespace perfscope {

namespace {

// kallsyms' letter for a text symbol of `binding`: weak W, global T, local t.
char kallsyms_type(unsigned char binding) {
  if (binding == STB_WEAK) return 'W';
  return binding == STB_GLOBAL ? 'T' : 't';
}

bool is_text_section(Elf* elf, std::size_t index) {
  Elf_Scn* section = elf_getscn(elf, index);
  GElf_Shdr header;
  return section != nullptr && gelf_getshdr(section, &header) != nullptr &&
         (header.sh_flags & SHF_EXECINSTR) != 0;
}

}  // namespace

VmlinuxSymbols read_vmlinux_symbols(const std::string& path, std::uint64_t reference_address) {
  VmlinuxSymbols result;
  std::string error;
  std::optional<ElfImage> image = ElfImage::open(path, error);
  if (!image) {
    result.problem = fmt::format("cannot read the vmlinux {}: {}", path, error);
    return result;
  }
  auto id = image->build_id();
  result.build_id.assign(id.begin(), id.end());
  Elf_Scn* table = image->section_of_type(SHT_SYMTAB);
  GElf_Shdr table_header;
  Elf_Data* data = table != nullptr ? elf_getdata(table, nullptr) : nullptr;
  if (data == nullptr || gelf_getshdr(table, &table_header) == nullptr) {
    result.problem = fmt::format(
        "the vmlinux {} has no symbol table (.symtab): give the unstripped image (Debian: the "
        "linux-image-*-dbg package's /usr/lib/debug/boot/vmlinux-RELEASE)",
        path);
    return result;
  }
  Elf* elf = image->elf();
  std::size_t count =
      table_header.sh_entsize == 0 ? 0 : table_header.sh_size / table_header.sh_entsize;
  // The reference symbol first: every text symbol moves by the same distance.
  std::uint64_t image_text = 0;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym symbol;
    if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr) continue;
    const char* name = elf_strptr(elf, table_header.sh_link, symbol.st_name);
    if (name == nullptr) continue;
    std::string_view view(name);
    if (view == "_text" || (view == "_stext" && image_text == 0)) image_text = symbol.st_value;
  }
  std::uint64_t shift =
      reference_address != 0 && image_text != 0 ? reference_address - image_text : 0;
  // As a kallsyms text: KernelSymbols reads it the way it reads /proc/kallsyms, so a vmlinux's
  // symbols answer exactly as the kernel's own list would (ends at the next symbol's start).
  std::string text;
  text.reserve(count * 40);
  std::size_t kept = 0;
  bool text_listed = false;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym symbol;
    if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr) continue;
    unsigned char type = GELF_ST_TYPE(symbol.st_info);
    if (type != STT_FUNC && type != STT_NOTYPE && type != STT_OBJECT) continue;
    if (symbol.st_value == 0 || symbol.st_shndx == SHN_UNDEF) continue;
    bool text_symbol = symbol.st_shndx == SHN_ABS
                           ? type == STT_FUNC
                           : type != STT_OBJECT && is_text_section(elf, symbol.st_shndx);
    const char* name = elf_strptr(elf, table_header.sh_link, symbol.st_name);
    if (name == nullptr || *name == '\0' ||
        std::string_view(name).find_first_of(" \t\n") != std::string_view::npos) {
      continue;
    }
    // Data symbols are listed as kallsyms lists them: they end the function before them.
    char kind = kallsyms_type(GELF_ST_BIND(symbol.st_info));
    if (!text_symbol) kind = kind == 't' ? 'd' : 'D';
    fmt::format_to(std::back_inserter(text), "{:016x} {} {}\n", symbol.st_value + shift, kind,
                   name);
    text_listed = text_listed || std::string_view(name) == "_text";
    kept += text_symbol ? 1 : 0;
  }
  if (image_text != 0 && !text_listed) {
    fmt::format_to(std::back_inserter(text), "{:016x} T _text\n", image_text + shift);
  }
  if (kept == 0) {
    result.problem = fmt::format("the vmlinux {} has no text symbols", path);
    return result;
  }
  result.symbols.parse(text);
  return result;
}

std::vector<std::string> vmlinux_search_paths(const std::string& release) {
  std::vector<std::string> paths{"vmlinux", "/boot/vmlinux"};
  if (release.empty()) return paths;
  for (const char* pattern :
       {"/boot/vmlinux-{}", "/usr/lib/debug/boot/vmlinux-{}", "/lib/modules/{}/build/vmlinux",
        "/usr/lib/debug/lib/modules/{}/vmlinux", "/usr/lib/debug/boot/vmlinux-{}.debug"}) {
    paths.push_back(fmt::format(fmt::runtime(pattern), release));
  }
  return paths;
}

}  // namespace perfscope
