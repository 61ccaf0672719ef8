// perf's raw dump (-D, --dump-raw-trace; --dump-unsorted-raw-trace): every record of a perf.data
// file as perf 6.1 prints it — the record's bytes in hex, then one line that decodes it (with the
// sample's fields, call chain, registers and branch stack, and the thread and file it lands in),
// in perf's delivery order (perf's own records as they are read, the kernel's ordered by time a
// round at a time) — so that what a perf user reads, or a script greps, is the same.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope::cli {

// Which perf command's dump: they differ in the records their tools handle (the others end with
// perf's ": unhandled!") and in whether samples are resolved to a thread and file.
enum class PerfDumpTool { report, script, annotate, diff, sched };

struct RawTraceDumpOptions {
  PerfDumpTool tool = PerfDumpTool::report;
  bool ordered = true;  // false: file order (--dump-unsorted-raw-trace)
  std::string path;     // as the user named the file ("perf.data"); pipe mode prints "pipe"
};

struct RawTraceDumpResult {
  std::optional<PerfDataError> error;  // the walk's, if the file was cut short
  // Per event: the entries its samples added to perf's histograms (one per sample, or one per
  // branch in report's branch mode), as the trailer's "SAMPLE events" counts them.
  std::vector<std::uint64_t> histogram_entries;
};

// Prints the dump of every record to `out`.
RawTraceDumpResult print_raw_trace(const PerfDataReader& reader, const RawTraceDumpOptions& options,
                                   std::FILE* out);

}  // namespace perfscope::cli
