// Figures perf stat prints beside a count ("0.98 CPUs utilized", "1.23 insn per cycle"),
// computed only from counts of the same session run.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "perfscope/engine/counting_session.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

struct DerivedMetric {
  double value = 0;
  std::string unit;  // "CPUs utilized", "insn per cycle", "% of all branches", "GHz", "/sec"
};

// The metric to show beside counts[index], if any. `elapsed_ns` is the wall time of the run.
PERFSCOPE_EXPORT std::optional<DerivedMetric> derived_metric(std::span<const EventCount> counts,
                                                             std::size_t index, double elapsed_ns);

// True when the event's natural unit is time in nanoseconds (task-clock, cpu-clock), which is
// shown in milliseconds.
PERFSCOPE_EXPORT bool is_time_event(const EventCount& count);

}  // namespace perfscope
