// PLT stubs named after the function they jump to ("strlen@plt"), as perf and objdump name them.
// A stub is matched with its relocation through the GOT slot it jumps through, decoded from its
// code (x86-64, AArch64), not by position: IRELATIVE relocations are sorted after the others in
// .rela.plt while their stubs are not, so the n-th stub is not the n-th relocation's.
#include <elf.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "analysis/symbols/elf_symbol_table.hpp"

namespace perfscope {

namespace {

bool is_irelative(int machine, std::uint64_t type) noexcept {
  switch (machine) {
    case EM_X86_64: return type == R_X86_64_IRELATIVE;
    case EM_386: return type == R_386_IRELATIVE;
    case EM_AARCH64: return type == R_AARCH64_IRELATIVE;
    default: return false;
  }
}

struct Section {
  GElf_Shdr header{};
  const std::uint8_t* bytes = nullptr;
  std::size_t size = 0;  // of bytes
};

bool read_section(const ElfImage& image, const char* name, Section& out, bool need_bytes) {
  Elf_Scn* scn = image.section(name);
  if (!scn || !gelf_getshdr(scn, &out.header)) return false;
  if (!need_bytes) return true;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || !data->d_buf || out.header.sh_type != SHT_PROGBITS) return false;
  out.bytes = static_cast<const std::uint8_t*>(data->d_buf);
  out.size = std::min<std::size_t>(data->d_size, out.header.sh_size);
  return true;
}

// The GOT slot an x86-64 stub jumps through: its "jmp *disp32(%rip)" (ff 25), after whatever
// endbr64 or bnd prefix comes first. 0 when the entry holds no such jump.
std::uint64_t x86_64_slot(const Section& section, std::size_t offset, std::size_t size) {
  const std::uint8_t* entry = section.bytes + offset;
  for (std::size_t at = 0; at + 6 <= size; ++at) {
    if (entry[at] != 0xff || entry[at + 1] != 0x25) continue;
    std::int32_t displacement;
    std::memcpy(&displacement, entry + at + 2, sizeof displacement);
    return section.header.sh_addr + offset + at + 6 + static_cast<std::int64_t>(displacement);
  }
  return 0;
}

// The GOT slot an AArch64 stub loads: "adrp x16, PAGE; ldr x17, [x16, #OFF]".
std::uint64_t aarch64_slot(const Section& section, std::size_t offset, std::size_t size) {
  if (size < 8) return 0;
  std::uint32_t adrp, ldr;
  std::memcpy(&adrp, section.bytes + offset, 4);
  std::memcpy(&ldr, section.bytes + offset + 4, 4);
  if ((adrp & 0x9f000000u) != 0x90000000u || (ldr & 0xffc00000u) != 0xf9400000u) return 0;
  std::uint64_t immediate = ((adrp >> 29) & 3u) | (((adrp >> 5) & 0x7ffffu) << 2);
  auto page_delta = static_cast<std::int64_t>(immediate << 43) >> 31;  // sign-extended, << 12
  std::uint64_t pc = section.header.sh_addr + offset;
  std::uint64_t page = (pc & ~std::uint64_t{0xfff}) + static_cast<std::uint64_t>(page_delta);
  return page + ((ldr >> 10) & 0xfffu) * 8;
}

}  // namespace

