// ElfSymbolTable: the function (and data object) symbols of one mapped file, merged from every
// table found for it
// (.symtab, .dynsym, a separate debug file, MiniDebugInfo), sorted once by address and searched
// by binary search. Names are copied out of the ELF files so that those can be closed.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/symbols/demangler.hpp"
#include "perfscope/analysis/symbols/elf_image.hpp"

namespace perfscope {

class ElfSymbolTable {
 public:
  // Adds the function and data object symbols (as perf keeps them) of the first section of
  // `section_type` (SHT_SYMTAB or SHT_DYNSYM) of `image`; returns how many code symbols were added
  // (a table of data objects alone names no code). Call finish() after the last add().
  std::size_t add(const ElfImage& image, std::uint32_t section_type);
  // Adds a "NAME@plt" symbol for each PLT entry of `image` whose relocation (.rela.plt or
  // .rel.plt) names a symbol, as perf names the stubs that calls to shared libraries go through
  // (x86-64 .plt or .plt.sec, i386, AArch64), and for x86-64's .plt.got; an IRELATIVE slot is
  // named by the ifunc its addend points at. Call after add(); returns how many were added.
  std::size_t add_plt(const ElfImage& image);
  // Sorts, keeps one symbol per address (a function over a plain label, sized over unsized,
  // global over local) and extends each size-0 symbol to the next symbol or its section's end.
  void finish();

  bool empty() const noexcept { return entries_.empty(); }
  std::size_t size() const noexcept { return entries_.size(); }

  static constexpr std::uint32_t not_found = 0xffffffffu;
  // The symbol covering `address`, or not_found.
  std::uint32_t find(std::uint64_t address) const noexcept;
  std::uint64_t start(std::uint32_t index) const noexcept { return entries_[index].start; }
  std::uint64_t end(std::uint32_t index) const noexcept { return entries_[index].end; }
  // The symbol's ELF binding as perf keeps it: STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2 (PLT stubs
  // global).
  std::uint8_t binding(std::uint32_t index) const noexcept {
    const Entry& entry = entries_[index];
    if (entry.plt) return 1;
    std::uint8_t binding_order = entry.rank & 7;  // symbol_rank(): 4, 3 global; 2 local; 1, 0 weak
    return binding_order >= 3 ? 1 : binding_order == 2 ? 0 : 2;
  }
  // The symbol's name, demangled in the table's form (and the demangling remembered) when
  // `demangle` is set; a PLT entry's is its target's, demangled, then "@plt".
  std::string_view name(std::uint32_t index, bool demangle);
  // The form name() demangles in (perf's short names unless set): before its first name().
  void set_demangled_form(DemangledForm form) noexcept { form_ = form; }

 private:
  struct Entry {
    std::uint64_t start = 0;
    std::uint64_t end = 0;  // exclusive; 0 until finish() for size-0 symbols
    std::uint64_t section_end = 0;
    std::uint32_t name_offset = 0, name_size = 0;
    std::uint32_t demangled = unset;  // index into demangled_, or unset / no_demangling
    std::uint8_t rank = 0;            // symbol_rank() in elf_symbol_table.cpp
    bool plt = false;                 // synthesized by add_plt(): the name ends in "@plt"
    bool ifunc = false;  // STT_GNU_IFUNC: the entry is the resolver, the name the function's
  };
  // The version-less name of the ifunc whose resolver starts at `address` (its public name, with
  // the fewest leading underscores), else of the best symbol there, else empty.
  std::string_view name_at(std::uint64_t address) const noexcept;
  void push(std::uint64_t start, std::uint64_t end, std::uint64_t section_end,
            std::string_view name, std::uint8_t rank, bool plt, bool ifunc = false);
  // A sized local function's rank: a synthesized name's (a PLT stub's), which a real global or
  // local function of the address outranks or ties.
  static constexpr std::uint8_t sized_local_function_rank = 16 + 8 + 2;
  static constexpr std::uint32_t unset = 0xffffffffu;
  static constexpr std::uint32_t no_demangling = 0xfffffffeu;

  std::string names_;
  std::vector<Entry> entries_;
  std::deque<std::string> demangled_;  // a deque: views into it survive later additions
  DemangledForm form_ = DemangledForm::short_name;
};

}  // namespace perfscope
