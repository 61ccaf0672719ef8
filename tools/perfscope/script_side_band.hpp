// perf script's --show-*-events: the side-band records (tasks, mappings, losses, namespaces,
// cgroups, BPF and kernel text changes, context switches, rounds) in perf's own words, as its
// perf_event__fprintf prints them after the columns of the record's event.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope::cli {

// Which side-band records `script` shows (perf script's --show-*-events flags).
struct SideBandSelection {
  bool task = false;        // COMM, FORK, EXIT
  bool mmap = false;        // MMAP, MMAP2
  bool switches = false;    // SWITCH, SWITCH_CPU_WIDE
  bool lost = false;        // LOST
  bool namespaces = false;  // NAMESPACES
  bool cgroup = false;      // CGROUP
  bool bpf = false;         // KSYMBOL, BPF_EVENT
  bool text_poke = false;   // TEXT_POKE (and KSYMBOL, as perf)
  bool rounds = false;      // FINISHED_ROUND, in file order

  bool shows(std::uint32_t type) const noexcept;
  bool any() const noexcept {
    return task || mmap || switches || lost || namespaces || cgroup || bpf || text_poke || rounds;
  }
};

// Whose comm the columns before a side-band record show: the task the record is about (COMM,
// FORK, EXIT, MMAP, MMAP2, NAMESPACES), or the one whose context wrote it (the others).
struct SideBandTask {
  bool of_record = false;
  std::uint32_t pid = 0, tid = 0;
};
SideBandTask side_band_task(const Record& record) noexcept;

// How names from the recording (comms, files, cgroup paths, kernel symbols) are printed: escaped
// for a terminal, unless --raw-names.
struct SideBandNames {
  std::function<std::string(std::string_view)> name;
  // A kernel address as "name+0xOFF", empty when nothing names it: TEXT_POKE shows where the
  // kernel's text changed.
  std::function<std::string(std::uint64_t)> kernel_symbol;
};

// perf's perf_event__fprintf text of a decoded record, from "PERF_RECORD_" to its last newline.
std::string side_band_text(const Record& record, const abi::RecordHeader& header,
                           const SideBandNames& names);

}  // namespace perfscope::cli
