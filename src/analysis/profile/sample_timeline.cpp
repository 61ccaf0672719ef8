#include "perfscope/analysis/profile/sample_timeline.hpp"

namespace perfscope {

void SampleTimeline::append(std::uint32_t group, std::uint64_t time, std::uint64_t period) {
  if (size_ % page_size == 0) {
    page_times_.push_back(time);
    deltas_.push_back(0);
  } else if (time < last_time_ || time - last_time_ >= on_the_side) {
    deltas_.push_back(on_the_side);
    side_times_.emplace_back(size_, time);
  } else {
    deltas_.push_back(static_cast<std::uint32_t>(time - last_time_));
  }
  last_time_ = time;
  groups_.push_back(group);

  auto push_period = [this](std::size_t index, std::uint64_t value) {
    if (value >= on_the_side) {
      periods_.push_back(on_the_side);
      side_periods_.emplace_back(index, value);
    } else {
      periods_.push_back(static_cast<std::uint32_t>(value));
    }
  };
  if (size_ == 0) {
    common_period_ = period;
  } else if (periods_.size() == 0 && period != common_period_) {
    // The first period that differs: every sample before it had the common one.
    for (std::size_t i = 0; i < size_; ++i) push_period(i, common_period_);
  }
  if (periods_.size() != 0) push_period(size_, period);
  ++size_;
}

std::size_t SampleTimeline::memory_bytes() const noexcept {
  return groups_.memory_bytes() + deltas_.memory_bytes() + periods_.memory_bytes() +
         page_times_.capacity() * sizeof(std::uint64_t) +
         (side_times_.capacity() + side_periods_.capacity()) *
             sizeof(std::pair<std::size_t, std::uint64_t>);
}

void SampleTimeline::release_before(std::size_t index) noexcept {
  groups_.release_before(index);
  deltas_.release_before(index);
  periods_.release_before(index);
}

void SampleTimeline::remap_groups(std::span<const std::uint32_t> map) noexcept {
  for (std::vector<std::uint32_t>& page : groups_.pages()) {
    for (std::uint32_t& group : page) group = map[group];
  }
}

}  // namespace perfscope
