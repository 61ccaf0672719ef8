#include "elf_symbol_table.hpp"

#include <cxxabi.h>
#include <elf.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace perfscope {

namespace {

// Which of two symbols at one address names it: functions before untyped labels, sized before
// size-0 aliases, global and weak before local.
std::uint8_t symbol_rank(const GElf_Sym& symbol) {
  int type = GELF_ST_TYPE(symbol.st_info);
  bool function = type == STT_FUNC || type == STT_GNU_IFUNC;
  return static_cast<std::uint8_t>((function ? 4 : 0) + (symbol.st_size > 0 ? 2 : 0) +
                                   (GELF_ST_BIND(symbol.st_info) != STB_LOCAL ? 1 : 0));
}

}  // namespace

std::string demangle_symbol(const char* name) {
  if (name[0] != '_' || name[1] != 'Z') return {};
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? std::string(out.get()) : std::string();
}

std::size_t ElfSymbolTable::add(const ElfImage& image, std::uint32_t section_type) {
  Elf* elf = image.elf();
  Elf_Scn* table = image.section_of_type(section_type);
  GElf_Shdr table_header;
  if (!table || !gelf_getshdr(table, &table_header)) return 0;
  Elf_Data* data = elf_getdata(table, nullptr);
  if (!data) return 0;
  std::size_t count = table_header.sh_size / table_header.sh_entsize;
  std::size_t added = 0;
  // Section headers by index, read once: every symbol asks for its section's flags and end.
  std::size_t section_count = 0;
  if (elf_getshdrnum(elf, &section_count) != 0) return 0;
  std::vector<GElf_Shdr> sections(section_count);
  std::vector<bool> text_section(section_count, false);
  std::size_t names_index = 0;
  if (elf_getshdrstrndx(elf, &names_index) != 0) names_index = 0;
  for (std::size_t i = 0; i < section_count; ++i) {
    Elf_Scn* scn = elf_getscn(elf, i);
    if (!scn || !gelf_getshdr(scn, &sections[i])) sections[i] = GElf_Shdr{};
    const char* section_name =
        names_index != 0 ? elf_strptr(elf, names_index, sections[i].sh_name) : nullptr;
    text_section[i] = section_name && std::strstr(section_name, "text") != nullptr;
  }
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym symbol;
    if (!gelf_getsym(data, static_cast<int>(i), &symbol)) continue;
    int type = GELF_ST_TYPE(symbol.st_info);
    if (symbol.st_shndx == SHN_UNDEF || symbol.st_shndx >= section_count) continue;
    const GElf_Shdr& holder = sections[symbol.st_shndx];
    if (type == STT_NOTYPE) {
      // Labels of hand-written assembly without .type (ld.so's _start and _dl_start_user are
      // local ones): perf keeps every named one in a section whose name says text.
      if (symbol.st_shndx == SHN_ABS || !text_section[symbol.st_shndx]) continue;
    } else if (type != STT_FUNC && type != STT_GNU_IFUNC) {
      continue;
    }
    const char* name = elf_strptr(elf, table_header.sh_link, symbol.st_name);
    // '$' starts the ARM and AArch64 mapping symbols ($x, $d), which mark code and data runs.
    if (!name || name[0] == '\0' || name[0] == '$') continue;
    Entry entry;
    entry.start = symbol.st_value;
    entry.end = symbol.st_size > 0 ? symbol.st_value + symbol.st_size : 0;
    entry.section_end = holder.sh_addr + holder.sh_size;
    std::size_t length = std::strlen(name);
    entry.name_offset = static_cast<std::uint32_t>(names_.size());
    entry.name_size = static_cast<std::uint32_t>(length);
    entry.rank = symbol_rank(symbol);
    names_.append(name, length + 1);  // with its NUL, for the demangler
    entries_.push_back(entry);
    ++added;
  }
  return added;
}

void ElfSymbolTable::finish() {
  // Stable: among equals the table added first (.symtab before .dynsym) wins.
  std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.rank > b.rank;
  });
  auto same_start = [](const Entry& a, const Entry& b) { return a.start == b.start; };
  entries_.erase(std::unique(entries_.begin(), entries_.end(), same_start), entries_.end());
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    Entry& entry = entries_[i];
    if (entry.end != 0) continue;
    std::uint64_t next = i + 1 < entries_.size() ? entries_[i + 1].start : entry.section_end;
    entry.end = std::min(next, entry.section_end);
    if (entry.end <= entry.start) entry.end = entry.start + 1;
  }
  entries_.shrink_to_fit();
}

std::uint32_t ElfSymbolTable::find(std::uint64_t address) const noexcept {
  auto after =
      std::upper_bound(entries_.begin(), entries_.end(), address,
                       [](std::uint64_t value, const Entry& e) { return value < e.start; });
  // A few steps back: a sized function can enclose smaller symbols (local labels of assembly
  // routines, aliases into its middle) that end before the address.
  constexpr int enclosing_steps = 4;
  for (int step = 0; step < enclosing_steps && after != entries_.begin(); ++step) {
    --after;
    if (address < after->end) return static_cast<std::uint32_t>(after - entries_.begin());
  }
  return not_found;
}

std::string_view ElfSymbolTable::name(std::uint32_t index, bool demangle) {
  Entry& entry = entries_[index];
  std::string_view raw(names_.data() + entry.name_offset, entry.name_size);
  if (!demangle || entry.demangled == no_demangling) return raw;
  if (entry.demangled == unset) {
    std::string text = demangle_symbol(raw.data());
    if (text.empty()) {
      entry.demangled = no_demangling;
      return raw;
    }
    entry.demangled = static_cast<std::uint32_t>(demangled_.size());
    demangled_.push_back(std::move(text));
  }
  return demangled_[entry.demangled];
}

}  // namespace perfscope
