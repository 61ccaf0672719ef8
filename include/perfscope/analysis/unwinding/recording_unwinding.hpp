// Unwinds the stack copies of a recording into another: what `perfscope inject --unwind` does to
// a `--call-graph dwarf` file (perf's, or perfscope's with --keep-stacks), with the same
// StackCompleter record does while recording. The records are replayed in time order, so each
// sample is unwound against its process's mappings of the time; every record but the stack
// copies is carried over, and the features with it.
#pragma once

#include <cstdint>
#include <string>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/unwinding/stack_completion.hpp"

namespace perfscope {

struct RecordingUnwinding {
  StackCompletionStatistics stacks;
  std::uint64_t records = 0;  // written, FINISHED_ROUND records aside
  std::uint64_t bytes_in = 0, bytes_out = 0;
};

// Whether any event of the recording samples user registers and a stack copy.
bool has_stack_copies(const PerfDataReader& reader) noexcept;

// Writes `reader`'s recording to `output` with its stack copies unwound into call chains.
// Throws std::invalid_argument when the recording has no stack copies, Error when the output
// cannot be written, and PerfDataError when the input is damaged (what was read before is
// written).
RecordingUnwinding unwind_recording(const PerfDataReader& reader, const std::string& output);

}  // namespace perfscope
