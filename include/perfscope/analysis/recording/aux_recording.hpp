// Recording an event that traces into an AUX area (intel_pt//, intel_bts//, arm_spe_0//,
// hisi_ptt*//), as perf record does: the event owns the buffers (first of all events), traces
// without frequency, call chains or user stacks, and every event is timed by the kernel's perf
// clock, the one the trace's timestamps convert to. The file gets an AUXTRACE_INFO record that
// tells perf's decoder what it needs, and the trace goes in AUXTRACE records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/engine/sampling_session.hpp"

namespace perfscope {

struct AuxRecordingPlan {
  std::string pmu;             // the AUX-tracing event's PMU
  std::size_t aux_pages = 0;   // of each buffer's AUX area
  std::size_t data_pages = 0;  // of each ring buffer; 0: the session's default
};

// What the user asked for: -m DATA,AUX (0: not given) and -c (0: not given).
struct AuxRecordingRequest {
  std::size_t data_pages = 0;
  std::size_t aux_pages = 0;
  std::uint64_t period = 0;
  bool privileged = false;  // root or perf_event_paranoid -1: perf's larger default AUX area
};

// nullopt when no event of `groups` traces into an AUX area. Otherwise moves that event's group
// first and sets the events up as the header says. Throws std::invalid_argument for what cannot
// be recorded: two AUX-tracing events, one that is not the first of its group, or a PMU whose
// metadata perfscope does not write (cs_etm). (SamplingSession refuses AUX pages that are not a
// power of two.)
std::optional<AuxRecordingPlan> plan_aux_recording(std::vector<EventGroupSpec>& groups,
                                                   const AuxRecordingRequest& request,
                                                   const PmuRegistry& registry);

// The AUXTRACE_INFO record of an opened session that maps an AUX area.
std::vector<std::byte> auxtrace_info_of(const SamplingSession& session, const std::string& pmu,
                                        bool context_switches, const PmuRegistry& registry);

}  // namespace perfscope
