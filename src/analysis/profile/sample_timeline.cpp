#include "perfscope/analysis/profile/sample_timeline.hpp"

namespace perfscope {

void SampleTimeline::append(std::uint32_t group, std::uint64_t time, std::uint64_t period) {
  if (size_ == 0) {
    common_period_ = period;
  } else if (!varying_periods_ && period != common_period_) {
    // The first period that differs: every sample before it is written again with its period.
    varying_periods_ = true;
    rewrite({}, false);
  }
  const std::size_t in_page = size_ % page_size;
  if (in_page == 0) pages_.emplace_back();
  Page& page = pages_.back();
  if (in_page % block_size == 0) {
    page.blocks[in_page / block_size] = static_cast<std::uint32_t>(page.bytes.size());
    last_time_ = 0;
    last_period_ = 0;
  }
  put(page.bytes, group);
  put(page.bytes, zigzag(last_time_, time));
  last_time_ = time;
  if (varying_periods_) {
    put(page.bytes, zigzag(last_period_, period));
    last_period_ = period;
  }
  ++size_;
  // A full page keeps no room to grow.
  if (size_ % page_size == 0) page.bytes.shrink_to_fit();
}

void SampleTimeline::rewrite(std::span<const std::uint32_t> map, bool had_periods) {
  std::vector<std::uint8_t> bytes;
  for (std::size_t p = 0; p < pages_.size(); ++p) {
    Page& page = pages_[p];
    if (page.bytes.empty()) continue;  // released
    const std::size_t count = std::min(page_size, size_ - p * page_size);
    const std::uint8_t* at = page.bytes.data();
    bytes.clear();
    bytes.reserve(page.bytes.size() + (varying_periods_ && !had_periods ? count * 2 : 0));
    std::uint64_t period = common_period_;
    for (std::size_t i = 0; i < count; ++i) {
      if (i % block_size == 0) {
        page.blocks[i / block_size] = static_cast<std::uint32_t>(bytes.size());
        if (had_periods) period = 0;
      }
      auto group = static_cast<std::uint32_t>(take(at));
      std::uint64_t time_difference = take(at);
      std::uint64_t last_period = period;
      if (had_periods) period += unzigzag(take(at));
      put(bytes, map.empty() ? group : map[group]);
      put(bytes, time_difference);
      if (varying_periods_) put(bytes, zigzag(i % block_size == 0 ? 0 : last_period, period));
    }
    // (The last page keeps room to grow.)
    if (p + 1 == pages_.size()) bytes.reserve(page.bytes.capacity());
    page.bytes.swap(bytes);
    if (p + 1 < pages_.size()) page.bytes.shrink_to_fit();
  }
  if (varying_periods_ && !had_periods) last_period_ = common_period_;
}

std::size_t SampleTimeline::memory_bytes() const noexcept {
  std::size_t bytes = pages_.capacity() * sizeof(Page);
  for (const Page& page : pages_) bytes += page.bytes.capacity();
  return bytes;
}

void SampleTimeline::release_before(std::size_t index) noexcept {
  for (std::size_t p = 0; p < index / page_size && p < pages_.size(); ++p) {
    std::vector<std::uint8_t>().swap(pages_[p].bytes);
  }
}

void SampleTimeline::remap_groups(std::span<const std::uint32_t> map) {
  rewrite(map, varying_periods_);
}

}  // namespace perfscope
