#include "perfscope/analysis/symbols/elf_image.hpp"

#include <elf.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

bool libelf_ready() {
  static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
  return ready;
}

}  // namespace

std::optional<ElfImage> ElfImage::open(const std::string& path, std::string& error) {
  OpenError failure;
  auto image = open(path, failure);
  if (!image) error = std::move(failure.message);
  return image;
}

std::optional<ElfImage> ElfImage::open(const std::string& path, OpenError& error) {
  if (!libelf_ready()) {
    error = {ENOSYS, "libelf refuses this ELF version"};
    return std::nullopt;
  }
  ElfImage image;
  // Only a regular file: the path comes from a recording, and may name a FIFO or a terminal.
  int fd = sys::open_regular_file(path);
  if (fd < 0) {
    error.errnum = -fd;
    error.message = fd == -ENOENT   ? fmt::format("file not found: {}", path)
                    : fd == -ENODEV ? fmt::format("not a regular file: {}", path)
                                    : fmt::format("cannot open {}: {}", path, std::strerror(-fd));
    return std::nullopt;
  }
  image.fd_ = fd;
  image.elf_ = elf_begin(image.fd_, ELF_C_READ_MMAP, nullptr);
  if (!image.elf_ || elf_kind(image.elf_) != ELF_K_ELF || !image.load_segments()) {
    error = {ENOEXEC, fmt::format("not an ELF file: {}", path)};
    return std::nullopt;
  }
  return image;
}

std::optional<ElfImage> ElfImage::from_bytes(std::vector<unsigned char> bytes) {
  if (!libelf_ready() || bytes.empty()) return std::nullopt;
  ElfImage image;
  image.bytes_ = std::move(bytes);
  image.elf_ = elf_memory(reinterpret_cast<char*>(image.bytes_.data()), image.bytes_.size());
  if (!image.elf_ || elf_kind(image.elf_) != ELF_K_ELF || !image.load_segments()) {
    return std::nullopt;
  }
  return image;
}

ElfImage::ElfImage(ElfImage&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      elf_(std::exchange(other.elf_, nullptr)),
      bytes_(std::move(other.bytes_)),
      segments_(std::move(other.segments_)),
      machine_(other.machine_),
      type_(other.type_) {}

ElfImage& ElfImage::operator=(ElfImage&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    elf_ = std::exchange(other.elf_, nullptr);
    bytes_ = std::move(other.bytes_);
    segments_ = std::move(other.segments_);
    machine_ = other.machine_;
    type_ = other.type_;
  }
  return *this;
}

ElfImage::~ElfImage() { release(); }

void ElfImage::release() noexcept {
  if (elf_) elf_end(elf_);
  if (fd_ >= 0) ::close(fd_);
  elf_ = nullptr;
  fd_ = -1;
}

bool ElfImage::load_segments() {
  GElf_Ehdr header;
  if (!gelf_getehdr(elf_, &header)) return false;
  machine_ = header.e_machine;
  type_ = header.e_type;
  std::size_t count = 0;
  if (elf_getphdrnum(elf_, &count) != 0) return true;  // relocatable objects have none
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Phdr program;
    if (!gelf_getphdr(elf_, static_cast<int>(i), &program) || program.p_type != PT_LOAD) continue;
    segments_.push_back(
        {program.p_offset, program.p_filesz, program.p_vaddr, program.p_memsz, program.p_flags});
  }
  return true;
}

bool ElfImage::read(std::uint64_t offset, std::span<std::uint8_t> out) const noexcept {
  if (fd_ < 0) {
    if (offset > bytes_.size() || out.size() > bytes_.size() - offset) return false;
    std::memcpy(out.data(), bytes_.data() + offset, out.size());
    return true;
  }
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t got =
        ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<std::size_t>(got);
  }
  return true;
}

std::span<const std::uint8_t> ElfImage::build_id() const noexcept {
  const void* bytes = nullptr;
  ssize_t size = dwelf_elf_gnu_build_id(elf_, &bytes);
  if (size <= 0 || !bytes) return {};
  return {static_cast<const std::uint8_t*>(bytes), static_cast<std::size_t>(size)};
}

std::span<const std::byte> ElfImage::bytes() const noexcept {
  std::size_t size = 0;
  const char* raw = elf_rawfile(elf_, &size);
  if (!raw) return {};
  return {reinterpret_cast<const std::byte*>(raw), size};
}

std::string_view ElfImage::section_name(Elf_Scn* section) const noexcept {
  std::size_t names_index = 0;
  GElf_Shdr header;
  if (!section || elf_getshdrstrndx(elf_, &names_index) != 0 || !gelf_getshdr(section, &header)) {
    return {};
  }
  const char* name = elf_strptr(elf_, names_index, header.sh_name);
  return name ? std::string_view(name) : std::string_view();
}

Elf_Scn* ElfImage::section(std::string_view name) const noexcept {
  for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn; scn = elf_nextscn(elf_, scn)) {
    if (section_name(scn) == name) return scn;
  }
  return nullptr;
}

Elf_Scn* ElfImage::section_of_type(std::uint32_t type) const noexcept {
  for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn; scn = elf_nextscn(elf_, scn)) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) && header.sh_type == type && header.sh_entsize != 0 &&
        header.sh_size >= header.sh_entsize) {
      return scn;
    }
  }
  return nullptr;
}

std::span<const std::byte> ElfImage::section_bytes(Elf_Scn* section) const noexcept {
  GElf_Shdr header;
  if (!section || !gelf_getshdr(section, &header) || header.sh_type == SHT_NOBITS) return {};
  Elf_Data* data = elf_rawdata(section, nullptr);
  if (!data || !data->d_buf) return {};
  return {static_cast<const std::byte*>(data->d_buf), data->d_size};
}

}  // namespace perfscope
