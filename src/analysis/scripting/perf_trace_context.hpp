// The built-in module `perf_trace_context` of perf's Python scripting: common_pc, common_flags,
// common_lock_depth, perf_sample_insn, perf_sample_srcline, perf_sample_srccode and
// perf_set_itrace_options, each taking a context capsule (a tracepoint handler's `context`, or
// perf_trace_context.perf_script_context) that always means the sample being handled.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "python_api.hpp"

namespace perfscope::python {

// What the module's functions ask of the sample being handled.
class SampleContext {
 public:
  virtual ~SampleContext() = default;
  // A common_* field of the sample's tracepoint record ("common_preempt_count"); 0 when the
  // sample is no tracepoint's or the format has no such field.
  virtual std::int64_t common_field(std::string_view name) = 0;
  // The machine instruction at the sample's ip (one instruction's bytes); nullopt when its
  // code cannot be read.
  virtual std::optional<std::string> instruction() = 0;
  // The source file and line of the sample's ip; nullopt when its debug information has none.
  struct SourceLine {
    std::string file;
    int line = 0;
  };
  virtual std::optional<SourceLine> source_line() = 0;
};

// Registers the module with the interpreter: call before it starts.
void register_perf_trace_context();
// A new capsule of `context` (name NULL, as perf's).
PyObject* new_context_capsule(SampleContext* context);
// Sets perf_trace_context.perf_script_context and `main_dict`'s perf_script_context to a
// capsule of `context`, as perf does before trace_begin.
void publish_script_context(SampleContext* context, PyObject* main_dict);

}  // namespace perfscope::python
