// report --stats and --tasks: what perf report prints instead of the profile there — every
// record type's count ("Aggregated stats:" and each event's samples and lost samples), and the
// tree of the recording's tasks (pid, tid, parent, comm).
#pragma once

#include <cstdio>
#include <string_view>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope::cli {

// perf's name of a record type (perf_event__names): "MMAP", ..., "FINISHED_INIT"; "" for a type
// perf 6.1 does not name.
std::string_view perf_record_name(std::uint32_t type) noexcept;

// perf report --stats: each record type's count in the file, then each event's samples and lost
// samples, in perf's layout; `skip_empty` false (--no-skip-empty) lists the types and events
// with no record too. `lost_samples_lines` false: no LOST_SAMPLES line per event (the trailer of
// perf's -D, which counts them only for --stats). Returns the walk's error, if the file was cut
// short. `sample_counts`, when given, are the SAMPLE counts of each event (perf's histogram
// entries) instead of the samples in the file.
std::optional<PerfDataError> print_record_statistics(
    const PerfDataReader& reader, std::FILE* out, bool skip_empty = true,
    bool lost_samples_lines = true, const std::vector<std::uint64_t>* sample_counts = nullptr);

// perf report --tasks: every task a COMM or FORK record names (perf reads no other record there),
// children under their parent, as perf lists them (its thread table's order, the idle task
// "swapper" first). `maps` (perf's --mmaps): the MMAP records read too, each task's process's
// mappings under it.
std::optional<PerfDataError> print_task_tree(const PerfDataReader& reader, std::FILE* out,
                                             bool maps = false);

}  // namespace perfscope::cli
