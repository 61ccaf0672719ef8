// The lines `perfscope record` prints when it ends: the samples and what was lost (one wording for
// every record run, a file's or --push's), then what it did on the way: the off-CPU intervals
// (--off-cpu, --wall) and the stacks completed while recording (-g, --call-graph dwarf).
#pragma once

#include <cstdint>

#include "perfscope/analysis/recording/off_cpu_recorder.hpp"
#include "perfscope/analysis/recording/stack_completion_sink.hpp"
#include "perfscope/engine/sampling_session.hpp"

namespace perfscope::cli {

// "[ perfscope record: N samples, N LOST records (N records lost), N lost samples, N throttles ]"
void print_samples_line(const BufferStats& stats);

// What became of the blocking intervals: written, left out below the threshold, cut by the
// recording's end, and the switches that went missing (lost with the records around them).
void print_off_cpu_summary(const OffCpuRecorder& recorder, const OffCpuCapability& capability,
                           std::uint64_t lost_records);
// How the user stacks were completed while recording (-g, --call-graph dwarf).
void print_stack_summary(const StackCompletionSink& completion);

}  // namespace perfscope::cli
