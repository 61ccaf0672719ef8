// The lines `perfscope record` prints after its main summary about what it did on the way: the
// off-CPU intervals (--off-cpu, --wall) and the stacks completed while recording (-g,
// --call-graph dwarf).
#pragma once

#include <cstdint>

#include "perfscope/analysis/recording/off_cpu_recorder.hpp"
#include "perfscope/analysis/recording/stack_completion_sink.hpp"

namespace perfscope::cli {

// What became of the blocking intervals: written, left out below the threshold, cut by the
// recording's end, and the switches that went missing (lost with the records around them).
void print_off_cpu_summary(const OffCpuRecorder& recorder, const OffCpuCapability& capability,
                           std::uint64_t lost_records);
// How the user stacks were completed while recording (-g, --call-graph dwarf).
void print_stack_summary(const StackCompletionSink& completion);

}  // namespace perfscope::cli
