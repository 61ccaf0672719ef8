// report --stats and --tasks: what perf report prints instead of the profile there — every
// record type's count ("Aggregated stats:" and each event's samples and lost samples), and the
// tree of the recording's tasks (pid, tid, parent, comm).
#pragma once

#include <cstdio>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope::cli {

// perf report --stats: each record type's count in the file, then each event's samples and lost
// samples, in perf's layout; `skip_empty` false (--no-skip-empty) lists the types and events
// with no record too. Returns the walk's error, if the file was cut short.
std::optional<PerfDataError> print_record_statistics(const PerfDataReader& reader, std::FILE* out,
                                                     bool skip_empty = true);

// perf report --tasks: every task a COMM or FORK record names (perf reads no other record there),
// children under their parent, as perf lists them (its thread table's order, the idle task
// "swapper" first).
std::optional<PerfDataError> print_task_tree(const PerfDataReader& reader, std::FILE* out);

}  // namespace perfscope::cli
