#include "analysis/symbols/dwarf_source_lines.hpp"

#include <dwarf.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "analysis/symbols/elf_symbol_table.hpp"

namespace perfscope {

std::unique_ptr<DwarfSourceLines> DwarfSourceLines::open(ElfImage image) {
  Elf_Scn* info = image.section(".debug_info");
  GElf_Shdr header;
  if (!info || !gelf_getshdr(info, &header) || header.sh_type == SHT_NOBITS) return nullptr;
  Dwarf* dwarf = dwarf_begin_elf(image.elf(), DWARF_C_READ, nullptr);
  if (!dwarf) return nullptr;
  return std::unique_ptr<DwarfSourceLines>(new DwarfSourceLines(std::move(image), dwarf));
}

DwarfSourceLines::DwarfSourceLines(ElfImage image, Dwarf* dwarf)
    : image_(std::move(image)), dwarf_(dwarf) {}

DwarfSourceLines::~DwarfSourceLines() { dwarf_end(dwarf_); }

bool DwarfSourceLines::unit_of(std::uint64_t address, Dwarf_Die& unit) {
  if (dwarf_addrdie(dwarf_, address, &unit)) return true;
  if (!ranges_built_) {
    ranges_built_ = true;
    Dwarf_CU* cu = nullptr;
    Dwarf_Half version = 0;
    std::uint8_t unit_type = 0;
    Dwarf_Die cu_die;
    while (dwarf_get_units(dwarf_, cu, &cu, &version, &unit_type, &cu_die, nullptr) == 0) {
      if (unit_type != DW_UT_compile && unit_type != DW_UT_partial) continue;
      Dwarf_Addr base = 0, low = 0, high = 0;
      for (ptrdiff_t at = 0; (at = dwarf_ranges(&cu_die, at, &base, &low, &high)) > 0;) {
        if (high > low) ranges_.push_back({low, high, cu_die});
      }
    }
    std::sort(ranges_.begin(), ranges_.end(),
              [](const UnitRange& a, const UnitRange& b) { return a.low < b.low; });
  }
  auto after =
      std::upper_bound(ranges_.begin(), ranges_.end(), address,
                       [](std::uint64_t value, const UnitRange& r) { return value < r.low; });
  if (after == ranges_.begin()) return false;
  const UnitRange& range = *std::prev(after);
  if (address >= range.high) return false;
  unit = range.unit;
  return true;
}

SourceLocation DwarfSourceLines::line(std::uint64_t address) {
  Dwarf_Die unit;
  if (!unit_of(address, unit)) return {};
  Dwarf_Line* row = dwarf_getsrc_die(&unit, address);
  if (!row) return {};
  SourceLocation location;
  int number = 0;
  const char* file = dwarf_linesrc(row, nullptr, nullptr);
  if (file) location.file = full_path(unit, file);
  if (dwarf_lineno(row, &number) == 0 && number > 0) {
    location.line = static_cast<std::uint32_t>(number);
  }
  return location;
}

std::string_view DwarfSourceLines::function_name(Dwarf_Die& die, bool demangle) {
  Dwarf_Attribute attribute;
  const char* linkage = nullptr;
  if (dwarf_attr_integrate(&die, DW_AT_linkage_name, &attribute) ||
      dwarf_attr_integrate(&die, DW_AT_MIPS_linkage_name, &attribute)) {
    linkage = dwarf_formstring(&attribute);
  }
  if (linkage && demangle) {
    auto [where, inserted] = demangled_.try_emplace(linkage);
    if (inserted) where->second = demangle_symbol(linkage, form_);
    if (!where->second.empty()) return where->second;
  }
  if (linkage && !demangle) return linkage;
  // The name of an inlined call is its abstract origin's.
  Dwarf_Die origin;
  Dwarf_Attribute attribute_of_origin;
  Dwarf_Die* named = &die;
  if (dwarf_attr(&die, DW_AT_abstract_origin, &attribute_of_origin) &&
      dwarf_formref_die(&attribute_of_origin, &origin)) {
    named = &origin;
  }
  const char* name = dwarf_diename(named);
  if (!name) return {};
  Dwarf_Die unit;
  if (dwarf_diecu(named, &unit, nullptr, nullptr) && dwarf_srclang(&unit) == DW_LANG_Rust) {
    return qualified_rust_name(*named, name);
  }
  return name;
}

std::string_view DwarfSourceLines::qualified_rust_name(Dwarf_Die& die, const char* name) {
  auto [where, inserted] = qualified_.try_emplace(die.addr);
  if (!inserted) return where->second;
  Dwarf_Die* scopes = nullptr;
  int count = dwarf_getscopes_die(&die, &scopes);
  std::string path;
  // scopes[0] is the DIE itself, then its parents out to the unit.
  for (int i = count - 1; i >= 1; --i) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_namespace && tag != DW_TAG_subprogram && tag != DW_TAG_structure_type &&
        tag != DW_TAG_union_type && tag != DW_TAG_enumeration_type) {
      continue;
    }
    const char* part = dwarf_diename(&scopes[i]);
    if (!part) continue;
    path += part;
    path += "::";
  }
  std::free(scopes);
  path += name;
  where->second = std::move(path);
  return where->second;
}

