// PmuRegistry: the PMUs the running kernel advertises under /sys/bus/event_source/devices, each
// with its type, the bit layout of its terms (format/), its named events (events/, with .scale,
// .unit, .per-pkg and .snapshot), cpumask and caps/. Event strings are resolved against it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

// One file of format/: which attr word (config, config1, config2, config3) and which bits of it a
// term occupies. A term may be split ("config:0-7,32-35"): its value's low bits fill the lowest
// range first, as the kernel's format parser and perf do.
struct PERFSCOPE_EXPORT PmuFormatField {
  struct BitRange {
    unsigned low;
    unsigned high;  // inclusive
  };
  std::string name;
  unsigned word = 0;  // 0: config, 1: config1, 2: config2, 3: config3
  std::vector<BitRange> ranges;

  unsigned width() const noexcept;
  // "config:0-7,32-35" as in sysfs.
  std::string layout() const;
  // The value the term holds in an attr's words (the inverse of apply).
  std::uint64_t extract(const abi::PerfEventAttr& attr) const noexcept;
  // Every bit this term occupies in its word.
  std::uint64_t mask() const noexcept;
};

// Parses a format/ file's text ("config1:0", "config:0-7,32-35"); nullopt when malformed.
PERFSCOPE_EXPORT std::optional<PmuFormatField> parse_pmu_format(std::string name,
                                                                std::string_view text);

// Writes `value` into the bits of `field` (clearing what was there). Returns an empty string, or
// why the value does not fit: "value 0x1ff is too wide for term 'umask' (8 bits: config:8-15)".
PERFSCOPE_EXPORT std::string apply_pmu_format(const PmuFormatField& field, std::uint64_t value,
                                              abi::PerfEventAttr& attr);

// The attr word a format field names (config, config1, ...).
PERFSCOPE_EXPORT std::uint64_t& attr_config_word(abi::PerfEventAttr& attr, unsigned word) noexcept;
PERFSCOPE_EXPORT std::uint64_t attr_config_word(const abi::PerfEventAttr& attr,
                                                unsigned word) noexcept;

// A named event of events/: "cache-misses" = "event=0x64,umask=0x09".
struct PmuAlias {
  std::string name;
  std::string terms;  // the file's text, trimmed
  std::optional<double> scale;
  std::string unit;
  bool per_pkg = false;
  bool snapshot = false;
};

struct PERFSCOPE_EXPORT Pmu {
  std::string name;
  std::uint32_t type = 0;
  std::vector<PmuFormatField> format;  // sorted by name
  std::vector<PmuAlias> aliases;       // sorted by name
  std::string cpumask;                 // CPUs to open uncore events on ("0"), empty if none
  std::string cpus;                    // CPUs a hybrid core PMU covers ("0-15"), empty if none
  std::map<std::string, std::string> caps;
  bool core = false;  // counts CPU work: "cpu", or a PMU with a cpus file (hybrid, arm)

  const PmuFormatField* find_term(std::string_view term) const noexcept;
  // Alias names are matched case-insensitively, as perf does.
  const PmuAlias* find_alias(std::string_view alias) const noexcept;
};

// PMUs that write their data to an AUX area beside the ring buffer, as perf knows them by name:
// intel_pt, intel_bts, arm_spe_N, cs_etm, hisi_ptt*.
PERFSCOPE_EXPORT bool is_aux_tracing_pmu(std::string_view name) noexcept;

class PERFSCOPE_EXPORT PmuRegistry {
 public:
  // Reads the PMUs under `root` (a directory of PMU directories); nothing is read until asked.
  explicit PmuRegistry(std::string root = default_root());
  ~PmuRegistry();
  PmuRegistry(const PmuRegistry&) = delete;
  PmuRegistry& operator=(const PmuRegistry&) = delete;

  // The running kernel's PMUs, read once per process on first use.
  static const PmuRegistry& system();
  // /sys/bus/event_source/devices, or $PERFSCOPE_PMU_ROOT when set.
  static std::string default_root();

  const std::string& root() const noexcept { return root_; }
  // PMU names, sorted.
  std::vector<std::string> names() const;
  // The PMU, read from sysfs on first use; nullptr when there is no such PMU or it has no
  // readable type.
  const Pmu* find(std::string_view name) const;
  const Pmu* find_by_type(std::uint32_t type) const;
  // Every PMU, all read.
  std::vector<const Pmu*> all() const;
  // The core PMUs; more than one on a hybrid system (cpu_core and cpu_atom).
  std::vector<const Pmu*> core_pmus() const;
  // Their names, found without reading the PMUs ("cpu", or those with a cpus file).
  std::vector<std::string> core_pmu_names() const;
  bool hybrid() const { return core_pmu_names().size() > 1; }

 private:
  struct Entry;
  const Pmu* load(Entry& entry) const;

  std::string root_;
  std::vector<std::unique_ptr<Entry>> entries_;
  struct CoreNames;
  std::unique_ptr<CoreNames> core_names_;  // found once, on first use
};

}  // namespace perfscope
