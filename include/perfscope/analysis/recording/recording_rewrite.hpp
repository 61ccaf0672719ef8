// A recording rewritten into another, as `perfscope inject` does: every record carried over in
// time order with the features, and on the way the stack copies of a `--call-graph dwarf` file
// unwound into call chains (the StackCompleter record uses while recording) and the BUILD_ID
// section made anew from the files the samples hit, or every file a mapping named (perf inject
// -b, --buildid-all).
#pragma once

#include <cstdint>
#include <string>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/unwinding/stack_completion.hpp"

namespace perfscope {

struct RecordingRewrite {
  bool unwind = false;  // stack copies into call chains (the recording must have them)
  enum class BuildIds {
    kept,          // the input's BUILD_ID section as it is
    hit,           // of the files the samples hit, read from those files now
    every_mapped,  // of every file a mapping named
  } build_ids = BuildIds::kept;
};

struct RecordingRewriteResult {
  StackCompletionStatistics stacks;
  std::uint64_t records = 0;  // written, FINISHED_ROUND records aside
  std::uint64_t bytes_in = 0, bytes_out = 0;
  std::size_t build_ids = 0;  // entries of the output's BUILD_ID section
};

// Whether any event of the recording samples user registers and a stack copy.
bool has_stack_copies(const PerfDataReader& reader) noexcept;

// Writes `reader`'s recording to `output` ("-": pipe mode on standard output) as `rewrite`
// says. Throws std::invalid_argument for `unwind` on a recording without stack copies, Error
// when the output cannot be written and PerfDataError when the input is damaged (what was read
// before is written).
RecordingRewriteResult rewrite_recording(const PerfDataReader& reader, const std::string& output,
                                         const RecordingRewrite& rewrite);

}  // namespace perfscope
