#pragma once

#include <cstdint>

namespace perfscope::detail {

// Work the compiler cannot drop, for the machine's probes to count and sample.
inline void busy_loop(std::uint64_t iterations) noexcept {
  static volatile std::uint64_t sink = 0;
  for (std::uint64_t i = 0; i < iterations; ++i) sink = sink + i;
}

}  // namespace perfscope::detail
