#include "analysis/unwinding/jit_unwind_table.hpp"

#include <elf.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace perfscope::unwind {

namespace {

// An ELF64 image of the host's byte order holding one section, .eh_frame at `address`.
std::vector<char> eh_frame_image(std::span<const std::uint8_t> eh_frame, std::uint64_t address,
                                 unsigned machine) {
  constexpr std::string_view names("\0.eh_frame\0.shstrtab\0", 21);
  constexpr std::size_t eh_frame_name = 1, shstrtab_name = 11;
  const std::size_t eh_frame_offset = sizeof(Elf64_Ehdr);
  const std::size_t names_offset = eh_frame_offset + eh_frame.size();
  const std::size_t sections_offset = (names_offset + names.size() + 7) & ~std::size_t{7};
  std::vector<char> image(sections_offset + 3 * sizeof(Elf64_Shdr));

  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;
  header.e_ident[EI_VERSION] = EV_CURRENT;
  header.e_type = ET_DYN;
  header.e_machine = static_cast<Elf64_Half>(machine);
  header.e_version = EV_CURRENT;
  header.e_shoff = sections_offset;
  header.e_ehsize = sizeof(Elf64_Ehdr);
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = 3;
  header.e_shstrndx = 2;
  std::memcpy(image.data(), &header, sizeof header);
  std::memcpy(image.data() + eh_frame_offset, eh_frame.data(), eh_frame.size());
  std::memcpy(image.data() + names_offset, names.data(), names.size());

  Elf64_Shdr sections[3]{};
  sections[1].sh_name = eh_frame_name;
  sections[1].sh_type = SHT_PROGBITS;
  sections[1].sh_flags = SHF_ALLOC;
  sections[1].sh_addr = address;
  sections[1].sh_offset = eh_frame_offset;
  sections[1].sh_size = eh_frame.size();
  sections[1].sh_addralign = 1;
  sections[2].sh_name = shstrtab_name;
  sections[2].sh_type = SHT_STRTAB;
  sections[2].sh_offset = names_offset;
  sections[2].sh_size = names.size();
  sections[2].sh_addralign = 1;
  std::memcpy(image.data() + sections_offset, sections, sizeof sections);
  return image;
}

}  // namespace

std::unique_ptr<JitUnwindTable> JitUnwindTable::make(const JitCode& code, unsigned machine) {
  if (code.unwinding.size() <= code.eh_frame_hdr_size || code.size == 0) return nullptr;
  // .eh_frame first, its header after it (the header only helps a search among many FDEs).
  std::span<const std::uint8_t> eh_frame =
      code.unwinding.first(code.unwinding.size() - code.eh_frame_hdr_size);
  std::unique_ptr<JitUnwindTable> table(new JitUnwindTable);
  table->image_ = eh_frame_image(eh_frame, jit_eh_frame_address(code.start, code.size), machine);
  elf_version(EV_CURRENT);
  table->elf_ = elf_memory(table->image_.data(), table->image_.size());
  if (!table->elf_) return nullptr;
  table->cfi_ = dwarf_getcfi_elf(table->elf_);
  if (!table->cfi_) return nullptr;
  Dwarf_Frame* frame = nullptr;
  if (dwarf_cfi_addrframe(table->cfi_, code.start, &frame) != 0) return nullptr;
  std::free(frame);
  return table;
}

JitUnwindTable::~JitUnwindTable() {
  if (cfi_) dwarf_cfi_end(cfi_);
  if (elf_) elf_end(elf_);
}

}  // namespace perfscope::unwind
