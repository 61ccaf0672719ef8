// DwarfSourceLines: file:line and the chain of inlined calls at an address, from the DWARF of
// one file (the file itself or its separate debug file) through libdw.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/symbols/demangler.hpp"
#include "perfscope/analysis/symbols/elf_image.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"

namespace perfscope {

class DwarfSourceLines {
 public:
  // Reads the DWARF of `image`; nullptr when it has no .debug_info.
  static std::unique_ptr<DwarfSourceLines> open(ElfImage image);
  ~DwarfSourceLines();
  DwarfSourceLines(const DwarfSourceLines&) = delete;
  DwarfSourceLines& operator=(const DwarfSourceLines&) = delete;

  // The line-table row at `address` (in the innermost inlined function when code was inlined).
  SourceLocation line(std::uint64_t address);
  // The calls inlined at `address`, innermost first, each with its location inside the inlined
  // function; returns the location in the outermost (real) function: the call site of the
  // outermost inlined call, or the line-table row when nothing is inlined there.
  SourceLocation inlined_calls(std::uint64_t address, bool demangle,
                               std::vector<InlinedCall>& calls);
  // The form function names are demangled in (perf's short names unless set).
  void set_demangled_form(DemangledForm form) noexcept { form_ = form; }

 private:
  DwarfSourceLines(ElfImage image, Dwarf* dwarf);
  bool unit_of(std::uint64_t address, Dwarf_Die& unit);
  std::string_view function_name(Dwarf_Die& die, bool demangle);
  // A Rust function without a linkage name (an inlined closure: "{closure#0}") named with the
  // modules and functions around it, as its symbol would be ("rhot::sort_round::{closure#0}").
  std::string_view qualified_rust_name(Dwarf_Die& die, const char* name);
  SourceLocation call_site(Dwarf_Die& unit, Dwarf_Die& inlined);
  std::string_view full_path(Dwarf_Die& unit, const char* file);
  // Appends to scopes_ the scopes under `parent` that hold `address`, outermost first.
  bool scopes_at(Dwarf_Die& parent, std::uint64_t address);

  struct UnitRange {
    std::uint64_t low, high;
    Dwarf_Die unit;
  };
  ElfImage image_;
  Dwarf* dwarf_;
  // Built when .debug_aranges does not answer (clang emits none): every unit's address ranges.
  std::vector<UnitRange> ranges_;
  bool ranges_built_ = false;
  std::vector<Dwarf_Die> scopes_;                            // reused by every inlined_calls()
  std::unordered_map<const char*, std::string> demangled_;   // by libdw's string, stable
  std::unordered_map<const char*, std::string> full_paths_;  // likewise
  std::unordered_map<const void*, std::string> qualified_;   // by the DIE's place in .debug_info
  DemangledForm form_ = DemangledForm::short_name;
};

}  // namespace perfscope
