// SampleTimeline: a profile's samples in the walk's order as their sample group, time and period
// alone, in 8 bytes a sample (12 where periods differ) where ProfileSample takes 40: what a view
// of time ranges needs (perfscope view, report --format html) beside the folded groups, which
// hold the rest (stack, thread, event, CPU, off-CPU state).
//
// Times are kept as the difference from the sample before (a page of samples starts from its
// first time); a time before the previous one or more than 4.29 s after it is kept whole on the
// side, as is a period that does not fit 32 bits. Columns grow a page at a time: no copy of the
// whole on growth, no capacity left over past the last page.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace perfscope {

class SampleTimeline {
 public:
  static constexpr std::size_t page_size = 16384;

  void append(std::uint32_t group, std::uint64_t time, std::uint64_t period);

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  // Bytes held (what it costs to keep the samples' times).
  std::size_t memory_bytes() const noexcept;

  std::uint32_t group(std::size_t index) const noexcept { return groups_.at(index); }
  // Every sample's group through `map` (group g becomes map[g]): the builder's and the merge's
  // renumbering of the groups.
  void remap_groups(std::span<const std::uint32_t> map) noexcept;
  void set_group(std::size_t index, std::uint32_t group) noexcept { groups_.at(index) = group; }
  // Frees the pages wholly before sample `index`: for_each may no longer visit them (the merge
  // of build_profile's parts, as it copies them out).
  void release_before(std::size_t index) noexcept;

  // visit(group, time, period) for the samples [first, last), in order.
  template <typename Visit>
  void for_each(Visit&& visit, std::size_t first = 0, std::size_t last = ~std::size_t{0}) const;

 private:
  static constexpr std::uint32_t on_the_side = 0xffffffffu;

  // A column of 32-bit values in pages of page_size.
  class Column {
   public:
    void push_back(std::uint32_t value) {
      if (size_ % page_size == 0) {
        pages_.emplace_back();
        pages_.back().reserve(page_size);
      }
      pages_.back().push_back(value);
      ++size_;
    }
    std::uint32_t at(std::size_t index) const noexcept {
      return pages_[index / page_size][index % page_size];
    }
    std::uint32_t& at(std::size_t index) noexcept {
      return pages_[index / page_size][index % page_size];
    }
    const std::vector<std::uint32_t>& page(std::size_t index) const noexcept {
      return pages_[index];
    }
    std::vector<std::vector<std::uint32_t>>& pages() noexcept { return pages_; }
    void release_before(std::size_t index) noexcept {
      for (std::size_t page = 0; page < index / page_size && page < pages_.size(); ++page) {
        std::vector<std::uint32_t>().swap(pages_[page]);
      }
    }
    std::size_t size() const noexcept { return size_; }
    std::size_t memory_bytes() const noexcept {
      std::size_t bytes = pages_.capacity() * sizeof(std::vector<std::uint32_t>);
      for (const std::vector<std::uint32_t>& page : pages_) {
        bytes += page.capacity() * sizeof(std::uint32_t);
      }
      return bytes;
    }

   private:
    std::vector<std::vector<std::uint32_t>> pages_;
    std::size_t size_ = 0;
  };

  Column groups_, deltas_, periods_;       // periods_: empty while every period is common_period_
  std::vector<std::uint64_t> page_times_;  // the time of each page's first sample
  std::vector<std::pair<std::size_t, std::uint64_t>> side_times_, side_periods_;  // by index
  std::uint64_t common_period_ = 0;
  std::uint64_t last_time_ = 0;
  std::size_t size_ = 0;
};

template <typename Visit>
void SampleTimeline::for_each(Visit&& visit, std::size_t first, std::size_t last) const {
  last = std::min(last, size_);
  if (first >= last) return;
  auto by_index = [](const std::pair<std::size_t, std::uint64_t>& entry, std::size_t index) {
    return entry.first < index;
  };
  // Times are differences: start from the first sample's page.
  std::size_t page = first / page_size;
  std::size_t index = page * page_size;
  auto side_time = std::lower_bound(side_times_.begin(), side_times_.end(), index, by_index);
  auto side_period = std::lower_bound(side_periods_.begin(), side_periods_.end(), first, by_index);
  const bool common = periods_.size() == 0;
  std::uint64_t time = page_times_[page];
  while (index < last) {
    const std::vector<std::uint32_t>& groups = groups_.page(page);
    const std::vector<std::uint32_t>& deltas = deltas_.page(page);
    const std::uint32_t* periods = common ? nullptr : periods_.page(page).data();
    std::size_t end = std::min(last - page * page_size, groups.size());
    for (std::size_t i = index - page * page_size; i < end; ++i, ++index) {
      if (i == 0) {
        time = page_times_[page];
      } else if (deltas[i] == on_the_side) {
        time = side_time->second;
        ++side_time;
      } else {
        time += deltas[i];
      }
      if (index < first) continue;
      std::uint64_t period = common_period_;
      if (!common) {
        period = periods[i];
        if (period == on_the_side) {
          period = side_period->second;
          ++side_period;
        }
      }
      visit(groups[i], time, period);
    }
    ++page;
  }
}

}  // namespace perfscope
