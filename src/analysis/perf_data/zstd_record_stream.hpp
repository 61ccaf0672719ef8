// The zstd stream `perf record -z` writes into COMPRESSED and COMPRESSED2 records, decompressed
// into whole records as the reader's walk meets them.
#pragma once

#include <fmt/format.h>
#include <zstd.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "perfscope/abi/record_type.hpp"

namespace perfscope::perf_data {

// The zstd stream `perf record -z` writes: one stream across the data of every COMPRESSED
// record, flushed at each, holding whole records that may straddle two COMPRESSED records. The
// output buffer is reused: whole records go out as soon as they are decompressed, and only a
// straddling record's start is carried over, so memory stays bounded however much the stream
// expands.
class ZstdRecordStream {
 public:
  ZstdRecordStream() : stream_(ZSTD_createDStream()), buffer_(buffer_size) {
    if (!stream_) throw std::bad_alloc();
    ZSTD_initDStream(stream_);
  }
  ~ZstdRecordStream() { ZSTD_freeDStream(stream_); }
  ZstdRecordStream(const ZstdRecordStream&) = delete;
  ZstdRecordStream& operator=(const ZstdRecordStream&) = delete;

  // Decompresses `input` and calls `deliver(bytes)` for every whole record. Returns what went
  // wrong, if anything.
  template <class Deliver>
  std::optional<std::string> feed(std::span<const std::byte> input, Deliver&& deliver) {
    ZSTD_inBuffer in{input.data(), input.size(), 0};
    for (;;) {
      ZSTD_outBuffer out{buffer_.data(), buffer_.size(), used_};
      std::size_t in_before = in.pos;
      std::size_t result = ZSTD_decompressStream(stream_, &out, &in);
      if (ZSTD_isError(result)) {
        return fmt::format("zstd cannot decompress the data: {}", ZSTD_getErrorName(result));
      }
      bool progress = out.pos != used_ || in.pos != in_before;
      bool output_full = out.pos == out.size;
      used_ = out.pos;
      std::size_t position = 0;
      while (used_ - position >= sizeof(abi::RecordHeader)) {
        auto header = load_header(buffer_.data() + position);
        if (header.size < sizeof(abi::RecordHeader)) {
          return fmt::format("a decompressed record (type {}) is {} bytes, less than its header",
                             header.type, header.size);
        }
        if (header.size > used_ - position) break;
        deliver(std::span<const std::byte>(buffer_.data() + position, header.size));
        position += header.size;
      }
      if (position != 0) {
        std::memmove(buffer_.data(), buffer_.data() + position, used_ - position);
        used_ -= position;
      }
      if (in.pos == in.size && !output_full) return std::nullopt;
      if (!progress) return std::string("the zstd stream stopped making progress");
    }
  }
  // Bytes of a record whose end has not been decompressed yet.
  std::size_t pending() const noexcept { return used_; }

 private:
  static abi::RecordHeader load_header(const std::byte* at) noexcept {
    abi::RecordHeader header;
    std::memcpy(&header, at, sizeof header);
    return header;
  }
  // A carried-over record start (under 64 KiB) leaves at least ZSTD_DStreamOutSize() (128 KiB)
  // free for each call.
  static constexpr std::size_t buffer_size = 256 * 1024;
  ZSTD_DStream* stream_;
  std::vector<std::byte> buffer_;
  std::size_t used_ = 0;
};

}  // namespace perfscope::perf_data
