#include "perfscope/analysis/perf_data/auxtrace_info.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "perfscope/abi/record_type.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

// The bits a format term occupies (perf's perf_pmu__format_bits); 0 when the PMU lacks it.
std::uint64_t term_bits(const Pmu& pmu, std::string_view term) {
  const PmuFormatField* field = pmu.find_term(term);
  return field ? field->mask() : 0;
}

struct TimeWords {
  std::uint64_t shift = 0, mult = 0, zero = 0, has_zero = 0;
};

TimeWords time_words(const AuxtraceSetup& setup) {
  TimeWords words;
  if (!setup.clock) return words;
  words.shift = setup.clock->time_shift;
  words.mult = setup.clock->time_mult;
  words.zero = setup.clock->time_zero;
  words.has_zero = setup.clock->has_time_zero ? 1 : 0;
  return words;
}

// The TSC to core crystal clock ratio (CPUID leaf 0x15: EBX/EAX), which Intel PT's MTC packets
// are counted in; 0/0 where the CPU does not say.
std::pair<std::uint64_t, std::uint64_t> tsc_ctc_ratio() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) >= 0x15 && __get_cpuid_count(0x15, 0, &eax, &ebx, &ecx, &edx)) {
    return {ebx, eax};
  }
#endif
  return {0, 0};
}

std::vector<std::uint64_t> intel_pt_words(const Pmu& pmu, const AuxtraceSetup& setup) {
  TimeWords time = time_words(setup);
  auto [ctc_n, ctc_d] = tsc_ctc_ratio();
  std::uint64_t max_nonturbo =
      sys::read_integer_file(setup.pmu_dir + "/max_nonturbo_ratio").value_or(0);
  // perf's have_sched_switch: 3 for CPU-wide SWITCH records, 2 for per-thread ones.
  std::uint64_t switches = !setup.context_switches ? 0 : setup.per_cpu_mmaps ? 3 : 2;
  return {pmu.type,
          time.shift,
          time.mult,
          time.zero,
          time.has_zero,
          term_bits(pmu, "tsc"),
          term_bits(pmu, "noretcomp"),
          switches,
          0,  // snapshot mode: perfscope records the full trace
          setup.per_cpu_mmaps ? 1u : 0u,
          term_bits(pmu, "mtc"),
          term_bits(pmu, "mtc_period"),
          ctc_n,
          ctc_d,
          term_bits(pmu, "cyc"),
          max_nonturbo,
          0};  // address filter string length: none
}

}  // namespace

AuxtraceType auxtrace_type_of(const std::string& pmu_name) noexcept {
  if (pmu_name == "intel_pt") return AuxtraceType::intel_pt;
  if (pmu_name == "intel_bts") return AuxtraceType::intel_bts;
  if (pmu_name == "cs_etm") return AuxtraceType::cs_etm;
  if (pmu_name.starts_with("arm_spe")) return AuxtraceType::arm_spe;
  if (pmu_name.starts_with("hisi_ptt")) return AuxtraceType::hisi_ptt;
  return AuxtraceType::unknown;
}

void require_auxtrace_metadata(const std::string& pmu_name) {
  AuxtraceType type = auxtrace_type_of(pmu_name);
  switch (type) {
    case AuxtraceType::intel_pt:
    case AuxtraceType::intel_bts:
    case AuxtraceType::arm_spe:
    case AuxtraceType::hisi_ptt: return;
    default:
      throw Error(
          EOPNOTSUPP,
          fmt::format("perfscope cannot describe a {} trace for its decoders", pmu_name),
          type == AuxtraceType::cs_etm
              ? "CoreSight decoding needs each CPU's ETM configuration registers in the file, "
                "which perfscope does not write: record it with 'perf record -e cs_etm//'; "
                "perfscope reads such files."
              : "perfscope knows the metadata of intel_pt, intel_bts, arm_spe and hisi_ptt "
                "traces only.");
  }
}

std::vector<std::byte> encode_auxtrace_info(const Pmu& pmu, const AuxtraceSetup& setup) {
  require_auxtrace_metadata(pmu.name);
  AuxtraceType type = auxtrace_type_of(pmu.name);
  std::vector<std::uint64_t> words;
  switch (type) {
    case AuxtraceType::intel_pt: words = intel_pt_words(pmu, setup); break;
    case AuxtraceType::intel_bts: {
      TimeWords time = time_words(setup);
      words = {pmu.type, time.shift, time.mult, time.zero, time.has_zero, 0};
      break;
    }
    // perf's first layout (perf 5.x-6.1), which later versions still read.
    case AuxtraceType::arm_spe: words = {pmu.type, setup.per_cpu_mmaps ? 1u : 0u}; break;
    case AuxtraceType::hisi_ptt: words = {pmu.type}; break;
    default: break;  // refused above
  }
  struct {
    abi::RecordHeader header;
    std::uint32_t type;
    std::uint32_t reserved;
  } head{};
  static_assert(sizeof head == 16);
  std::size_t size = sizeof head + words.size() * sizeof(std::uint64_t);
  head.header = {static_cast<std::uint32_t>(abi::UserRecordType::auxtrace_info), 0,
                 static_cast<std::uint16_t>(size)};
  head.type = static_cast<std::uint32_t>(type);
  std::vector<std::byte> record(size);
  std::memcpy(record.data(), &head, sizeof head);
  std::memcpy(record.data() + sizeof head, words.data(), words.size() * sizeof(std::uint64_t));
  return record;
}

}  // namespace perfscope
