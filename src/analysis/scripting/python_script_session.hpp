// `perfscope script -s FILE.py`: a perf.data file walked in time order through a Python script
// written for perf (perf's scripting API: trace_begin, process_event, subsystem__event
// handlers, trace_unhandled, context_switch, throttle, trace_end, perf_trace_context), with
// CPython embedded in this process.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "perfscope/analysis/symbols/symbolizer.hpp"

namespace perfscope {

struct PythonScriptOptions {
  std::string input = "perf.data";  // "-": standard input
  std::string script;               // the path as given (sys.argv[0])
  std::vector<std::string> arguments;
  std::string exec_path;  // PERF_EXEC_PATH, where Perf-Trace-Util lives
  std::size_t max_stack = 127;
  bool callchains = true;
  // perf script's sample filters: empty sets keep every sample.
  std::set<std::uint32_t> cpus, pids, tids;
  std::set<std::string> comms;
  SymbolizerOptions symbols;
  int inline_choice = 0;  // --inline / --no-inline / the default (DWARF stacks)
};

// Runs the script over the recording. Returns the exit status: 0, the script's own sys.exit
// status, or 1 after a Python error (its traceback printed, with the sample it stopped at).
// Throws std::runtime_error for what is wrong before the script starts (no such file).
int run_python_script(const PythonScriptOptions& options);

}  // namespace perfscope
