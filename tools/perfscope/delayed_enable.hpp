// -D/--delay's rule for the poll loops of record and trace: the events opened disabled are
// enabled once the delay has passed, and no poll waits past that moment.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>

namespace perfscope::cli {

class DelayedEnable {
 public:
  // `delay_ms` <= 0: nothing to enable (0: enabled at the start; -1: never, by this rule).
  DelayedEnable(int delay_ms, std::function<void()> enable)
      : enable_at_(std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms)),
        pending_(delay_ms > 0),
        enable_(std::move(enable)) {}

  // Enables when the time has come; returns how long the next poll may wait: `timeout_ms`, or
  // less when the enable is due sooner.
  int poll_timeout(int timeout_ms) {
    if (!pending_) return timeout_ms;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    enable_at_ - std::chrono::steady_clock::now())
                    .count();
    if (left > 0) return static_cast<int>(std::min<long long>(timeout_ms, left));
    pending_ = false;
    enable_();
    return timeout_ms;
  }

 private:
  std::chrono::steady_clock::time_point enable_at_;
  bool pending_;
  std::function<void()> enable_;
};

}  // namespace perfscope::cli
