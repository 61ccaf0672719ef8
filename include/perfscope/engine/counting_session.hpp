// CountingSession: opens event groups on every unit of a target (thread, CPU), enables them
// together, reads each group in one read(2), and aggregates and scales the counts.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/reading.hpp"
#include "perfscope/engine/event_opener.hpp"
#include "perfscope/engine/target.hpp"
#include "perfscope/engine/target_units.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

namespace sys {
class GatedChild;
}

struct CountingOptions {
  // Count threads and children created after the counters open (perf stat's default).
  bool inherit = true;
  // Report events this machine cannot count (no PMU, unmapped generic event) as not supported
  // instead of failing the session.
  bool skip_unsupported = true;
  // At perf_event_paranoid 2 without CAP_PERFMON, count user space only instead of failing.
  bool user_space_when_restricted = true;
  // Read each member's PERF_FORMAT_ID to match it in a group read. Without it members are
  // matched by the order they joined (two words fewer per member to copy: Counters' live reads).
  bool identify_members = true;
  // false: start() runs the command (or attaches) with the counters disabled, and enable() starts
  // them (perf stat -D: a delay before counting).
  bool enable_at_start = true;
};

struct EventCount {
  std::string name;       // display name
  std::size_t group = 0;  // index of its group in the session
  double scale = 1.0;     // from the event's sysfs alias: value times scale is in `unit`
  std::string unit;
  bool supported = true;  // false: it could not be opened here
  int open_errno = 0;     // why not, when !supported
  std::string unsupported_reason;
  Reading reading;     // summed over every thread/CPU it was opened on
  ScaledCount scaled;  // reading scaled for multiplexing
};

class PERFSCOPE_EXPORT CountingSession {
 public:
  CountingSession(std::vector<EventGroupSpec> groups, Target target, CountingOptions options = {});
  ~CountingSession();
  CountingSession(const CountingSession&) = delete;
  CountingSession& operator=(const CountingSession&) = delete;

  // Opens every event on every unit (and, for a command, forks it held before exec). Throws
  // perfscope::Error with a diagnosis when an event that must count cannot be opened.
  void open();
  // Starts counting: releases the command (its exec enables the counters) and enables the rest.
  // Throws perfscope::Error when the command cannot be executed.
  void start();
  // Stops counting (the counters keep their values).
  void stop() noexcept;
  // Starts counting where start() left the counters disabled (enable_at_start false).
  void enable() noexcept;
  // Cumulative counts since start, one per event in the order given. Never throws.
  const std::vector<EventCount>& read() noexcept;
  // The events as the last read() left them (names, support; counts zero before any read).
  const std::vector<EventCount>& events() const noexcept { return counts_; }

  // The launched command, when the target has one.
  pid_t command_pid() const noexcept;
  // Waits for the command to exit, then stops counting. Returns the wait status.
  int wait_for_command();
  double command_user_seconds() const noexcept;
  double command_system_seconds() const noexcept;

  const Target& target() const noexcept { return target_; }
  std::size_t open_fd_count() const noexcept;
  // Number of units (threads or CPUs) the events were opened on.
  std::size_t unit_count() const noexcept { return units_.units().size(); }
  // What open() changed that the user should know: a raised open-files limit, user space only
  // at perf_event_paranoid 2 (see user_space_only_fallback).
  const std::vector<std::string>& notices() const noexcept { return opener_.notices(); }
  // True when the paranoid fallback made every event count user space only.
  bool user_space_only() const noexcept { return opener_.user_space_only(); }
  // The read_format every event is opened with.
  std::uint64_t read_format() const noexcept;

  // One open group on one unit, for callers that drive the fds themselves (Counters' regions).
  struct OpenGroup {
    std::vector<Event> events;             // [0] is the leader
    std::vector<std::size_t> count_index;  // index into counts_ for each event
    std::vector<std::uint64_t> ids;        // PERF_FORMAT_ID of each event (identify_members)
    std::size_t unit = 0;                  // index into units()
  };
  const std::vector<OpenGroup>& open_groups() const noexcept { return open_groups_; }
  std::vector<OpenGroup>& open_groups() noexcept { return open_groups_; }
  const std::vector<TargetUnit>& units() const noexcept { return units_.units(); }
  // The counts of each event on one unit alone (not summed), one per event; for per-CPU and
  // per-thread views (perf stat -A, --per-thread). Never throws.
  void read_unit(std::size_t unit, std::vector<Reading>& out) noexcept;

 private:
  void open_group(const EventGroupSpec& group, std::size_t first_count, std::size_t unit);
  EventAttr prepare_attr(const EventAttr& attr, bool leader) const;
  // Decodes one group read into `out` (summing); false when the read failed.
  bool add_group_read(OpenGroup& group, Reading* out) noexcept;

  std::vector<EventGroupSpec> groups_;
  Target target_;
  CountingOptions options_;
  TargetUnits units_;
  std::vector<OpenGroup> open_groups_;
  std::vector<EventCount> counts_;
  std::vector<std::uint64_t> read_buffer_;
  std::unique_ptr<sys::GatedChild> child_;
  EventOpener opener_;
  std::vector<Reading> sums_;  // scratch of read()
  bool opened_ = false;
};

}  // namespace perfscope
