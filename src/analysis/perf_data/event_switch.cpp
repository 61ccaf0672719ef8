#include "perfscope/analysis/perf_data/event_switch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope {

std::optional<std::size_t> switch_event_index(const std::vector<std::string>& event_names,
                                              const std::string& name, const char* which) {
  if (name.empty()) return std::nullopt;
  for (std::size_t i = 0; i < event_names.size(); ++i) {
    if (event_names[i] == name) return i;
  }
  std::string known;
  for (const auto& event : event_names) known += (known.empty() ? "" : ", ") + event;
  throw std::invalid_argument(fmt::format(
      "--switch-{} {}: there is no such event (the events: {}; perfscope evlist lists a "
      "recording's)",
      which, name, known));
}

EventSwitchWindows EventSwitchWindows::compute(const PerfDataReader& reader, const std::string& on,
                                               const std::string& off, bool show_switches) {
  EventSwitchWindows result;
  std::vector<std::string> names;
  for (const auto& event : reader.events()) names.push_back(event.name);
  EventSwitch state(switch_event_index(names, on, "on"), switch_event_index(names, off, "off"),
                    show_switches);
  if (!state.active()) return result;
  result.active_ = true;
  std::uint64_t start = 0;
  const auto sample = static_cast<std::uint32_t>(abi::RecordType::sample);
  auto error = reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    if (record.view.header.type != sample) return;
    const bool was_discarding = state.discarding();
    const bool kept = state.keeps(record.event);
    if (was_discarding == state.discarding()) return;
    if (was_discarding) {
      start = record.time;
    } else {
      result.windows_.emplace_back(start, record.time);
    }
    if (kept) result.shown_.emplace_back(record.event, record.time);
  });
  (void)error;  // a file cut short: the windows of what was read (the walk that follows says so)
  if (!state.discarding()) result.windows_.emplace_back(start, ~std::uint64_t{0});
  std::sort(result.shown_.begin(), result.shown_.end());
  return result;
}

bool EventSwitchWindows::keeps(std::size_t event, std::uint64_t time) const noexcept {
  if (!active_) return true;
  if (std::binary_search(shown_.begin(), shown_.end(), std::pair{event, time})) return true;
  // The last window that starts before `time` (a start of 0 is the recording's own).
  auto after = std::upper_bound(
      windows_.begin(), windows_.end(), time,
      [](std::uint64_t value, const auto& window) { return value < window.first; });
  if (after == windows_.begin()) return false;
  const auto& [begin, end] = *std::prev(after);
  bool past_start = begin == 0 || time > begin;
  bool before_end = end == ~std::uint64_t{0} || time < end;
  return past_start && before_end;
}

}  // namespace perfscope
