#include "perfscope/core/ring_buffer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

std::uint64_t load_acquire(const std::uint64_t& word) noexcept {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(word))
      .load(std::memory_order_acquire);
}

void store_release(std::uint64_t& word, std::uint64_t value) noexcept {
  std::atomic_ref<std::uint64_t>(word).store(value, std::memory_order_release);
}

std::string mlock_explanation(std::size_t bytes) {
  // With CAP_IPC_LOCK no lock limit applies: the memory itself ran out.
  if ((sys::effective_capabilities() >> sys::cap_ipc_lock) & 1) {
    return fmt::format(
        "the buffer is {} KiB per CPU (or thread), and this process may lock any amount "
        "(CAP_IPC_LOCK): the kernel could not find the memory. Fix: use fewer pages "
        "(--mmap-pages), or free memory.",
        bytes / 1024);
  }
  auto mlock_kb = sys::read_sysctl("perf_event_mlock_kb");
  auto limit = sys::locked_memory_limit();
  return fmt::format(
      "the buffer is {} KiB; an unprivileged user may lock kernel.perf_event_mlock_kb ({} KiB) "
      "per CPU plus RLIMIT_MEMLOCK ({} KiB). Fix: use fewer pages (--mmap-pages), raise "
      "`sysctl kernel.perf_event_mlock_kb`, or run with CAP_IPC_LOCK.",
      bytes / 1024, mlock_kb ? std::to_string(*mlock_kb) : "unknown",
      limit.soft == ~0ULL ? std::string("unlimited") : std::to_string(limit.soft / 1024));
}

}  // namespace

std::size_t RingBuffer::pages_for_bytes(std::size_t bytes) noexcept {
  std::size_t pages = (bytes + sys::page_size() - 1) / sys::page_size();
  return std::bit_ceil(std::max<std::size_t>(pages, 1));
}

std::size_t RingBuffer::default_data_pages() noexcept {
  auto mlock_kb = sys::read_sysctl("perf_event_mlock_kb");
  std::size_t kb = mlock_kb && *mlock_kb > 0 ? static_cast<std::size_t>(*mlock_kb) : 516;
  std::size_t pages = kb * 1024 / sys::page_size();
  pages = pages > 1 ? pages - 1 : 1;  // the mlock allowance includes the user page
  return std::bit_floor(pages);
}

RingBuffer RingBuffer::map(const Event& event, std::size_t data_pages, bool overwrite) {
  if (data_pages == 0 || !std::has_single_bit(data_pages)) {
    throw Error(
        EINVAL,
        fmt::format("ring buffer of {} data pages: the number must be a power of two", data_pages),
        fmt::format("use {} pages", std::bit_ceil(std::max<std::size_t>(data_pages, 1))));
  }
  RingBuffer buffer;
  std::size_t length = (1 + data_pages) * sys::page_size();
  int result = buffer.map_.map(event.fd(), length,
                               overwrite ? sys::MapAccess::read_only : sys::MapAccess::read_write);
  if (result < 0) {
    int errnum = -result;
    std::string diagnosis = errnum == EPERM || errnum == ENOMEM ? mlock_explanation(length)
                            : errnum == EINVAL
                                ? "the event cannot have a buffer here: an inherited per-task "
                                  "event (inherit with cpu -1) cannot be mmap'd; open it per CPU"
                                : "";
    throw Error(
        errnum,
        fmt::format("cannot map a {}-page ring buffer: {}", data_pages, std::strerror(errnum)),
        std::move(diagnosis), event.attr());
  }
  buffer.fd_ = event.fd();
  buffer.overwrite_ = overwrite;
  const auto* page = buffer.page();
  // data_offset/data_size exist since Linux 4.1; before, data starts one page in.
  buffer.data_offset_ = page->data_offset ? page->data_offset : sys::page_size();
  buffer.data_size_ = page->data_size ? page->data_size : data_pages * sys::page_size();
  buffer.scratch_.assign(65536 / sizeof(std::uint64_t), 0);
  buffer.position_ = load_acquire(page->data_tail);
  return buffer;
}

std::uint64_t RingBuffer::unread_bytes() const noexcept {
  return load_acquire(page()->data_head) - load_acquire(page()->data_tail);
}

bool RingBuffer::begin_batch() noexcept {
  batch_head_ = load_acquire(page()->data_head);
  position_ = page()->data_tail;
  return batch_head_ != position_;
}

