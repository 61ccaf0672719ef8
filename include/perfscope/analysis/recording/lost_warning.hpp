// The warning a profile carries when the kernel dropped more than 1 % of its records: the report
// prints it in its header, the exporters in their metadata, the embedded Profiler in its summary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace perfscope {

// "L of N records (P %) were lost (...): the shares may be biased ..." when `lost` exceeds 1 %
// of samples + lost (the kernel drops records when a buffer is full, in bursts, not at random);
// nullopt at or below 1 %.
std::optional<std::string> lost_samples_warning(std::uint64_t samples, std::uint64_t lost);

}  // namespace perfscope
