// perfscope report: where the samples of a perf.data file went, as perf report's table with call
// trees, or exported in a format other tools open (flame graphs, speedscope, Firefox Profiler,
// pprof, JSON).
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "command_line.hpp"
#include "commands.hpp"
#include "partial_data.hpp"
#include "perf_config.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/exporters/profile_exporters.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/off_cpu_profile.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/analysis/profile/report_table.hpp"
#include "perfscope/core/safe_text.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "raw_trace_dump.hpp"
#include "report_html.hpp"
#include "report_perf_options.hpp"
#include "report_statistics.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

namespace {
std::vector<std::string> comma_separated(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}
// The text report's names, safe for a terminal (#22): comms, paths and symbols are bytes the
// recorded processes chose, and may hold escape sequences.
void make_names_terminal_safe(Profile& profile) {
  auto safe = [](std::string& text) {
    if (!is_terminal_safe(text)) text = terminal_safe(text);
  };
  for (auto& dso : profile.dsos) safe(dso.path);
  for (auto& function : profile.functions) safe(function.name);
  for (auto& frame : profile.frames) safe(frame.source_file);
  for (auto& thread : profile.threads) safe(thread.comm);
  for (auto& event : profile.events) safe(event.name);
  auto& summary = profile.summary;
  for (auto* text : {&summary.hostname, &summary.os_release, &summary.arch,
                     &summary.cpu_description, &summary.command_line}) {
    safe(*text);
  }
  for (auto& warning : summary.warnings) safe(warning);
  for (auto& note : summary.notes) safe(note);
}
}  // namespace

ReportCommand::ReportCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "report");
  app_->add_option("-i,--input", options_.input, "Input file (default perf.data; - reads stdin)");
  app_->add_option("-s,--sort", options_.sort,
                   "Sort keys: comm,pid,tid,dso,sym (symbol),cpu,srcline,srcfile,parent,state,time "
                   "(default comm,dso,sym; state: why off-CPU samples waited); overhead, period "
                   "and sample order the rows");
  app_->add_flag("--children,!--no-children", options_.children,
                 "Inclusive (Children) and Self columns; the default with call chains");
  app_->add_option("-g,--call-graph", options_.call_graph,
                   "Call trees: caller, callee or none, or perf's graph,THRESHOLD,ORDER "
                   "(default caller with --children, callee without; -g alone: the default)")
      ->expected(0, 1);
  app_->add_option("--percent-limit", options_.percent_limit, "Hide rows below this percentage")
      ->check(CLI::Range(0.0, 100.0));
  add_sample_filter_options(*app_, {&options_.comm_list, &options_.pids, &options_.tids,
                                    &options_.dso_list, &options_.symbol_list, "-c", "-d", "-S"});
  app_->add_option("-C,--cpu", options_.cpu_list, "Only samples taken on these CPUs (0-3,8)");
  app_->add_option("--percentage", options_.percentage,
                   "Shares of a filtered report: 'absolute' (of everything recorded, the "
                   "default) or 'relative' (of what the filters kept)")
      ->check(CLI::IsMember({"relative", "absolute"}));
  app_->add_option("--time", options_.time,
                   "Only samples in these times: START,STOP in seconds (either open; several "
                   "separated by blanks), A%/N (the N-th slice of A %), A%-B%");
  app_->add_flag("--stdio", options_.stdio,
                 "Text output (perfscope has no TUI: the text report is what it prints anyway)");
  app_->add_flag("--srcline", options_.srcline,
                 "Source lines (DWARF): in call-graph entries, the srcline sort key and exports");
  add_inline_option(*app_, options_.inline_frames);
  add_threads_option(*app_, options_.threads);
  app_->add_flag("--full-names", options_.full_names,
                 "C++ names with parameter lists and return types (perf shows them with -v)");
  app_->add_flag("--group-by-name", options_.group_by_name,
                 "One row for the functions that print the same name in one file (overloads, "
                 "recompiled JIT code); by default each symbol is a row, as in perf");
  app_->add_flag("--raw-names", options_.raw_names,
                 "Print comms, files and symbols as recorded, control bytes and all (by default "
                 "the text report escapes them: \\x1b, \\xff)");
  app_->add_option("--debug-root", options_.debug_root,
                   "Where separate debug files are (default /usr/lib/debug)");
  add_symbol_source_options(*app_, options_.symbol_sources);
  app_->add_option("--format", options_.format,
                   "Export instead: folded, speedscope, gecko, pprof, json, svg, or html (the "
                   "viewer of perfscope view and the profile in one file that opens from file://)");
  app_->add_option("-o,--output", options_.output, "Write to this file instead of stdout");
  add_report_perf_options(*app_, options_);
  add_event_switch_options(*app_, options_.switches);
  app_->add_flag("--wall", options_.wall,
                 "Wall-clock view of an off-CPU recording: on-CPU (cpu-clock) and off-CPU "
                 "samples as one wall-time event, shares of the threads' wall time");
  app_->footer(
      "Examples:\n"
      "  perfscope report --stdio --sort comm,dso -i perf.data\n"
      "  perfscope report --format pprof -o profile.pb.gz && go tool pprof -top profile.pb.gz\n"
      "  perfscope report --wall --stdio --sort comm,state,sym   (a record --wall recording)");
}