bool RingBuffer::view_at(std::uint64_t position, std::uint64_t limit, RecordView& view) noexcept {
  if (limit - position < abi::record_header_size) return false;
  const std::size_t mask = data_size_ - 1;
  const std::size_t offset = static_cast<std::size_t>(position & mask);
  // The header itself may straddle the end (its size is 8: only at an 8-aligned offset, never
  // in practice, but a corrupt stream must not make us read past the mapping).
  abi::RecordHeader header;
  if (offset + abi::record_header_size <= data_size_) {
    std::memcpy(&header, data() + offset, abi::record_header_size);
  } else {
    std::size_t first = data_size_ - offset;
    std::memcpy(&header, data() + offset, first);
    std::memcpy(reinterpret_cast<std::byte*>(&header) + first, data(),
                abi::record_header_size - first);
  }
  if (header.size < abi::record_header_size || header.size > limit - position ||
      header.size % 8 != 0) {
    if (!overwrite_) ++stats_.corrupt;  // in overwrite mode the oldest record is cut: expected
    return false;
  }
  view.header = header;
  if (offset + header.size <= data_size_) {
    view.bytes = {data() + offset, header.size};
  } else {
    auto* scratch = reinterpret_cast<std::byte*>(scratch_.data());
    std::size_t first = data_size_ - offset;
    std::memcpy(scratch, data() + offset, first);
    std::memcpy(scratch + first, data(), header.size - first);
    view.bytes = {scratch, header.size};
    ++stats_.wrapped_records;
  }
  return true;
}

bool RingBuffer::peek(RecordView& view) noexcept {
  if (position_ == batch_head_) return false;
  if (!view_at(position_, batch_head_, view)) {
    position_ = batch_head_;  // unparseable: drop the rest of the batch rather than loop
    return false;
  }
  return true;
}

bool RingBuffer::next(RecordView& view) noexcept {
  if (!peek(view)) return false;
  position_ += view.header.size;
  ++stats_.records;
  stats_.bytes += view.header.size;
  return true;
}

void RingBuffer::end_batch() noexcept {
  if (!overwrite_) store_release(page()->data_tail, position_);
}

void RingBuffer::begin_backward() noexcept {
  // In write_backward mode data_head moves down from 0: the newest record starts at head and
  // older ones follow it, up to -head bytes (or the whole area once it has wrapped).
  batch_head_ = load_acquire(page()->data_head);
  position_ = batch_head_;
  std::uint64_t written = 0 - batch_head_;
  backward_end_ = batch_head_ + std::min<std::uint64_t>(written, data_size_);
}

bool RingBuffer::next_backward(RecordView& view) noexcept {
  if (position_ == backward_end_) return false;
  if (!view_at(position_, backward_end_, view) || view.header.type == 0) {
    position_ = backward_end_;  // the oldest, partly overwritten record ends the walk
    return false;
  }
  position_ += view.header.size;
  ++stats_.records;
  stats_.bytes += view.header.size;
  return true;
}

void RingBuffer::map_aux(std::size_t bytes, bool overwrite) {
  std::size_t aux_bytes = pages_for_bytes(bytes) * sys::page_size();
  auto* user = page();
  user->aux_offset = data_offset_ + data_size_;
  user->aux_size = aux_bytes;
  int result = aux_map_.map(fd_, aux_bytes,
                            overwrite ? sys::MapAccess::read_only : sys::MapAccess::read_write,
                            user->aux_offset);
  if (result < 0) {
    // The kernel refuses an AUX area with EOPNOTSUPP for an event whose PMU has none (every
    // software, tracepoint and core PMU event), with EINVAL for an offset or size it rejects.
    int errnum = -result;
    std::string diagnosis =
        errnum == EOPNOTSUPP
            ? "the event's PMU has no AUX area: only events of PMUs that trace into one "
              "(intel_pt, intel_bts, cs_etm, arm_spe_N, ...) can map it."
        : errnum == EINVAL
            ? "the kernel rejected the AUX offset or size: map the data area first, and give a "
              "power-of-two number of pages."
            : mlock_explanation(aux_bytes);
    throw Error(
        errnum,
        fmt::format("cannot map a {} KiB AUX area: {}", aux_bytes / 1024, std::strerror(errnum)),
        std::move(diagnosis));
  }
}

AuxChunk aux_chunk(std::span<const std::byte> area, std::uint64_t tail,
                   std::uint64_t head) noexcept {
  AuxChunk chunk;
  chunk.offset = tail;
  if (area.empty() || head <= tail) return chunk;
  std::uint64_t size = head - tail;
  if (size > area.size()) {
    chunk.overwritten = size - area.size();
    chunk.offset = head - area.size();
    size = area.size();
  }
  std::size_t start = static_cast<std::size_t>(chunk.offset & (area.size() - 1));
  std::size_t first = std::min<std::size_t>(static_cast<std::size_t>(size), area.size() - start);
  chunk.first = area.subspan(start, first);
  chunk.second = area.first(static_cast<std::size_t>(size) - first);
  return chunk;
}

std::uint64_t RingBuffer::aux_head() const noexcept { return load_acquire(page()->aux_head); }

bool RingBuffer::read_aux(AuxChunk& chunk) const noexcept {
  if (aux_map_.bytes().empty()) return false;
  // The tail is ours: only this reader writes it.
  chunk = aux_chunk(aux_map_.bytes(), page()->aux_tail, aux_head());
  return chunk.size() != 0;
}

void RingBuffer::set_aux_tail(std::uint64_t tail) noexcept {
  store_release(page()->aux_tail, tail);
}

}  // namespace perfscope
