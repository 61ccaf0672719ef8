// perf's --switch-on/--switch-off (report, script): the samples considered are those between a
// sample of the switch-on event and the next sample of the switch-off event — from the start
// where no switch-on event is named, to the end where no switch-off event is. The switching
// samples themselves are left out unless --show-on-off-events. (perf 6.1 stops only at the first
// switch-off sample when no switch-on event is named, and then goes on: perfscope keeps to perf's
// documented meaning, nothing after it.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "perfscope/export.hpp"

namespace perfscope {

class PerfDataReader;

// The switch as samples come, in time order (perf top's, and what the windows are made of).
class EventSwitch {
 public:
  EventSwitch() = default;
  // Event indexes; nullopt where no such switch is given.
  EventSwitch(std::optional<std::size_t> on, std::optional<std::size_t> off, bool show_switches)
      : on_(on), off_(off), show_(show_switches), discarding_(on.has_value()) {}
  bool active() const noexcept { return on_ || off_; }
  bool discarding() const noexcept { return discarding_; }
  // Whether the next sample, of event `event`, is considered; a switching sample turns the
  // switch.
  bool keeps(std::size_t event) noexcept {
    if (discarding_) {
      if (event != on_) return false;
      discarding_ = false;
      return show_;
    }
    if (event == off_) {
      discarding_ = true;
      return show_;
    }
    return true;
  }

 private:
  std::optional<std::size_t> on_, off_;
  bool show_ = false;
  bool discarding_ = false;
};

// The index of the recording's (or session's) event named `name`; nullopt for an empty name.
// Throws std::invalid_argument, naming the events there are, when none is called so.
PERFSCOPE_EXPORT std::optional<std::size_t> switch_event_index(
    const std::vector<std::string>& event_names, const std::string& name, const char* which);

class EventSwitchWindows {
 public:
  EventSwitchWindows() = default;
  // Walks the recording's samples in time order once. Throws std::invalid_argument for an event
  // the recording does not have (perf: "switch-on event not found").
  PERFSCOPE_EXPORT static EventSwitchWindows compute(const PerfDataReader& reader,
                                                     const std::string& on, const std::string& off,
                                                     bool show_switches);

  bool active() const noexcept { return active_; }
  // Whether the sample of event `event` (an index into the recording's events) at `time` is
  // considered.
  PERFSCOPE_EXPORT bool keeps(std::size_t event, std::uint64_t time) const noexcept;

 private:
  bool active_ = false;
  // Where samples are considered: (start, end), both excluded (the switching samples' times);
  // a start of 0 is the recording's start, an end of ~0 its end.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> windows_;
  std::vector<std::pair<std::size_t, std::uint64_t>> shown_;  // switching samples kept, sorted
};

}  // namespace perfscope