// A relative name is relative to the unit's compilation directory; "dir/../x.cpp" is shortened
// lexically (no file system access, so it holds for files that exist on another machine only).
std::string_view DwarfSourceLines::full_path(Dwarf_Die& unit, const char* file) {
  auto [where, inserted] = full_paths_.try_emplace(file);
  if (inserted) {
    std::filesystem::path path(file);
    Dwarf_Attribute attribute;
    const char* directory = dwarf_formstring(dwarf_attr(&unit, DW_AT_comp_dir, &attribute));
    if (path.is_relative() && directory) path = std::filesystem::path(directory) / path;
    where->second = path.lexically_normal().string();
  }
  return where->second;
}

SourceLocation DwarfSourceLines::call_site(Dwarf_Die& unit, Dwarf_Die& inlined) {
  SourceLocation location;
  Dwarf_Attribute attribute;
  Dwarf_Word value = 0;
  if (dwarf_attr(&inlined, DW_AT_call_line, &attribute) &&
      dwarf_formudata(&attribute, &value) == 0) {
    location.line = static_cast<std::uint32_t>(value);
  }
  Dwarf_Files* files = nullptr;
  std::size_t file_count = 0;
  if (dwarf_attr(&inlined, DW_AT_call_file, &attribute) &&
      dwarf_formudata(&attribute, &value) == 0 &&
      dwarf_getsrcfiles(&unit, &files, &file_count) == 0 && value < file_count) {
    const char* file = dwarf_filesrc(files, value, nullptr, nullptr);
    if (file) location.file = full_path(unit, file);
  }
  return location;
}

// dwarf_getscopes prunes at DIEs without addresses, so it misses the functions clang nests in
// namespaces and classes; this walk descends into those and into every scope holding `address`.
bool DwarfSourceLines::scopes_at(Dwarf_Die& parent, std::uint64_t address) {
  Dwarf_Die child;
  if (dwarf_child(&parent, &child) != 0) return false;
  do {
    switch (dwarf_tag(&child)) {
      case DW_TAG_subprogram:
      case DW_TAG_inlined_subroutine:
      case DW_TAG_lexical_block:
      case DW_TAG_try_block:
      case DW_TAG_catch_block:
      case DW_TAG_entry_point:
        if (dwarf_haspc(&child, address) == 1) {
          scopes_.push_back(child);
          scopes_at(child, address);
          return true;
        }
        break;
      case DW_TAG_namespace:
      case DW_TAG_module:
      case DW_TAG_class_type:
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
        if (scopes_at(child, address)) return true;
        break;
      default: break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

SourceLocation DwarfSourceLines::inlined_calls(std::uint64_t address, bool demangle,
                                               std::vector<InlinedCall>& calls) {
  Dwarf_Die unit;
  if (!unit_of(address, unit)) return {};
  SourceLocation current = line(address);
  scopes_.clear();
  scopes_at(unit, address);
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    if (dwarf_tag(&*scope) != DW_TAG_inlined_subroutine) continue;
    calls.push_back({function_name(*scope, demangle), current});
    current = call_site(unit, *scope);
  }
  return current;
}

}  // namespace perfscope
