// The catalog of events this machine offers, as `perfscope list` shows it: generic hardware,
// software and cache events, the PMUs' named events from sysfs, tracepoints, breakpoints and
// probes, each with whether it opens here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/export.hpp"

namespace perfscope {

class PmuRegistry;

enum class EventCategory { hardware, software, cache, pmu, tracepoint, breakpoint, probe };
PERFSCOPE_EXPORT std::string_view category_name(
    EventCategory category) noexcept;  // "hardware", ...

enum class OpenCheck {
  opens,       // opened (and closed) here
  fails,       // the open failed: see open_error
  not_probed,  // not opened: see open_error for why and what is known
};
PERFSCOPE_EXPORT std::string_view open_check_name(
    OpenCheck check) noexcept;  // "yes", "no", "not probed"

struct CatalogEvent {
  EventCategory category = EventCategory::hardware;
  std::string name;      // as an event list takes it
  std::string alias;     // a second accepted spelling, may be empty
  std::string encoding;  // what it stands for: "event=0x76" of an alias, "PERF_TYPE_HARDWARE/0"
  std::string description;
  std::string unit;             // from the alias's .unit
  std::optional<double> scale;  // from the alias's .scale
  bool per_pkg = false;
  bool snapshot = false;
  OpenCheck open = OpenCheck::not_probed;
  std::string open_error;  // errno and reason when it fails; why it was not probed otherwise
};

struct CatalogOptions {
  // Only events whose name or alias matches: a shell glob ("sched:*"), or a substring when the
  // pattern has no wildcard. Empty: every event.
  std::string pattern;
  // Open each listed event once (disabled, on this thread or the PMU's CPU) to see if it counts.
  bool probe = true;
  // Tracepoints and uprobes are opened only when at most this many of them are listed, or when
  // probe_slow_events is set: closing one waits for an RCU grace period (30-70 ms here), so
  // probing thousands of tracepoints would take minutes.
  std::size_t slow_probe_limit = 4;
  bool probe_slow_events = false;
  const PmuRegistry* pmus = nullptr;  // nullptr: PmuRegistry::system()
  std::string tracefs_root;           // empty: sys::tracefs_root()
};

// Every event, grouped by category in the order of EventCategory, sorted by name within one.
PERFSCOPE_EXPORT std::vector<CatalogEvent> list_events(const CatalogOptions& options = {});

// Whether `name` (or `alias`) is selected by a list pattern as CatalogOptions describes it.
PERFSCOPE_EXPORT bool catalog_pattern_matches(std::string_view pattern, std::string_view name,
                                              std::string_view alias = {});

}  // namespace perfscope
