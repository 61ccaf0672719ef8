// The generic event names perf knows (hardware, software, hw-cache) and their attrs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/event_attr.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

struct GenericEventName {
  std::string_view name;   // canonical, as perf prints it
  std::string_view alias;  // second accepted spelling, may be empty
  abi::EventType type;
  std::uint64_t config;
};

PERFSCOPE_EXPORT std::span<const GenericEventName> hardware_event_names() noexcept;
PERFSCOPE_EXPORT std::span<const GenericEventName> software_event_names() noexcept;

// Every hw-cache name in perf's canonical spelling (L1-dcache-loads, LLC-store-misses, ...).
PERFSCOPE_EXPORT std::vector<std::string> hw_cache_event_names();

// Looks up a generic hardware, software or hw-cache name (case-sensitive like perf, with perf's
// alternate cache spellings such as l1d, L1-data, loads/load/read, misses/miss).
PERFSCOPE_EXPORT std::optional<EventAttr> lookup_generic_event(std::string_view name);

// The canonical name of a generic, raw or breakpoint attr ("cycles", "L1-dcache-load-misses",
// "r1a2b", "mem:0x1000/8:w"); empty when none applies (tracepoints and dynamic PMUs).
PERFSCOPE_EXPORT std::string generic_event_name(const abi::PerfEventAttr& attr);

// Levenshtein distance, for "did you mean" suggestions.
PERFSCOPE_EXPORT std::size_t edit_distance(std::string_view a, std::string_view b);

// An event's name without its modifiers: "cycles" of "cycles:u".
inline std::string_view event_name_without_modifiers(std::string_view name) noexcept {
  return name.substr(0, name.find(':'));
}

}  // namespace perfscope
