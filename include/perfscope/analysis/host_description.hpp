// The description of this machine that a recording carries in its perf.data feature sections:
// host name, kernel release, architecture, CPUs and their topology, memory, the command line.
#pragma once

#include <string>
#include <vector>

#include "perfscope/analysis/perf_data_reader.hpp"

namespace perfscope {

// Reads uname, /proc/cpuinfo, /proc/meminfo and /sys/devices/system/cpu. `cmdline` is the
// recorder's own command line (its executable first).
PerfDataFeatures describe_host(std::vector<std::string> cmdline);

}  // namespace perfscope
