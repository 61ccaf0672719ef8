// A shared mapping of a file descriptor (a perf fd: its user page, ring buffer or AUX area), or a
// read-only mapping of a whole file, unmapped when the owner goes away.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "perfscope/export.hpp"

namespace perfscope::sys {

enum class MapAccess {
  read_only,   // PROT_READ: for a ring buffer, the kernel overwrites old data (backward mode)
  read_write,  // PROT_READ|PROT_WRITE: the reader advances data_tail
};

// The system page size (sysconf), cached.
PERFSCOPE_EXPORT std::size_t page_size() noexcept;

class PERFSCOPE_EXPORT MemoryMap {
 public:
  MemoryMap() = default;
  ~MemoryMap();
  MemoryMap(MemoryMap&& other) noexcept;
  MemoryMap& operator=(MemoryMap&& other) noexcept;
  MemoryMap(const MemoryMap&) = delete;
  MemoryMap& operator=(const MemoryMap&) = delete;

  // mmap(2) of `length` bytes of `fd` from `offset`, MAP_SHARED. Returns 0 or -errno; a mapping
  // held before is released first.
  int map(int fd, std::size_t length, MapAccess access, std::uint64_t offset = 0) noexcept;
  // The whole regular file at `path`, read-only and private: its pages come from the page cache
  // and stay out of the heap however large the file is. Returns 0 or -errno; -ENODEV when `path`
  // is not a regular file (a FIFO, a terminal: read those as a stream). An empty file maps
  // nothing and returns 0 with size() 0. The file must not shrink while mapped (SIGBUS).
  int map_file(const char* path) noexcept;
  // munmap(2); returns 0 or -errno (0 when nothing is mapped).
  int unmap() noexcept;
  // Of a read-only file mapping: gives back the pages of [offset, offset + length) that are
  // resident (madvise MADV_DONTNEED), rounded inwards to whole pages, so that a reader walking a
  // large file keeps only its unread part resident. The bytes stay readable: the next access
  // reads them again from the page cache. Returns 0 or -errno.
  int drop_pages(std::size_t offset, std::size_t length) const noexcept;
  // Maps the pages of [offset, offset + length) in one call (MADV_POPULATE_READ, Linux 5.14)
  // instead of a page fault per few pages as they are first read. 0, or -errno (-EINVAL on
  // older kernels, which then fault them in as before).
  int populate_pages(std::size_t offset, std::size_t length) const noexcept;

  bool mapped() const noexcept { return address_ != nullptr; }
  void* data() const noexcept { return address_; }
  std::size_t size() const noexcept { return length_; }
  std::span<std::byte> bytes() const noexcept {
    return {static_cast<std::byte*>(address_), length_};
  }

 private:
  void* address_ = nullptr;
  std::size_t length_ = 0;
};

}  // namespace perfscope::sys
