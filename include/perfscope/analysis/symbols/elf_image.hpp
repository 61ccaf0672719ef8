// ElfImage: the one way into ELF files. One file opened with libelf (mapped from disk, or decoded
// bytes held in memory), with its header, build id, sections and the program-header arithmetic
// that turns a mapped file offset into a virtual address. The symbolizer, build ids, the
// frame-pointer check, the uprobe symbol resolver and the DWARF unwinder all open files here.
#pragma once

#include <libelf.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope {

class ElfImage {
 public:
  // Opens `path`; on failure returns nullopt and says why in `error` ("file not found: PATH",
  // "cannot open PATH: ...", "not an ELF file: PATH").
  static std::optional<ElfImage> open(const std::string& path, std::string& error);
  // The same, with the errno that says why (ENOENT, ENODEV for what is not a regular file,
  // EACCES..., ENOEXEC for what is not ELF, ENOSYS when libelf refuses to work).
  struct OpenError {
    int errnum = 0;
    std::string message;
  };
  static std::optional<ElfImage> open(const std::string& path, OpenError& error);
  // An ELF image held in memory (decompressed MiniDebugInfo, the vDSO); nullopt when the bytes
  // are not ELF.
  static std::optional<ElfImage> from_bytes(std::vector<unsigned char> bytes);

  ElfImage(ElfImage&& other) noexcept;
  ElfImage& operator=(ElfImage&& other) noexcept;
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;
  ~ElfImage();

  Elf* elf() const noexcept { return elf_; }
  // The ELF header's e_machine (EM_X86_64, ...) and e_type (ET_EXEC, ET_DYN, ET_REL, ...).
  std::uint16_t machine() const noexcept { return machine_; }
  std::uint16_t type() const noexcept { return type_; }
  // The whole file as libelf holds it.
  std::span<const std::byte> bytes() const noexcept;
  // The NT_GNU_BUILD_ID note; empty when the file has none.
  std::span<const std::uint8_t> build_id() const noexcept;
  // The first section named `name`, or nullptr.
  Elf_Scn* section(std::string_view name) const noexcept;
  // A section's name; empty when it has none or the name table is unreadable.
  std::string_view section_name(Elf_Scn* section) const noexcept;
  // The first section of type `type` (SHT_SYMTAB, ...) with entries, or nullptr.
  Elf_Scn* section_of_type(std::uint32_t type) const noexcept;
  // The contents of a section (empty for SHT_NOBITS or when unreadable).
  std::span<const std::byte> section_bytes(Elf_Scn* section) const noexcept;
  // The PT_LOAD program headers: where each part of the file is loaded.
  struct Segment {
    std::uint64_t offset, size, address;  // file offset, file size, virtual address
    std::uint64_t memory_size = 0;        // p_memsz: size > file size for .bss
    std::uint32_t flags = 0;              // PF_R, PF_W, PF_X
  };
  const std::vector<Segment>& segments() const noexcept { return segments_; }
  // Copies `out.size()` bytes from file offset `offset` (pread on the file, not through a
  // mapping: /proc/kcore can be read this way only); false when they are not all there.
  bool read(std::uint64_t offset, std::span<std::uint8_t> out) const noexcept;

 private:
  ElfImage() = default;
  bool load_segments();
  void release() noexcept;

  int fd_ = -1;
  Elf* elf_ = nullptr;
  std::vector<unsigned char> bytes_;  // backs elf_ when the image came from memory
  std::vector<Segment> segments_;
  std::uint16_t machine_ = 0, type_ = 0;
};

}  // namespace perfscope
