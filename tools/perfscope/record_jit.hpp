// What `perfscope record` does for JIT code: --jit's switches for the runtime it starts, and the
// JIT symbol files of the recorded processes carried into the file.
#pragma once

#include "commands.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/recording/perf_data_sink.hpp"

namespace perfscope::cli {

// --jit: the runtime's switches set in perfscope's environment, which the command inherits, and
// said on stderr. Throws std::invalid_argument without a command to start.
void set_jit_switches(const RecordOptions& options);
// The perf maps and jitdumps the sink copied, added to `features` (embedded files) and named
// on stderr, with what could not be carried.
void carry_jit_files(PerfDataSink& sink, PerfDataFeatures& features);

}  // namespace perfscope::cli
