// SampleTimeline: a profile's samples in the walk's order as their sample group, time and period
// alone, in a few bytes a sample (ProfileSample takes 40): what a view of time ranges needs
// (perfscope view, report --format html) beside the folded groups, which hold the rest (stack,
// thread, event, CPU, off-CPU state).
//
// Each sample is variable-length integers: its group, the difference of its time from the
// sample before (zigzag: times may go back), and, once periods differ, the difference of its
// period. A group under 128 takes a byte, a time 10 us after the one before two or three; a
// fixed-period recording of a few thousand groups costs 4-5 bytes a sample. Every block of
// block_size samples starts from zero, so a walk from any sample decodes at most a block it does
// not visit. Pages of page_size samples grow and are freed one at a time: no copy of the whole on
// growth, no capacity left over past the last page.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace perfscope {

class SampleTimeline {
 public:
  static constexpr std::size_t page_size = 16384;
  static constexpr std::size_t block_size = 1024;

  void append(std::uint32_t group, std::uint64_t time, std::uint64_t period);

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  // Bytes held (what it costs to keep the samples' times).
  std::size_t memory_bytes() const noexcept;

  // Every sample's group through `map` (group g becomes map[g]): the builder's and the merge's
  // renumbering of the groups.
  void remap_groups(std::span<const std::uint32_t> map);
  // Frees the pages wholly before sample `index`: for_each may no longer visit them (the merge
  // of build_profile's parts, as it copies them out).
  void release_before(std::size_t index) noexcept;

  // visit(group, time, period) for the samples [first, last), in order.
  template <typename Visit>
  void for_each(Visit&& visit, std::size_t first = 0, std::size_t last = ~std::size_t{0}) const;

 private:
  struct Page {
    std::vector<std::uint8_t> bytes;
    std::array<std::uint32_t, page_size / block_size> blocks{};  // where each block starts
  };

  static void put(std::vector<std::uint8_t>& bytes, std::uint64_t value) {
    while (value >= 0x80) {
      bytes.push_back(static_cast<std::uint8_t>(value | 0x80));
      value >>= 7;
    }
    bytes.push_back(static_cast<std::uint8_t>(value));
  }
  static std::uint64_t take(const std::uint8_t*& at) noexcept {
    std::uint64_t value = 0;
    for (unsigned shift = 0;; shift += 7) {
      std::uint8_t byte = *at++;
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
  }
  // A difference of two unsigned values, as a small unsigned number either way.
  static std::uint64_t zigzag(std::uint64_t from, std::uint64_t to) noexcept {
    auto difference = static_cast<std::int64_t>(to - from);
    return (static_cast<std::uint64_t>(difference) << 1) ^
           static_cast<std::uint64_t>(difference >> 63);
  }
  static std::uint64_t unzigzag(std::uint64_t value) noexcept {
    return (value >> 1) ^ (~(value & 1) + 1);
  }

  // Writes every page again, its groups through `map` (or as they are), with periods when
  // varying_periods_.
  void rewrite(std::span<const std::uint32_t> map, bool had_periods);

  std::vector<Page> pages_;
  bool varying_periods_ = false;  // else every sample's period is common_period_, not written
  std::uint64_t common_period_ = 0;
  std::uint64_t last_time_ = 0, last_period_ = 0;  // the current block's, for the differences
  std::size_t size_ = 0;
};

template <typename Visit>
void SampleTimeline::for_each(Visit&& visit, std::size_t first, std::size_t last) const {
  last = std::min(last, size_);
  if (first >= last) return;
  std::size_t index = first - first % block_size;
  while (index < last) {
    const Page& page = pages_[index / page_size];
    const std::uint8_t* at = page.bytes.data() + page.blocks[index % page_size / block_size];
    const std::size_t block_end = std::min(last, index + block_size);
    std::uint64_t time = 0, period = varying_periods_ ? 0 : common_period_;
    for (; index < block_end; ++index) {
      auto group = static_cast<std::uint32_t>(take(at));
      time += unzigzag(take(at));
      if (varying_periods_) period += unzigzag(take(at));
      if (index >= first) visit(group, time, period);
    }
  }
}

}  // namespace perfscope
