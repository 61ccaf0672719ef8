// The samples a perf user picks on report's and script's command line, with perf's meaning:
// --time (absolute ranges and percentage slices of the recording), --cpu, --pid, --tid and
// --comms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perfscope/export.hpp"

namespace perfscope {

// perf's --time: ranges of sample times, each [start, end] in nanoseconds, both ends included
// (as perf_time__skip_sample). Forms, as perf-script(1) gives them:
//   "START,STOP"   seconds with up to nine decimals; either side may be empty (an open end);
//                  several ranges separated by blanks ("1.5,2 3,")
//   "A%/N,B%/M"    the N-th slice of A % of the recording, and more slices
//   "A%-B%,C%-D%"  from A % to B % of the recording, and more
// Percentages are of [first, last], the recording's first and last sample times.
class TimeRanges {
 public:
  TimeRanges() = default;
  // Throws std::invalid_argument naming the part that is wrong and the forms perf takes;
  // `first_last` is needed by the percentage forms only (an error says so without it).
  PERFSCOPE_EXPORT static TimeRanges parse(
      std::string_view text, std::optional<std::pair<std::uint64_t, std::uint64_t>> first_last);

  bool empty() const noexcept { return ranges_.empty(); }
  bool contains(std::uint64_t time) const noexcept {
    if (ranges_.empty()) return true;
    for (const auto& [start, end] : ranges_) {
      if (time >= start && time <= end) return true;
    }
    return false;
  }
  // Whether [begin, end] meets a range (an off-CPU interval is picked when any of it is).
  bool overlaps(std::uint64_t begin, std::uint64_t end) const noexcept {
    if (ranges_.empty()) return true;
    for (const auto& [start, stop] : ranges_) {
      if (begin <= stop && end >= start) return true;
    }
    return false;
  }
  // The earliest start and latest end, for readers that skip by time.
  std::pair<std::uint64_t, std::uint64_t> span() const noexcept;
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges() const noexcept {
    return ranges_;
  }

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges_;
};

class PerfDataReader;

// perf's --cpu LIST for a recording, by CPU number; throws std::invalid_argument for a bad list
// or a recording whose samples carry no CPU (perf: "File does not contain CPU events").
PERFSCOPE_EXPORT std::vector<bool> cpu_selection(std::string_view list,
                                                 const PerfDataReader& reader);

// Parses perf's "SECONDS[.FRACTION]" into nanoseconds; throws std::invalid_argument.
PERFSCOPE_EXPORT std::uint64_t parse_perf_timestamp(std::string_view text);

// perf's --pid/--tid values: a comma-separated list of whole numbers; throws
// std::invalid_argument naming the option and the bad item.
PERFSCOPE_EXPORT std::vector<std::uint32_t> parse_task_id_list(std::string_view option,
                                                               std::string_view text);

// Splits a comma-separated list (--comms, --dsos, --symbols), leaving out empty items.
PERFSCOPE_EXPORT std::vector<std::string> split_comma_list(std::string_view text);

}  // namespace perfscope
