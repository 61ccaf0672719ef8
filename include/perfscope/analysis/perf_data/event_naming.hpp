// The name of a recorded event when the file does not give one (no EVENT_DESC: pipe mode without
// EVENT_UPDATE, simpleperf, old perf, a recording killed before its features were written): the
// name Linux perf derives from the attr (tools/perf/util/evsel.c, evsel__name), so that script,
// report and every exporter name the event as perf does.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/analysis/perf_data/tracing_data.hpp"

namespace perfscope {

// "cycles", "cycles:HG", "cpu-clock:u", "L1-dcache-load-misses", "raw 0x1a2b", "mem:0x1000:w";
// a tracepoint's "system:name" from the file's tracing data ("unknown tracepoint" when it lacks
// the id); "unknown attr type: N" for a dynamic PMU, as perf prints them.
std::string derived_event_name(const abi::PerfEventAttr& attr,
                               std::span<const TracingDataEvent> tracepoints);

}  // namespace perfscope
