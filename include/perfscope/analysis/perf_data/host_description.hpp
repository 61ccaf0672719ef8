// The description of this machine that a recording carries in its perf.data feature sections:
// host name, kernel release, architecture, CPUs and their topology, memory, the command line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope {

// Reads uname, /proc/cpuinfo, /proc/meminfo and /sys/devices/system/cpu. `cmdline` is the
// recorder's own command line (its executable first).
PerfDataFeatures describe_host(std::vector<std::string> cmdline);

// The CLOCK_DATA feature for events timed by `clockid` (attr.clockid): that clock read between
// two readings of CLOCK_REALTIME, whose midpoint is taken as the wall-clock time of the same
// moment (to within half the few hundred nanoseconds between them). Nullopt when a clock cannot
// be read.
std::optional<ClockData> clock_reference(int clockid);

}  // namespace perfscope
