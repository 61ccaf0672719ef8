// `perfscope script -g python`: perf-script.py, a script with a handler for each tracepoint of
// the recording (its fields printed with flag_str and symbol_str where the format says they
// are flags or symbols), trace_begin, trace_end and trace_unhandled, laid out as perf 6.1
// writes it; and process_event for a recording of other events too.
#pragma once

#include <string>

namespace perfscope {

// Writes the script for recording `input` to `output`. Throws std::runtime_error when either
// cannot be opened.
void write_python_skeleton(const std::string& input, const std::string& output);

}  // namespace perfscope
