#include "perfscope/sys/memory_map.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace perfscope::sys {

std::size_t page_size() noexcept {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

MemoryMap::~MemoryMap() { unmap(); }

MemoryMap::MemoryMap(MemoryMap&& other) noexcept
    : address_(std::exchange(other.address_, nullptr)), length_(std::exchange(other.length_, 0)) {}

MemoryMap& MemoryMap::operator=(MemoryMap&& other) noexcept {
  if (this != &other) {
    unmap();
    address_ = std::exchange(other.address_, nullptr);
    length_ = std::exchange(other.length_, 0);
  }
  return *this;
}

int MemoryMap::map(int fd, std::size_t length, MapAccess access, std::uint64_t offset) noexcept {
  unmap();
  int protection = access == MapAccess::read_write ? PROT_READ | PROT_WRITE : PROT_READ;
  void* address = ::mmap(nullptr, length, protection, MAP_SHARED, fd, static_cast<off_t>(offset));
  if (address == MAP_FAILED) return -errno;
  address_ = address;
  length_ = length;
  return 0;
}

int MemoryMap::map_file(const char* path) noexcept {
  unmap();
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat info {};
  int result = 0;
  if (::fstat(fd, &info) < 0) {
    result = -errno;
  } else if (!S_ISREG(info.st_mode)) {
    result = -ENODEV;
  } else if (info.st_size > 0) {
    auto length = static_cast<std::size_t>(info.st_size);
    void* address = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      result = -errno;
    } else {
      address_ = address;
      length_ = length;
    }
  }
  ::close(fd);  // the mapping keeps the file
  return result;
}

int MemoryMap::unmap() noexcept {
  if (!address_) return 0;
  int result = ::munmap(address_, length_);
  int error = result < 0 ? errno : 0;
  address_ = nullptr;
  length_ = 0;
  return error ? -error : 0;
}

int MemoryMap::drop_pages(std::size_t offset, std::size_t length) const noexcept {
  if (!address_ || offset >= length_) return 0;
  length = std::min(length, length_ - offset);
  std::size_t page = page_size();
  std::size_t begin = (offset + page - 1) / page * page;
  std::size_t end = (offset + length) / page * page;
  if (end <= begin) return 0;
  return ::madvise(static_cast<char*>(address_) + begin, end - begin, MADV_DONTNEED) < 0 ? -errno
                                                                                         : 0;
}

int MemoryMap::populate_pages(std::size_t offset, std::size_t length) const noexcept {
  // Not in every libc's headers yet.
  constexpr int madv_populate_read = 22;
  if (!address_ || offset >= length_) return 0;
  length = std::min(length, length_ - offset);
  std::size_t page = page_size();
  std::size_t begin = offset / page * page;
  std::size_t end = std::min(length_, (offset + length + page - 1) / page * page);
  if (end <= begin) return 0;
  return ::madvise(static_cast<char*>(address_) + begin, end - begin, madv_populate_read) < 0
             ? -errno
             : 0;
}

}  // namespace perfscope::sys