int ReportCommand::run() {
  const ReportCommandOptions& o = options_;
  ReportOptions report;
  // perf's settings (~/.perfconfig) stand in for the options not given.
  const PerfConfig& config = perf_config();
  std::string sort = o.sort;
  if (sort.empty()) sort = config.get("report.sort_order").value_or("");
  if (!sort.empty()) {
    report.sort = parse_report_sort_keys(sort);
    report.order_by_samples = report_orders_by_samples(sort);
  }
  if (o.children != 0) {
    report.children = o.children > 0;
  } else if (auto children = config.boolean("report.children")) {
    report.children = *children;
  }
  bool source_lines = o.srcline;
  if (app_->get_option("-g")->count() > 0) {
    apply_call_graph_option(o.call_graph, report, source_lines);
  }
  if (o.inverted) report.call_graph = ReportCallGraph::caller;
  if (!o.output_fields.empty()) apply_output_fields(o.output_fields, report);
  if (o.show_total_period) report.show_period = true;
  if (!o.field_separator.empty()) {
    // Scripts read perf's columns: Samples only when asked for, as in perf.
    report.field_separator = o.field_separator;
    if (!o.show_nr_samples && o.output_fields.empty()) report.show_samples = false;
  }
  report.percent_limit = o.percent_limit;
  if (app_->get_option("--percent-limit")->count() == 0) {
    if (auto limit = config.get("report.percent-limit")) {
      report.percent_limit = parse_config_number("report.percent-limit", *limit);
    }
  }
  report.source_lines_in_call_graph = source_lines;

  std::optional<ExportFormat> format;
  const bool html = o.format == "html";
  if (!o.format.empty() && !html) {
    format = parse_export_format(o.format);
    if (!format) {
      throw std::invalid_argument(fmt::format(
          "--format '{}': the formats are folded, speedscope, gecko, pprof, json, svg and html",
          o.format));
    }
    if (*format == ExportFormat::pprof && o.output.empty() && ::isatty(STDOUT_FILENO)) {
      throw std::invalid_argument(
          "--format pprof writes gzipped binary protobuf: name a file with -o FILE (then "
          "`go tool pprof -top FILE`)");
    }
  }

  ProfileOptions options;
  options.symbols.source_lines = source_lines;
  options.max_stack = o.max_stack;
  options.threads = o.threads;
  options.symbols.parameter_lists = o.full_names;
  options.group_functions_by_name = o.group_by_name;
  for (ReportSortKey key : report.sort) {
    if (key == ReportSortKey::srcline || key == ReportSortKey::srcfile) {
      options.symbols.source_lines = true;
    }
  }
  if (!o.debug_root.empty()) options.symbols.debug_root = o.debug_root;
  SymbolSources sources(o.symbol_sources);  // archives stay unpacked until the report is done
  sources.apply(options.symbols);
  options.filter.comms = comma_separated(o.comm_list);
  options.filter.pids = o.pids;
  options.filter.tids = o.tids;
  options.filter.dsos = comma_separated(o.dso_list);
  options.filter.symbols = comma_separated(o.symbol_list);
  options.filter.resolved_only = o.hide_unresolved;
  options.filter.symbol_part = o.symbol_filter;
  // The table and the aggregating exporters need the samples folded only: their memory stays
  // bounded by the distinct stacks, whatever the length of the recording.
  options.keep_samples = !html && format && export_needs_each_sample(*format);
  // The time key folds samples by their time, which folded groups have no more.
  if (std::find(report.sort.begin(), report.sort.end(), ReportSortKey::time) != report.sort.end())
    options.keep_samples = true;
  report.nanoseconds = o.nanoseconds;
  report.full_source_path = o.full_source_path;
  if (o.time_quantum_ns != 0) report.time_quantum_ns = o.time_quantum_ns;
  options.keep_sample_times = html;  // the viewer's time ranges (ProfileView)

  PerfDataReader reader = PerfDataReader::open(o.input);
  if (o.dump_raw_trace) {
    if (!o.quiet) {
      std::fputs(
          "# To display the perf.data header info, please use --header/--header-only "
          "options.\n#\n",
          stdout);
    }
    RawTraceDumpResult dumped =
        print_raw_trace(reader, {PerfDumpTool::report, true, o.input}, stdout);
    auto error = dumped.error;
    if (!error) {
      error = print_record_statistics(reader, stdout, true, false, &dumped.histogram_entries);
    }
    std::fflush(stdout);
    if (error) print_partial_data_warning(reader, *error);
    return 0;
  }
  if (o.record_statistics || o.tasks || o.mmaps) {
    auto error = o.record_statistics ? print_record_statistics(reader, stdout, o.skip_empty)
                                     : print_task_tree(reader, stdout, o.mmaps);
    std::fflush(stdout);
    if (error) print_partial_data_warning(reader, *error);
    return 0;
  }
  options.filter.times = TimeRanges::parse(o.time, reader.features().sample_time);
  options.filter.switches =
      EventSwitchWindows::compute(reader, o.switches.on, o.switches.off, o.switches.show);
  report.time_slices = o.time;
  // perf never counts the samples --hide-unresolved leaves out: shares are of the rest.
  report.relative_percentages = o.percentage == "relative" || o.hide_unresolved;
  // perf leaves out the column of a filter that keeps one value (perf_hpp's elide), and says
  // the value in the header: the rows are the same, one value of the column being left.
  auto elide = [&](ReportSortKey key, const std::vector<std::string>& kept, const char* column) {
    auto at = std::find(report.sort.begin(), report.sort.end(), key);
    if (kept.size() != 1 || at == report.sort.end() || report.sort.size() == 1) return;
    report.sort.erase(at);
    report.elided.emplace_back(column, kept.front());
  };
  elide(ReportSortKey::comm, options.filter.comms, "comm");
  elide(ReportSortKey::dso, options.filter.dsos, "dso");
  elide(ReportSortKey::sym, options.filter.symbols, "symbol");
  if (!o.cpu_list.empty()) options.filter.cpus = cpu_selection(o.cpu_list, reader);
  std::string header = o.header || o.header_only ? render_file_header(reader, o.input) : "";
  if (o.header_only) {
    std::cout << header << std::flush;
    return 0;
  }
  options.symbols.inline_frames = inline_frames_wanted(o.inline_frames, reader);
  Profile profile = build_profile(reader, options);
  if (o.wall) merge_wall_time(profile);
  if (o.quiet) {
    // Only the rows: -q says nothing else.
  } else if (profile.summary.samples_read == 0) {
    fmt::print(stderr, "perfscope: {}: the recording has no samples\n", o.input);
  } else if (profile.summary.samples == 0) {
    fmt::print(stderr,
               "perfscope: {}: none of its {} samples passed the filters (--comms, --pid, --tid, "
               "--dsos, --symbols, --cpu, --time)\n",
               o.input, profile.summary.samples_read);
  }

  std::ofstream file;
  std::ostream* out = &std::cout;
  if (!o.output.empty()) {
    // Created 0600 first: the stream below keeps the mode when it truncates.
    int created = sys::create_private_file(o.output);
    if (created == 0) file.open(o.output, std::ios::binary | std::ios::trunc);
    if (created != 0 || !file) {
      throw std::runtime_error(fmt::format("-o {}: cannot open it for writing: {}", o.output,
                                           std::strerror(created != 0 ? -created : errno)));
    }
    out = &file;
  }
  const std::string partial_data = profile.summary.partial_data;
  if (html) {
    write_report_html(reader, std::move(profile), o.input, *out);
  } else if (format) {
    write_profile(profile, *format, *out);
  } else {
    if (!o.raw_names) make_names_terminal_safe(profile);
    std::string text = header + render_report(profile, report) + render_thread_times(profile);
    if (o.quiet) text = without_comment_lines(text);
    out->write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  out->flush();
  if (!*out) {
    throw std::runtime_error(
        fmt::format("writing {} failed", o.output.empty() ? std::string("stdout") : o.output));
  }
  if (!o.quiet) print_partial_data_warning(partial_data);
  return 0;
}

}  // namespace perfscope::cli
