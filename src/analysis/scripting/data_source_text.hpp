// A sample's data source (PERF_SAMPLE_DATA_SRC, union perf_mem_data_src) in the words perf's
// scripts receive as `datasrc_decode`: "|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK
// N/A".
#pragma once

#include <cstdint>
#include <string>

namespace perfscope {

// PERF_MEM_DATA_SRC_NONE: what a sample without PERF_SAMPLE_DATA_SRC carries in perf.
inline constexpr std::uint64_t data_source_none = 0x5080021;

// perf_script__meminfo_scnprintf's text, cut to 99 characters as perf's buffer cuts it.
std::string data_source_text(std::uint64_t data_source);

}  // namespace perfscope
