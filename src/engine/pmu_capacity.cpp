#include "perfscope/engine/pmu_capacity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/busy_loop.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/core/reading.hpp"

namespace perfscope {

namespace {

using abi::HardwareEvent;

// More than any core PMU has (x86 allows 64 in its counter bitmaps): a kernel that accepts a
// group this large does not check groups at open, and the probe has no answer.
constexpr std::size_t max_probe_group = 64;

struct ProbeEvent {
  HardwareEvent event;
  const char* name;
};

// Events that only a generic counter can take. x86: Intel's fixed counters take instructions,
// cycles and ref-cycles, never branch instructions (AMD has no fixed counters). arm64: only
// CPU_CYCLES has a dedicated counter, so instructions (INST_RETIRED) is generic-only, and the
// branch event is not implemented by every core (QEMU's PMU lacks it).
#if defined(__x86_64__) || defined(__i386__)
constexpr ProbeEvent probe_events[] = {{HardwareEvent::branch_instructions, "branch-instructions"},
                                       {HardwareEvent::instructions, "instructions"}};
#else
constexpr ProbeEvent probe_events[] = {{HardwareEvent::instructions, "instructions"}};
#endif

struct DedicatedKind {
  HardwareEvent event;
  bool PmuCapacity::*has;
};
constexpr DedicatedKind dedicated_kinds[] = {
    {HardwareEvent::cpu_cycles, &PmuCapacity::cycles_counter},
    {HardwareEvent::instructions, &PmuCapacity::instructions_counter},
    {HardwareEvent::ref_cpu_cycles, &PmuCapacity::ref_cycles_counter},
};

EventAttr user_hardware_event(HardwareEvent event, bool leader) {
  EventAttr attr = EventAttr::hardware(event);
  attr.count_user_only();
  attr.set_flag(abi::attr_flag::disabled, leader);
  attr.set_read_format(abi::read_format::total_time_enabled | abi::read_format::total_time_running);
  return attr;
}

// Opens a group of `size` probe events on the calling thread; fewer when the kernel refuses
// one, with `refused_errno` set. For counting counters the leader must be enabled: arm's
// validate_group leaves disabled events out of the count (x86's leaves out disabled members),
// so a group with a disabled leader opens with one event more than the PMU can ever run.
std::vector<Event> open_probe_group(HardwareEvent event, std::size_t size, bool leader_disabled,
                                    int& refused_errno) {
  std::vector<Event> group;
  group.reserve(size);
  refused_errno = 0;
  while (group.size() < size) {
    bool leader = group.empty();
    int errnum = 0;
    Event member = Event::try_open(user_hardware_event(event, leader && leader_disabled), 0, -1,
                                   leader ? nullptr : &group[0], 0, errnum);
    if (!member.valid()) {
      refused_errno = errnum;
      break;
    }
    group.push_back(std::move(member));
  }
  return group;
}

// Enables a group of `size` probe events and spins until it gets on the PMU or `wait` passes.
bool group_runs(HardwareEvent event, std::size_t size, std::chrono::milliseconds wait) {
  int refused = 0;
  std::vector<Event> group = open_probe_group(event, size, true, refused);
  if (group.size() < size) return false;
  if (group[0].enable(true) != 0) return false;
  auto deadline = std::chrono::steady_clock::now() + wait;
  bool ran = false;
  do {
    detail::busy_loop(10'000);
    Reading reading;
    ran = group[0].read(reading) && reading.running > 0;
  } while (!ran && std::chrono::steady_clock::now() < deadline);
  group[0].disable(true);
  return ran;
}

HardwareEvent probe_event_of(const PmuCapacity& capacity) {
  for (const auto& probe : probe_events) {
    if (capacity.probe_event == probe.name) return probe.event;
  }
  return probe_events[0].event;
}

std::vector<std::uint32_t> core_pmu_types() {
  std::vector<std::uint32_t> types;
  for (const Pmu* pmu : PmuRegistry::system().core_pmus()) types.push_back(pmu->type);
  return types;
}

// Generic hardware events carry the PMU type of hybrid machines in the config's high half.
constexpr std::uint64_t hardware_event_mask = 0xffffffffULL;

bool needs_core_counter(const EventAttr& attr, const std::vector<std::uint32_t>& core_types) {
  switch (static_cast<abi::EventType>(attr.type())) {
    case abi::EventType::hardware:
    case abi::EventType::hw_cache:
    case abi::EventType::raw: return true;
    default: break;
  }
  return std::find(core_types.begin(), core_types.end(), attr.type()) != core_types.end();
}

GroupDemand demand_of(const EventGroupSpec& group, const PmuCapacity& capacity,
                      const std::vector<std::uint32_t>& core_types) {
  GroupDemand demand;
  std::size_t unknown_kind = 0;  // raw and PMU events: might fit a dedicated counter
  bool dedicated_used[std::size(dedicated_kinds)] = {};
  for (const EventSpec& spec : group.events) {
    demand.text += (demand.text.empty() ? "{" : ",") + spec.text;
    if (!needs_core_counter(spec.attr, core_types)) continue;
    ++demand.hardware_events;
    bool placed = false;
    if (spec.attr.type() == static_cast<std::uint32_t>(abi::EventType::hardware)) {
      auto event = static_cast<HardwareEvent>(spec.attr.config() & hardware_event_mask);
      for (std::size_t k = 0; k < std::size(dedicated_kinds); ++k) {
        if (dedicated_kinds[k].event == event && capacity.*dedicated_kinds[k].has &&
            !dedicated_used[k]) {
          dedicated_used[k] = placed = true;
          break;
        }
      }
    } else if (spec.attr.type() != static_cast<std::uint32_t>(abi::EventType::hw_cache)) {
      ++unknown_kind;
      placed = true;  // counted below against what dedicated counters are left
    }
    if (!placed) ++demand.generic_needed;
  }
  demand.text += "}";
  std::size_t dedicated_left = capacity.dedicated_counters() -
                               static_cast<std::size_t>(std::count(std::begin(dedicated_used),
                                                                   std::end(dedicated_used), true));
  demand.generic_needed += unknown_kind - std::min(unknown_kind, dedicated_left);
  return demand;
}

}  // namespace

std::string PmuCapacity::describe() const {
  if (!known) return "an unknown number of counters";
  std::string text =
      fmt::format("{} generic counter{}", generic_counters, generic_counters == 1 ? "" : "s");
  std::vector<const char*> dedicated;
  if (cycles_counter) dedicated.push_back("cycles");
  if (instructions_counter) dedicated.push_back("instructions");
  if (ref_cycles_counter) dedicated.push_back("ref-cycles");
  if (dedicated.size() == 1 && cycles_counter) return text + " and a cycle counter";
  if (!dedicated.empty()) {
    text += " and fixed counters for ";
    for (std::size_t i = 0; i < dedicated.size(); ++i) {
      text += (i == 0 ? "" : i + 1 == dedicated.size() ? " and " : ", ");
      text += dedicated[i];
    }
  }
  return text;
}

PmuCapacity probe_pmu_capacity() {
  PmuCapacity capacity;
  HardwareEvent event = probe_events[0].event;
  std::vector<Event> group;
  int refused = 0;
  for (const auto& probe : probe_events) {
    group = open_probe_group(probe.event, max_probe_group, false, refused);
    if (!group.empty()) {
      event = probe.event;
      capacity.probe_event = probe.name;
      break;
    }
  }
  if (group.empty()) {
    OpenContext context;
    context.event_name = fmt::format("{}:u", probe_events[0].name);
    capacity.reason =
        diagnose_open_failure(refused, user_hardware_event(probe_events[0].event, true), context);
    return capacity;
  }
  if (group.size() == max_probe_group) {
    capacity.reason = fmt::format(
        "the kernel accepted a group of {} {} events: this PMU does not check groups when they "
        "are opened, so its counters cannot be counted this way",
        max_probe_group, capacity.probe_event);
    return capacity;
  }
  if (refused != EINVAL) {
    capacity.reason = fmt::format(
        "member {} of a group of {} events failed with {} rather than EINVAL, which is not the "
        "PMU running out of counters: {}",
        group.size() + 1, capacity.probe_event, errno_name(refused), std::strerror(refused));
    return capacity;
  }
  capacity.known = true;
  capacity.generic_counters = group.size();
  for (const auto& kind : dedicated_kinds) {
    if (kind.event == event) continue;  // the probe event is generic-only by choice
    int errnum = 0;
    Event extra =
        Event::try_open(user_hardware_event(kind.event, false), 0, -1, &group[0], 0, errnum);
    capacity.*kind.has = extra.valid();
  }
  return capacity;
}

const PmuCapacity& pmu_capacity() {
  static const PmuCapacity capacity = probe_pmu_capacity();
  return capacity;
}

std::size_t free_generic_counters(const PmuCapacity& capacity, std::chrono::milliseconds wait) {
  if (!capacity.known) return 0;
  HardwareEvent event = probe_event_of(capacity);
  // Running is monotonic in the group size: binary search for the largest group that runs.
  std::size_t low = 0, high = capacity.generic_counters;
  while (low < high) {
    std::size_t size = (low + high + 1) / 2;
    if (group_runs(event, size, wait)) {
      low = size;
    } else {
      high = size - 1;
    }
  }
  return low;
}

GroupDemand group_demand(const EventGroupSpec& group, const PmuCapacity& capacity) {
  return demand_of(group, capacity, core_pmu_types());
}

std::vector<std::string> group_capacity_warnings(const std::vector<EventGroupSpec>& groups,
                                                 const PmuCapacity& capacity,
                                                 std::size_t free_generic) {
  std::vector<std::string> warnings;
  if (!capacity.known) return warnings;
  std::vector<std::uint32_t> core_types = core_pmu_types();
  for (const EventGroupSpec& group : groups) {
    if (!group.braced) continue;
    GroupDemand demand = demand_of(group, capacity, core_types);
    if (demand.generic_needed > capacity.generic_counters) {
      warnings.push_back(fmt::format(
          "group {} has {} hardware events but the PMU has {}: it can never be scheduled; split "
          "it",
          demand.text, demand.hardware_events, capacity.describe()));
    } else if (demand.generic_needed > free_generic) {
      warnings.push_back(fmt::format(
          "group {} needs {} generic counters but only {} of the PMU's {} are free now (the "
          "others are held by pinned or system-wide events, such as the NMI watchdog or another "
          "profiler): it will not be counted while they are; split it or free them",
          demand.text, demand.generic_needed, free_generic, capacity.generic_counters));
    }
  }
  return warnings;
}

std::vector<std::string> group_capacity_warnings(const std::vector<EventGroupSpec>& groups) {
  // Most event lists have no braced group: decide that before reading any PMU from sysfs, which
  // would cost `stat` a measurable part of its start-up.
  bool has_multi_event_group = std::any_of(groups.begin(), groups.end(), [](const auto& group) {
    return group.braced && group.events.size() >= 2;
  });
  if (!has_multi_event_group) return {};
  if (PmuRegistry::system().hybrid()) return {};
  std::vector<std::uint32_t> core_types = core_pmu_types();
  bool worth_probing = std::any_of(groups.begin(), groups.end(), [&](const EventGroupSpec& group) {
    if (!group.braced) return false;
    return std::count_if(group.events.begin(), group.events.end(), [&](const EventSpec& spec) {
             return needs_core_counter(spec.attr, core_types);
           }) >= 2;
  });
  if (!worth_probing) return {};
  const PmuCapacity& capacity = pmu_capacity();
  if (!capacity.known) return {};
  std::size_t most_needed = 0;
  for (const EventGroupSpec& group : groups) {
    if (group.braced) {
      most_needed = std::max(most_needed, demand_of(group, capacity, core_types).generic_needed);
    }
  }
  // Free counters matter only to a group that fits the PMU: measure them only then.
  std::size_t free_generic = capacity.generic_counters;
  if (most_needed > 0 && most_needed <= capacity.generic_counters) {
    free_generic = free_generic_counters(capacity);
  }
  return group_capacity_warnings(groups, capacity, free_generic);
}

}  // namespace perfscope
