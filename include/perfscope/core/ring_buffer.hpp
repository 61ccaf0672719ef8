// RingBuffer: the mmap'd data area of a perf event. Records are handed out as views into the
// mapping (zero-copy); only a record that wraps around the end is copied, into a scratch buffer
// allocated once. data_head is read with acquire and data_tail written with release, as the
// manual prescribes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "perfscope/abi/perf_event_mmap_page.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/export.hpp"
#include "perfscope/sys/memory_map.hpp"

namespace perfscope {

struct RingBufferStats {
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
  std::uint64_t wrapped_records = 0;  // copied to scratch because they crossed the end
  std::uint64_t corrupt = 0;          // batches abandoned at an impossible header
};

// AUX data the kernel wrote and the reader has not released: [tail, head) of the stream, which
// lies in the AUX area at offset % size and may wrap to the area's start.
struct PERFSCOPE_EXPORT AuxChunk {
  std::uint64_t offset = 0;  // of `first`'s first byte in the stream
  std::span<const std::byte> first;
  std::span<const std::byte> second;  // what wrapped to the area's start; empty if none
  // Bytes before `offset` that the kernel overwrote before they were read (an area that holds
  // less than head - tail): only the newest area-size bytes are still there.
  std::uint64_t overwritten = 0;
  std::uint64_t size() const noexcept { return first.size() + second.size(); }
  // The tail to release: everything up to head.
  std::uint64_t end() const noexcept { return offset + size(); }
};

// The chunk [tail, head) of `area` (a power-of-two size, as the kernel maps it).
PERFSCOPE_EXPORT AuxChunk aux_chunk(std::span<const std::byte> area, std::uint64_t tail,
                                    std::uint64_t head) noexcept;

class PERFSCOPE_EXPORT RingBuffer {
 public:
  RingBuffer() = default;
  RingBuffer(RingBuffer&&) noexcept = default;
  RingBuffer& operator=(RingBuffer&&) noexcept = default;

  // Maps 1 + data_pages pages of `event`'s fd; data_pages must be a power of two. `overwrite`
  // maps read-only: the kernel then overwrites old data (use with write_backward). Throws
  // perfscope::Error with the mlock arithmetic when the kernel refuses the size.
  static RingBuffer map(const Event& event, std::size_t data_pages, bool overwrite = false);

  // Data pages (a power of two) that hold at least `bytes`.
  static std::size_t pages_for_bytes(std::size_t bytes) noexcept;
  // perf's default: as many pages as kernel.perf_event_mlock_kb allows per buffer (512 KiB on
  // most systems), at least one.
  static std::size_t default_data_pages() noexcept;

  bool mapped() const noexcept { return map_.mapped(); }
  int fd() const noexcept { return fd_; }
  std::size_t data_size() const noexcept { return data_size_; }
  const abi::PerfEventMmapPage& user_page() const noexcept { return *page(); }
  const RingBufferStats& stats() const noexcept { return stats_; }

  // Bytes written by the kernel and not yet released.
  std::uint64_t unread_bytes() const noexcept;

  // Forward reading in batches: begin_batch() takes a snapshot of data_head; next() hands out
  // the records up to it; end_batch() releases everything handed out (writes data_tail). A view
  // stays valid until end_batch(), except a wrapped record, valid until the next call to next().
  bool begin_batch() noexcept;
  bool next(RecordView& view) noexcept;
  // Peeks at the record next() would return, without advancing.
  bool peek(RecordView& view) noexcept;
  void end_batch() noexcept;

  // Drains everything available, calling consumer(const RecordView&) for each record.
  template <class Consumer>
  std::size_t drain(Consumer&& consumer) noexcept {
    std::size_t count = 0;
    while (begin_batch()) {
      RecordView view;
      while (next(view)) {
        consumer(view);
        ++count;
      }
      end_batch();
    }
    return count;
  }

  // Overwrite (write_backward) mode: pauses output, hands the newest records to consumer,
  // newest first, then resumes. Returns the number of records.
  template <class Consumer>
  std::size_t snapshot_backward(Event& event, Consumer&& consumer) {
    event.pause_output(true);
    std::size_t count = 0;
    begin_backward();
    RecordView view;
    while (next_backward(view)) {
      consumer(view);
      ++count;
    }
    event.pause_output(false);
    return count;
  }

  // AUX area: maps `bytes` (a power-of-two number of pages) after the data area, setting
  // aux_offset and aux_size in the user page first, as the manual requires.
  void map_aux(std::size_t bytes, bool overwrite = false);
  std::span<const std::byte> aux_area() const noexcept { return aux_map_.bytes(); }
  std::uint64_t aux_head() const noexcept;
  void set_aux_tail(std::uint64_t tail) noexcept;
  // The AUX data written since the last release (aux_head read with acquire); false when none.
  // The chunk's bytes stay valid, the kernel not writing over them, until release_aux(chunk).
  bool read_aux(AuxChunk& chunk) const noexcept;
  void release_aux(const AuxChunk& chunk) noexcept { set_aux_tail(chunk.end()); }

 private:
  abi::PerfEventMmapPage* page() const noexcept {
    return static_cast<abi::PerfEventMmapPage*>(map_.data());
  }
  const std::byte* data() const noexcept {
    return static_cast<const std::byte*>(map_.data()) + data_offset_;
  }
  bool view_at(std::uint64_t position, std::uint64_t limit, RecordView& view) noexcept;
  void begin_backward() noexcept;
  bool next_backward(RecordView& view) noexcept;

  sys::MemoryMap map_;
  sys::MemoryMap aux_map_;
  int fd_ = -1;
  bool overwrite_ = false;
  std::size_t data_offset_ = 0;
  std::size_t data_size_ = 0;
  std::uint64_t batch_head_ = 0;
  std::uint64_t position_ = 0;  // next record to hand out
  std::uint64_t backward_end_ = 0;
  std::vector<std::uint64_t> scratch_;  // holds one wrapped record (at most 64 KiB)
  RingBufferStats stats_;
};

}  // namespace perfscope
