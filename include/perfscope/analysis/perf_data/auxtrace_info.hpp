// The AUXTRACE_INFO record (PERF_RECORD_AUXTRACE_INFO) of a recording that traced into AUX
// areas: which decoder perf picks for the trace data (its auxtrace type) and the PMU's own
// metadata that decoder reads (perf's `priv` words, in the layout of perf's intel-pt.h,
// intel-bts.h, arm-spe.h and hisi-ptt.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/core/user_page.hpp"

namespace perfscope {

// perf's enum auxtrace_type.
enum class AuxtraceType : std::uint32_t {
  unknown = 0,
  intel_pt = 1,
  intel_bts = 2,
  cs_etm = 3,
  arm_spe = 4,
  s390_cpumsf = 5,
  hisi_ptt = 6,
};

// How the trace was recorded, beside the PMU.
struct AuxtraceSetup {
  std::optional<PageClock> clock;  // of the first AUX buffer's user page (TSC to perf time)
  bool per_cpu_mmaps = true;       // one buffer per CPU, else per thread
  bool context_switches = false;   // SWITCH records are in the recording
  // The PMU's sysfs directory, for what its Pmu does not hold (intel_pt's max_nonturbo_ratio).
  std::string pmu_dir;
};

// The auxtrace type of a PMU by name (intel_pt, arm_spe_0, ...); unknown for others.
AuxtraceType auxtrace_type_of(const std::string& pmu_name) noexcept;

// Throws Error(EOPNOTSUPP) for a PMU whose trace metadata perfscope does not write (cs_etm:
// per-CPU ETM register dumps; PMUs that do not trace), saying to record with perf instead.
void require_auxtrace_metadata(const std::string& pmu_name);

// The whole record (require_auxtrace_metadata's refusal for the PMUs it does not know).
std::vector<std::byte> encode_auxtrace_info(const Pmu& pmu, const AuxtraceSetup& setup);

}  // namespace perfscope
