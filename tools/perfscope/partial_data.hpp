#pragma once
// What a command says on stderr when the recording could be read only up to an error: the same
// sentence and the same exit status (0: the output is valid for what was read) from report,
// script, annotate, sched, diff and the exports.
#include <string>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope::cli {

// `warning` is partial_data_warning's text (ProfileSummary::partial_data); nothing when empty.
void print_partial_data_warning(const std::string& warning);
void print_partial_data_warning(const PerfDataReader& reader, const PerfDataError& error);

}  // namespace perfscope::cli
