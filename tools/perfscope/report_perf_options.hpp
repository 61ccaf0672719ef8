// perf report's everyday options as perf takes them: -g with perf's comma syntax (or alone), -n,
// -q, -G, --header, --header-only, --max-stack and -F; -T and --hierarchy refused with the
// reason and what to use instead.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/report_table.hpp"

namespace perfscope::cli {

struct ReportCommandOptions;

void add_report_perf_options(CLI::App& app, ReportCommandOptions& options);

// perf report's --time-quantum: nanoseconds, or a number with s, ms, us or ns ("10ms"), never 0.
// Throws CLI::ValidationError.
std::uint64_t parse_time_quantum(const std::string& text);

// -g/--call-graph's value: perf's [type][,threshold][,order][,sort][,branch][,value] ("graph,
// 0.5,caller", "callee", "none", "caller,0.1,address"); empty (-g alone) is perf's default graph.
// Sets the call graph, its threshold and, for "address", source lines in its entries. Throws
// std::invalid_argument for what perfscope does not print (flat, fractal, folded, period and
// count values), saying what to use instead.
void apply_call_graph_option(const std::string& text, ReportOptions& report, bool& source_lines);

// -F: perf's output fields. Its sort keys become the rows' keys (in its order); overhead is
// always shown, sample adds the Samples column, overhead_children the Children column.
void apply_output_fields(const std::string& text, ReportOptions& report);

// --header: the file's header as perf report --header prints it, every line a "#" comment.
std::string render_file_header(const PerfDataReader& reader, const std::string& path);

// -q: the report without its "#" comment lines.
std::string without_comment_lines(const std::string& text);

}  // namespace perfscope::cli
