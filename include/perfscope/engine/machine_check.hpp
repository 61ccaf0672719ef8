// What this machine lets perf_event measure, found by probing it (opening real events, reading
// sysctls and sysfs), each finding with what it means and how to change it. `perfscope doctor`
// prints it; a library user can call it before deciding which events to ask for.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/export.hpp"

namespace perfscope {

enum class CheckStatus {
  ok,    // works as a profiler wants
  warn,  // works with a limitation worth fixing
  fail,  // does not work here
  info,  // a fact, neither good nor bad
};
PERFSCOPE_EXPORT std::string_view check_status_name(
    CheckStatus status) noexcept;  // "ok", "warn", "fail", "info"

struct MachineCheck {
  std::string id;     // stable key: "perf_event_paranoid", "hardware_events", ...
  std::string title;  // short human name
  CheckStatus status = CheckStatus::info;
  std::string value;        // what was observed
  std::string explanation;  // what it means for measuring
  std::string fix;          // command or advice; empty when there is nothing to change
};

struct PmuDevice {
  std::string name;        // directory under /sys/bus/event_source/devices
  std::int64_t type = -1;  // attr.type to use, -1 when unreadable
  bool core = false;       // a CPU's own PMU (cpu, cpu_core, cpu_atom, armv8_pmuv3_0, ...)
  bool aux = false;        // writes hardware traces to an AUX area (is_aux_tracing_pmu)
};

// Where each probe of the user page (the first page of an event's mmap) ended up.
struct UserPageCapabilities {
  bool mapped = false;
  bool from_hardware_event = false;  // else from a software event
  bool user_rdpmc = false;
  bool user_time = false;
  bool user_time_zero = false;
  bool user_time_short = false;
  std::uint32_t index = 0;  // hardware counter index + 1 while the event runs; 0: not readable
  std::uint16_t pmc_width = 0;
};

struct PERFSCOPE_EXPORT MachineReport {
  std::vector<MachineCheck> checks;
  std::vector<PmuDevice> pmus;
  UserPageCapabilities user_page;

  // The one-line answers: can hardware events be counted, how can one sample, can counters and
  // time be read without a syscall.
  bool hardware_counters = false;
  std::string sampling;          // "hardware (cycles)", "software only (cpu-clock)", "no"
  std::string user_space_reads;  // "counters and time", "time only", "no"

  // The check with this id, or nullptr.
  const MachineCheck* find(std::string_view id) const noexcept;
};

// Probes this machine for the calling process: opens (and closes) a few events on itself, maps
// their first page, reads procfs/sysfs. Takes a few tens of milliseconds; never throws for what
// the machine lacks (that is what the report says).
PERFSCOPE_EXPORT MachineReport check_machine();

}  // namespace perfscope
