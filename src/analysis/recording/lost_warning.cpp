#include "perfscope/analysis/recording/lost_warning.hpp"

#include <fmt/format.h>

namespace perfscope {

std::optional<std::string> lost_samples_warning(std::uint64_t samples, std::uint64_t lost) {
  std::uint64_t all = samples + lost;
  // More than 1 %: lost * 100 > all, in integers.
  if (lost == 0 || lost * 100 <= all) return std::nullopt;
  return fmt::format(
      "{} of {} records ({:.1f} %) were lost (the ring buffers were full): the shares may be "
      "biased, as the kernel drops records in bursts; record with larger buffers (-m) or a lower "
      "frequency (-F)",
      lost, all, 100.0 * static_cast<double>(lost) / static_cast<double>(all));
}

}  // namespace perfscope
