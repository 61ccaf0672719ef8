// Building and reading records byte by byte: appending words and bytes to a record under
// construction, and reading a word at any (unaligned) place of one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace perfscope::record_bytes {

inline void put_u64(std::vector<std::byte>& out, std::uint64_t value) {
  std::size_t at = out.size();
  out.resize(at + sizeof value);
  std::memcpy(out.data() + at, &value, sizeof value);
}

inline void put_bytes(std::vector<std::byte>& out, const void* bytes, std::size_t size) {
  std::size_t at = out.size();
  out.resize(at + size);
  if (size != 0) std::memcpy(out.data() + at, bytes, size);
}

inline std::uint64_t load_u64(const std::byte* at) noexcept {
  std::uint64_t value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

}  // namespace perfscope::record_bytes
