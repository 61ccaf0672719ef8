#include "perfscope/analysis/perf_data/event_switch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope {

namespace {

std::optional<std::size_t> event_named(const PerfDataReader& reader, const std::string& name,
                                       const char* which) {
  if (name.empty()) return std::nullopt;
  const auto& events = reader.events();
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].name == name) return i;
  }
  std::string known;
  for (const auto& event : events) known += (known.empty() ? "" : ", ") + event.name;
  throw std::invalid_argument(fmt::format(
      "--switch-{} {}: the recording has no such event (its events: {}; perfscope evlist lists "
      "them)",
      which, name, known));
}

}  // namespace

EventSwitchWindows EventSwitchWindows::compute(const PerfDataReader& reader, const std::string& on,
                                               const std::string& off, bool show_switches) {
  EventSwitchWindows result;
  std::optional<std::size_t> on_event = event_named(reader, on, "on");
  std::optional<std::size_t> off_event = event_named(reader, off, "off");
  if (!on_event && !off_event) return result;
  result.active_ = true;
  bool discarding = on_event.has_value();
  std::uint64_t start = 0;
  const auto sample = static_cast<std::uint32_t>(abi::RecordType::sample);
  auto error = reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    if (record.view.header.type != sample) return;
    if (discarding) {
      if (record.event != on_event) return;
      discarding = false;
      start = record.time;
      if (show_switches) result.shown_.emplace_back(record.event, record.time);
    } else if (record.event == off_event) {
      discarding = true;
      result.windows_.emplace_back(start, record.time);
      if (show_switches) result.shown_.emplace_back(record.event, record.time);
    }
  });
  (void)error;  // a file cut short: the windows of what was read (the walk that follows says so)
  if (!discarding) result.windows_.emplace_back(start, ~std::uint64_t{0});
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
