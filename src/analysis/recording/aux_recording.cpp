#include "perfscope/analysis/recording/aux_recording.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/auxtrace_info.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/memory_map.hpp"

namespace perfscope {

namespace {

namespace flag = abi::attr_flag;
namespace sf = abi::sample_format;

// perf's defaults for a full trace: 4 MiB of AUX area where locked memory is not limited,
// otherwise 128 KiB with a 256 KiB data area, which fit the unprivileged allowance
// (kernel.perf_event_mlock_kb, 516 KiB) together.
constexpr std::size_t privileged_aux_bytes = 4 << 20;
constexpr std::size_t unprivileged_aux_bytes = 128 << 10;
constexpr std::size_t unprivileged_data_bytes = 256 << 10;

// The period of an SPE event: one operation sampled in this many, the PMU's smallest unless -c
// says otherwise (perf reads caps/min_interval, and takes 4096 without one).
std::uint64_t spe_period(const Pmu& pmu) {
  auto found = pmu.caps.find("min_interval");
  if (found != pmu.caps.end()) {
    std::uint64_t value = std::strtoull(found->second.c_str(), nullptr, 0);
    if (value > 0) return value;
  }
  return 4096;
}

}  // namespace

std::optional<AuxRecordingPlan> plan_aux_recording(std::vector<EventGroupSpec>& groups,
                                                   const AuxRecordingRequest& request,
                                                   const PmuRegistry& registry) {
  std::size_t group_index = groups.size();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t e = 0; e < groups[g].events.size(); ++e) {
      const EventSpec& spec = groups[g].events[e];
      if (!is_aux_tracing_pmu(spec.pmu)) continue;
      if (group_index != groups.size()) {
        throw std::invalid_argument(fmt::format(
            "'{}' is a second event that traces into an AUX area: record one (perf records "
            "one too)",
            spec.name));
      }
      if (e != 0) {
        throw std::invalid_argument(
            fmt::format("'{}' traces into an AUX area and must lead its group: write it first "
                        "inside the braces",
                        spec.name));
      }
      group_index = g;
    }
  }
  if (group_index == groups.size()) return std::nullopt;
  std::rotate(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(group_index),
              groups.begin() + static_cast<std::ptrdiff_t>(group_index) + 1);
  EventSpec& aux = groups.front().events.front();
  const Pmu* pmu = registry.find(aux.pmu);
  if (!pmu) {
    throw std::invalid_argument(fmt::format("'{}': PMU {} is gone", aux.name, aux.pmu));
  }
  // Refuses a PMU whose trace perf could not decode from our file, before anything is opened.
  try {
    require_auxtrace_metadata(pmu->name);
  } catch (const Error& error) {
    throw std::invalid_argument(fmt::format("{}: {}", error.summary(), error.diagnosis()));
  }
  EventAttr& attr = aux.attr;
  std::uint64_t period = request.period;
  if (period == 0)
    period = auxtrace_type_of(pmu->name) == AuxtraceType::arm_spe ? spe_period(*pmu) : 1;
  attr.set_sample_period(period);
  // The trace is the data: no call chains or stacks on the AUX event.
  attr.set_sample_type(attr.raw().sample_type &
                       ~(sf::callchain | sf::regs_user | sf::stack_user | sf::branch_stack));
  attr.set_flag(flag::exclude_callchain_user, false);
  for (auto& group : groups) {
    for (auto& spec : group.events) spec.attr.set_flag(flag::use_clockid, false);
  }
  AuxRecordingPlan plan;
  plan.pmu = pmu->name;
  plan.data_pages = request.data_pages;
  plan.aux_pages = request.aux_pages;
  if (plan.aux_pages == 0) {
    plan.aux_pages =
        (request.privileged ? privileged_aux_bytes : unprivileged_aux_bytes) / sys::page_size();
    if (!request.privileged && plan.data_pages == 0) {
      plan.data_pages = unprivileged_data_bytes / sys::page_size();
    }
  }
  return plan;
}

std::vector<std::byte> auxtrace_info_of(const SamplingSession& session, const std::string& pmu_name,
                                        bool context_switches, const PmuRegistry& registry) {
  const Pmu* pmu = registry.find(pmu_name);
  auto tracing = session.aux_tracing();
  if (!pmu || !tracing) {
    throw Error(EINVAL, fmt::format("no AUX area of {} was mapped", pmu_name));
  }
  AuxtraceSetup setup;
  setup.clock = page_clock(*tracing->user_page);
  setup.per_cpu_mmaps = tracing->per_cpu;
  setup.context_switches = context_switches;
  setup.pmu_dir = registry.root() + "/" + pmu_name;
  return encode_auxtrace_info(*pmu, setup);
}

}  // namespace perfscope
