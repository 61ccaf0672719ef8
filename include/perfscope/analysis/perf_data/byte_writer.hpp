// An append-only little-endian byte buffer for building file sections (perf.data features,
// tracing data) before they are written out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace perfscope {

class ByteWriter {
 public:
  std::vector<std::byte> bytes;

  void put(const void* data, std::size_t size) {
    // resize + memcpy: g++-12 misreads vector::insert() of a raw range as an overflow.
    std::size_t at = bytes.size();
    bytes.resize(at + size);
    if (size != 0) std::memcpy(bytes.data() + at, data, size);
  }
  void u8(std::uint8_t value) { put(&value, sizeof value); }
  void u32(std::uint32_t value) { put(&value, sizeof value); }
  void u64(std::uint64_t value) { put(&value, sizeof value); }
};

}  // namespace perfscope
