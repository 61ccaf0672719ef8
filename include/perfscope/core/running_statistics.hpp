// Mean and standard deviation over repeated runs (Welford's update: stable for large counts).
#pragma once

#include <cmath>
#include <cstddef>

namespace perfscope {

class RunningStatistics {
 public:
  void add(double value) noexcept {
    ++count_;
    double delta = value - mean_;
    mean_ += delta / static_cast<double>(count_);
    m2_ += delta * (value - mean_);
  }
  std::size_t count() const noexcept { return count_; }
  double mean() const noexcept { return mean_; }
  // Sample standard deviation (n - 1), 0 for fewer than two values.
  double stddev() const noexcept {
    return count_ > 1 ? std::sqrt(m2_ / static_cast<double>(count_ - 1)) : 0.0;
  }
  // Standard deviation of the mean, as a percentage of the mean (perf stat -r's "+- x%").
  double relative_error_percent() const noexcept {
    if (count_ < 2 || mean_ == 0) return 0;
    return 100.0 * stddev() / std::sqrt(static_cast<double>(count_)) / std::fabs(mean_);
  }

 private:
  std::size_t count_ = 0;
  double mean_ = 0;
  double m2_ = 0;
};

}  // namespace perfscope