std::size_t ElfSymbolTable::add_plt(const ElfImage& image) {
  Elf* elf = image.elf();
  GElf_Ehdr file_header;
  if (!gelf_getehdr(elf, &file_header)) return 0;
  const int machine = file_header.e_machine;
  if (machine != EM_X86_64 && machine != EM_386 && machine != EM_AARCH64) return 0;

  // Every relocation of a jump slot: (GOT slot, target name), in table order. IRELATIVE slots
  // (calls to an ifunc of this file) name no symbol: their addend is the resolver, whose IFUNC
  // symbol carries the function's name, as perf 6.3 and later name it.
  std::vector<std::pair<std::uint64_t, std::string>> slots;
  auto read_relocations = [&](const char* section_name, bool rela, bool jump_slots) {
    Section table;
    if (!read_section(image, section_name, table, false) || table.header.sh_entsize == 0) return;
    Elf_Scn* scn = image.section(section_name);
    Elf_Data* data = elf_getdata(scn, nullptr);
    Elf_Scn* symbols = elf_getscn(elf, table.header.sh_link);
    GElf_Shdr symbols_header;
    if (!data || !symbols || !gelf_getshdr(symbols, &symbols_header)) return;
    Elf_Data* symbol_data = elf_getdata(symbols, nullptr);
    if (!symbol_data) return;
    const std::size_t count = table.header.sh_size / table.header.sh_entsize;
    for (std::size_t i = 0; i < count; ++i) {
      GElf_Rela relocation{};
      if (rela) {
        if (!gelf_getrela(data, static_cast<int>(i), &relocation)) continue;
      } else {
        GElf_Rel plain;
        if (!gelf_getrel(data, static_cast<int>(i), &plain)) continue;
        relocation.r_offset = plain.r_offset;
        relocation.r_info = plain.r_info;
      }
      const std::uint64_t type = GELF_R_TYPE(relocation.r_info);
      if (!jump_slots && !(machine == EM_X86_64 && type == R_X86_64_GLOB_DAT)) continue;
      const std::size_t symbol_index = GELF_R_SYM(relocation.r_info);
      std::string name;
      if (symbol_index == 0) {
        if (rela && is_irelative(machine, type)) {
          name = name_at(static_cast<std::uint64_t>(relocation.r_addend));
        }
      } else if (GElf_Sym symbol;
                 gelf_getsym(symbol_data, static_cast<int>(symbol_index), &symbol)) {
        if (const char* target = elf_strptr(elf, symbols_header.sh_link, symbol.st_name)) {
          name = target;
        }
      }
      slots.emplace_back(relocation.r_offset, std::move(name));
    }
  };
  if (image.section(".rela.plt")) {
    read_relocations(".rela.plt", true, true);
  } else {
    read_relocations(".rel.plt", false, true);
  }
  const std::size_t jump_slot_count = slots.size();

  std::size_t added = 0;
  std::string name;
  auto add_stub = [&](std::uint64_t start, std::uint64_t size, std::uint64_t section_end,
                      std::string_view target) {
    if (target.empty()) return;
    name.assign(target);
    name += "@plt";
    push(start, start + size, section_end, name, sized_local_function_rank, true);
    ++added;
  };

  // The header every lazy binding goes through on its first call is named ".plt", as perf 6.3 and
  // later name it (6.1 shows it as the _init before it).
  auto add_header = [&](const Section& section, std::uint64_t header) {
    if (header > section.header.sh_size) return;
    push(section.header.sh_addr, section.header.sh_addr + header,
         section.header.sh_addr + section.header.sh_size, ".plt", sized_local_function_rank, false);
    ++added;
  };
  if (machine == EM_386) {
    // i386 stubs jump through %ebx (PIC) or an absolute slot: paired by position, after the
    // header of one entry.
    Section plt;
    if (!read_section(image, ".plt", plt, false)) return 0;
    const std::uint64_t entry_size = plt.header.sh_entsize != 0 ? plt.header.sh_entsize : 16;
    const std::uint64_t end = plt.header.sh_addr + plt.header.sh_size;
    add_header(plt, entry_size);
    for (std::size_t i = 0; i < jump_slot_count; ++i) {
      std::uint64_t start = plt.header.sh_addr + entry_size * (i + 1);
      if (start + entry_size > end) break;
      add_stub(start, entry_size, end, slots[i].second);
    }
    return added;
  }

  std::vector<std::pair<std::uint64_t, std::string>> by_slot(slots.begin(), slots.end());
  std::sort(by_slot.begin(), by_slot.end());
  auto target_of = [&](std::uint64_t slot) -> std::string_view {
    auto found = std::lower_bound(by_slot.begin(), by_slot.end(), slot,
                                  [](const std::pair<std::uint64_t, std::string>& entry,
                                     std::uint64_t key) { return entry.first < key; });
    return found != by_slot.end() && found->first == slot ? std::string_view(found->second)
                                                          : std::string_view();
  };
  // Walks a section of stubs, each `entry_size` bytes after `header` bytes.
  auto add_section = [&](const Section& section, std::uint64_t header, std::uint64_t entry_size) {
    const std::uint64_t end = section.header.sh_addr + section.header.sh_size;
    for (std::uint64_t offset = header; offset + entry_size <= section.size; offset += entry_size) {
      std::uint64_t slot = machine == EM_X86_64 ? x86_64_slot(section, offset, entry_size)
                                                : aarch64_slot(section, offset, entry_size);
      if (slot != 0) add_stub(section.header.sh_addr + offset, entry_size, end, target_of(slot));
    }
  };

  if (machine == EM_AARCH64) {
    Section plt;
    if (read_section(image, ".plt", plt, true)) {
      add_header(plt, 32);
      add_section(plt, 32, 16);
    }
    return added;
  }
  // x86-64: with IBT the stubs that jump are in .plt.sec (.plt holds the lazy trampolines).
  Section plt;
  Section lazy_plt;
  const bool has_lazy_plt = read_section(image, ".plt", lazy_plt, true);
  const std::uint64_t lazy_entry_size =
      lazy_plt.header.sh_entsize >= 8 ? lazy_plt.header.sh_entsize : 16;
  if (has_lazy_plt) add_header(lazy_plt, lazy_entry_size);
  if (read_section(image, ".plt.sec", plt, true)) {
    add_section(plt, 0, 16);
  } else if (has_lazy_plt) {
    add_section(lazy_plt, lazy_entry_size, lazy_entry_size);
  }
  // .plt.got: the stubs of functions also reached through their GOT slot (their address is
  // taken, as __cxa_finalize's is in every PIE), named by the slot's GLOB_DAT relocation.
  Section got_stubs;
  if (read_section(image, ".plt.got", got_stubs, true)) {
    read_relocations(".rela.dyn", true, false);
    by_slot.assign(slots.begin() + static_cast<std::ptrdiff_t>(jump_slot_count), slots.end());
    std::sort(by_slot.begin(), by_slot.end());
    const std::uint64_t entry_size =
        got_stubs.header.sh_entsize >= 8 ? got_stubs.header.sh_entsize : 8;
    add_section(got_stubs, 0, entry_size);
  }
  return added;
}

std::string_view ElfSymbolTable::name_at(std::uint64_t address) const noexcept {
  const Entry* best = nullptr;
  auto name_of = [this](const Entry& entry) {
    std::string_view name(names_.data() + entry.name_offset, entry.name_size);
    return name.substr(0, name.find('@'));
  };
  auto underscores = [](std::string_view name) { return name.find_first_not_of('_'); };
  for (const Entry& entry : entries_) {
    if (entry.start != address || entry.plt) continue;
    bool better = !best || (entry.ifunc && !best->ifunc);
    if (best && entry.ifunc == best->ifunc) {
      std::size_t ours = underscores(name_of(entry)), theirs = underscores(name_of(*best));
      better = entry.ifunc ? ours < theirs || (ours == theirs && entry.rank > best->rank)
                           : entry.rank > best->rank;
    }
    if (better) best = &entry;
  }
  return best ? name_of(*best) : std::string_view();
}

}  // namespace perfscope
