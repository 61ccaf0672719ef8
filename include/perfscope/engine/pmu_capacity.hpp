// PmuCapacity: how many hardware counters the core PMU has, and whether an event group can ever
// get them. No kernel file says it (x86 and arm64 sysfs have no counter count), so it is asked
// of the kernel: the core PMU drivers check at perf_event_open that a whole group fits their
// counters (validate_group on x86 and arm) and refuse the member that does not with EINVAL. The
// largest group of events that only generic counters can take is the number of generic
// counters; one more cycles, instructions or ref-cycles member that still opens has a counter of
// its own (arm64's cycle counter, Intel's fixed counters). The drivers leave disabled events out
// of that check (arm: every disabled event; x86: disabled members), so the probe opens its events
// enabled — and a group opened the usual way, with a disabled leader, can open on arm64 with one
// event more than the PMU can ever run. Hence the warnings below count events and do not trust
// the open.
//
// That is what the PMU has. What a group can get now is less when other events hold counters
// (the NMI watchdog, pinned events, another profiler's system-wide events): a group that opens
// may then never run. free_generic_counters() measures it by enabling groups and seeing which
// ever get on the PMU.
//
// Hybrid machines (several core PMUs) are not probed: their counter sets differ per core type.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "perfscope/core/event_spec.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

struct PERFSCOPE_EXPORT PmuCapacity {
  bool known = false;  // false: no group of hardware events could be opened (`reason` says why)
  std::string reason;  // why the capacity is not known
  std::string probe_event;  // the generic-counter-only event the probe used
  std::size_t generic_counters = 0;
  // Generic events with a counter of their own besides the generic ones.
  bool cycles_counter = false;        // arm64 PMCCNTR_EL0, Intel fixed counter 1
  bool instructions_counter = false;  // Intel fixed counter 0
  bool ref_cycles_counter = false;    // Intel fixed counter 2

  std::size_t dedicated_counters() const noexcept {
    return static_cast<std::size_t>(cycles_counter) + instructions_counter + ref_cycles_counter;
  }
  // "6 generic counters and a cycle counter", "4 generic counters".
  std::string describe() const;
};

// Probes the core PMU as described above (a few dozen perf_event_open calls on the calling
// thread, user-space only, so any perf_event_paranoid up to 2 allows it). Never throws.
PERFSCOPE_EXPORT PmuCapacity probe_pmu_capacity();
// probe_pmu_capacity() of this process, probed once on first use.
PERFSCOPE_EXPORT const PmuCapacity& pmu_capacity();

// The largest number of generic counters a group on the calling thread gets now: groups of the
// probe event are enabled and watched for up to `wait` each (rotation gives a multiplexed group
// its turn within a few milliseconds); the largest that runs at all. 0 when none does or the
// capacity is not known.
PERFSCOPE_EXPORT std::size_t free_generic_counters(
    const PmuCapacity& capacity, std::chrono::milliseconds wait = std::chrono::milliseconds(20));

// What one group asks of the PMU.
struct GroupDemand {
  std::size_t hardware_events = 0;  // events needing a core PMU counter
  std::size_t generic_needed = 0;   // of them, those no dedicated counter can take
  std::string text;                 // "{cycles:u,instructions:u,...}" for messages
};

// Counts a group's core-PMU events. Dedicated counters are credited generously: a raw or PMU
// event (whose kind is not known here) is assumed to fit a dedicated counter left free, so a
// group reported as too large is too large for certain.
PERFSCOPE_EXPORT GroupDemand group_demand(const EventGroupSpec& group, const PmuCapacity& capacity);

// One sentence per braced group that can never be scheduled (needs more generic counters than
// the PMU has), or, given `free_generic` from free_generic_counters(), that cannot be now.
PERFSCOPE_EXPORT std::vector<std::string> group_capacity_warnings(
    const std::vector<EventGroupSpec>& groups, const PmuCapacity& capacity,
    std::size_t free_generic);
// The same for the running machine: probes only when a braced group has two or more hardware
// events (so plain event lists cost nothing), and measures free counters only then. Empty on a
// hybrid machine or when the capacity is not known.
PERFSCOPE_EXPORT std::vector<std::string> group_capacity_warnings(
    const std::vector<EventGroupSpec>& groups);

}  // namespace perfscope
