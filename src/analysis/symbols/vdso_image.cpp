// This process's vDSO, read from where the kernel mapped it (AT_SYSINFO_EHDR).
#include "perfscope/analysis/symbols/vdso_image.hpp"

#include <elf.h>
#include <sys/auxv.h>

#include <cstring>

#include "perfscope/analysis/symbols/elf_image.hpp"

namespace perfscope {

std::vector<std::byte> this_process_vdso_image() {
  auto base = reinterpret_cast<const std::byte*>(getauxval(AT_SYSINFO_EHDR));
  if (!base) return {};
  Elf64_Ehdr header;
  std::memcpy(&header, base, sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
    return {};
  }
  // The section headers come last in the image the kernel builds.
  std::size_t size = header.e_shoff + std::size_t{header.e_shnum} * header.e_shentsize;
  return std::vector<std::byte>(base, base + size);
}

std::vector<std::uint8_t> elf_image_build_id(std::span<const std::byte> image) {
  auto elf = ElfImage::from_bytes(std::vector<unsigned char>(
      reinterpret_cast<const unsigned char*>(image.data()),
      reinterpret_cast<const unsigned char*>(image.data()) + image.size()));
  if (!elf) return {};
  auto id = elf->build_id();
  return {id.begin(), id.end()};
}

std::optional<EmbeddedFile> this_process_vdso_file() {
  std::vector<std::byte> image = this_process_vdso_image();
  if (image.empty()) return std::nullopt;
  EmbeddedFile file;
  file.kind = std::string(vdso_embedded_kind);
  file.name = std::string(vdso_mapping_name);
  file.build_id = elf_image_build_id(image);
  file.bytes = std::move(image);
  return file;
}

}  // namespace perfscope
