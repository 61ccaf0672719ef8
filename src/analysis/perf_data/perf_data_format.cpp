#include "perfscope/analysis/perf_data/perf_data_format.hpp"

#include <fmt/format.h>

#include <array>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope {

// Here rather than with the reader: the feature codec throws it too, and the emulated PMU lab
// cross-builds the writer side (format, codec, writer) without the reader and its zstd.
PerfDataError::PerfDataError(std::uint64_t offset, const std::string& what)
    : std::runtime_error(fmt::format("perf.data offset {:#x}: {}", offset, what)),
      offset_(offset) {}

PerfDataError PerfDataError::in_file(const std::string& file, const PerfDataError& error) {
  return PerfDataError(FullText{}, error.offset(), fmt::format("{}: {}", file, error.what()));
}

}  // namespace perfscope

namespace perfscope::perf_data {

std::string_view feature_name(unsigned bit) noexcept {
  static constexpr std::array<std::string_view, feature_last_known + 1> names = {"",
                                                                                 "TRACING_DATA",
                                                                                 "BUILD_ID",
                                                                                 "HOSTNAME",
                                                                                 "OSRELEASE",
                                                                                 "VERSION",
                                                                                 "ARCH",
                                                                                 "NRCPUS",
                                                                                 "CPUDESC",
                                                                                 "CPUID",
                                                                                 "TOTAL_MEM",
                                                                                 "CMDLINE",
                                                                                 "EVENT_DESC",
                                                                                 "CPU_TOPOLOGY",
                                                                                 "NUMA_TOPOLOGY",
                                                                                 "BRANCH_STACK",
                                                                                 "PMU_MAPPINGS",
                                                                                 "GROUP_DESC",
                                                                                 "AUXTRACE",
                                                                                 "STAT",
                                                                                 "CACHE",
                                                                                 "SAMPLE_TIME",
                                                                                 "MEM_TOPOLOGY",
                                                                                 "CLOCKID",
                                                                                 "DIR_FORMAT",
                                                                                 "BPF_PROG_INFO",
                                                                                 "BPF_BTF",
                                                                                 "COMPRESSED",
                                                                                 "CPU_PMU_CAPS",
                                                                                 "CLOCK_DATA",
                                                                                 "HYBRID_TOPOLOGY",
                                                                                 "PMU_CAPS"};
  return bit < names.size() ? names[bit] : std::string_view();
}

std::string_view feature_label(unsigned bit) noexcept {
  if (bit == perfscope_feature_embedded_files) return "perfscope's embedded files";
  std::string_view name = feature_name(bit);
  return name.empty() ? std::string_view("unknown feature") : name;
}

std::string_view simpleperf_record_name(std::uint32_t type) noexcept {
  // system/extras/simpleperf/record.h, SIMPLE_PERF_RECORD_*.
  static constexpr std::array<std::string_view, 11> names{
      "TYPE_START", "KERNEL_SYMBOL",    "DSO",          "SYMBOL", "SPLIT", "SPLIT_END", "EVENT_ID",
      "CALLCHAIN",  "UNWINDING_RESULT", "TRACING_DATA", "DEBUG"};
  if (type < simpleperf_record_first || type - simpleperf_record_first >= names.size()) return {};
  return names[type - simpleperf_record_first];
}

}  // namespace perfscope::perf_data
