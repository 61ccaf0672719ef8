#include "analysis/symbols/elf_symbol_table.hpp"

#include <elf.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>

namespace perfscope {

namespace {

// Which of two symbols at one address names it, the higher rank first: functions before untyped
// labels, sized before size-0 aliases, then by binding in perf's order (choose_best_symbol: not
// weak before weak, global before local) with one change: a compatibility alias of an old
// version ("cfree@GLIBC_2.2.5": only such aliases carry a single '@' in .symtab, and .dynsym
// marks them hidden in .gnu.version) comes after a global the program links against ("free"),
// and still before a local ("xdr_array@GLIBC_2.2.5" before __GI_xdr_array,
// "__exp_finite@GLIBC_2.15" before __ieee754_exp_ifunc, as perf picks). finish() then takes fewer
// leading underscores, then the longer name.
std::uint8_t symbol_rank(const GElf_Sym& symbol, std::string_view name, bool hidden_version) {
  int type = GELF_ST_TYPE(symbol.st_info);
  int binding = GELF_ST_BIND(symbol.st_info);
  bool function = type == STT_FUNC || type == STT_GNU_IFUNC;
  std::size_t at = name.find('@');
  bool compatibility_alias =
      hidden_version || (at != std::string_view::npos && name.substr(at, 2) != "@@");
  int binding_order = 2;  // local, and any binding neither global nor weak
  if (binding == STB_GLOBAL) binding_order = compatibility_alias ? 3 : 4;
  if (binding == STB_WEAK) binding_order = compatibility_alias ? 0 : 1;
  return static_cast<std::uint8_t>((function ? 16 : 0) + (symbol.st_size > 0 ? 8 : 0) +
                                   binding_order);
}

std::size_t leading_underscores(std::string_view name) noexcept {
  std::size_t count = 0;
  while (count < name.size() && name[count] == '_') ++count;
  return count;
}

}  // namespace

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
  // .dynsym's versions: the hidden bit marks a non-default version (a compatibility alias).
  Elf_Data* versions = nullptr;
  if (section_type == SHT_DYNSYM) {
    if (Elf_Scn* versym = image.section_of_type(SHT_GNU_versym))
      versions = elf_getdata(versym, nullptr);
  }
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym symbol;
    if (!gelf_getsym(data, static_cast<int>(i), &symbol)) continue;
    GElf_Versym version = 0;
    bool hidden_version = versions && gelf_getversym(versions, static_cast<int>(i), &version) &&
                          (version & 0x8000) != 0;
    int type = GELF_ST_TYPE(symbol.st_info);
    if (symbol.st_shndx == SHN_UNDEF || symbol.st_shndx >= section_count) continue;
    const GElf_Shdr& holder = sections[symbol.st_shndx];
    if (type == STT_NOTYPE) {
      // Labels of hand-written assembly without .type (ld.so's _start and _dl_start_user are
      // local ones): perf keeps every named one in a section whose name says text.
      if (symbol.st_shndx == SHN_ABS || !text_section[symbol.st_shndx]) continue;
    } else if (type != STT_FUNC && type != STT_GNU_IFUNC &&
               (type != STT_OBJECT || symbol.st_name == 0)) {
      // perf keeps data objects too (elf_sym__filter): a data address (a page fault's, a
      // bogus frame of a stack walked through data) is named by its object, as perf names it.
      continue;
    }
    const char* name = elf_strptr(elf, table_header.sh_link, symbol.st_name);
    // '$' starts the ARM and AArch64 mapping symbols ($x, $d), which mark code and data runs.
    if (!name || name[0] == '\0' || name[0] == '$') continue;
    push(symbol.st_value, symbol.st_size > 0 ? symbol.st_value + symbol.st_size : 0,
         holder.sh_addr + holder.sh_size, name, symbol_rank(symbol, name, hidden_version), false,
         type == STT_GNU_IFUNC);
    if (type != STT_OBJECT) ++added;
  }
  return added;
}

void ElfSymbolTable::push(std::uint64_t start, std::uint64_t end, std::uint64_t section_end,
                          std::string_view name, std::uint8_t rank, bool plt, bool ifunc) {
  Entry entry;
  entry.start = start;
  entry.end = end;
  entry.section_end = section_end;
  entry.name_offset = static_cast<std::uint32_t>(names_.size());
  entry.name_size = static_cast<std::uint32_t>(name.size());
  entry.rank = rank;
  entry.plt = plt;
  entry.ifunc = ifunc;
  names_.append(name);
  names_.push_back('\0');  // for the demangler
  entries_.push_back(entry);
}

void ElfSymbolTable::finish() {
  // Stable: among equals the table added first (.symtab before .dynsym) wins.
  std::stable_sort(entries_.begin(), entries_.end(), [this](const Entry& a, const Entry& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.rank != b.rank) return a.rank > b.rank;
    std::string_view name_a(names_.data() + a.name_offset, a.name_size);
    std::string_view name_b(names_.data() + b.name_offset, b.name_size);
    std::size_t underscores_a = leading_underscores(name_a);
    std::size_t underscores_b = leading_underscores(name_b);
    if (underscores_a != underscores_b) return underscores_a < underscores_b;
    return name_a.size() > name_b.size();
  });
  auto same_start = [](const Entry& a, const Entry& b) { return a.start == b.start; };
  entries_.erase(std::unique(entries_.begin(), entries_.end(), same_start), entries_.end());
  // A size-0 label inside a sized function (a deoptimization point V8 marks inside a builtin, an
  // assembly routine's inner entry) does not take the rest of the function from it: the function
  // names its whole extent, as in perf.
  std::uint64_t sized_end = 0;
  std::size_t kept = 0;
  for (const Entry& entry : entries_) {
    if (entry.end != 0) sized_end = std::max(sized_end, entry.end);
    if (entry.end == 0 && entry.start < sized_end) continue;
    entries_[kept++] = entry;
  }
  entries_.resize(kept);
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
    std::string text;
    if (entry.plt) {
      // Demangled before the suffix, as perf does: "operator new@plt" ("operator new(unsigned
      // long)@plt" in the full form).
      text = demangle_symbol(std::string(raw.substr(0, raw.size() - 4)).c_str(), form_);
      if (!text.empty()) text += "@plt";
    } else {
      text = demangle_symbol(raw.data(), form_);
    }
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
