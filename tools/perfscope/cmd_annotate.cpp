// perfscope annotate: where inside a function its samples went, instruction by instruction and
// line by line, disassembled in process.
#include <fmt/format.h>

#include <iostream>
#include <sstream>
#include <stdexcept>

#include "command_line.hpp"
#include "commands.hpp"
#include "partial_data.hpp"
#include "perfscope/analysis/annotate/annotation_output.hpp"
#include "perfscope/analysis/annotate/annotator.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/sample_selection.hpp"
#include "perfscope/core/safe_text.hpp"
#include "raw_trace_dump.hpp"
#include "report_statistics.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

AnnotateCommand::AnnotateCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "annotate");
  app_->add_option("symbols", symbols_,
                   "Functions to annotate (default: those with --percent-limit % or more)");
  app_->add_option("-i,--input", input_, "Input file (default perf.data; - reads stdin)");
  app_->add_flag("--stdio", stdio_, "Text output (the default; accepted as perf takes it)");
  app_->add_flag("--source", source_,
                 "Source-first view: lines with their summed percentages, inlined calls under "
                 "their callers");
  app_->add_flag("--asm-only", asm_only_, "Instructions without source lines");
  app_->add_flag("--children", children_,
                 "Also the samples in the functions each one called (needs call chains: record "
                 "-g): each call instruction and line gets its callees' share, and the shares are "
                 "of the function's own plus its callees' samples");
  app_->add_option("--format", format_, "text (default) or json (docs/ANNOTATE_JSON.md)");
  app_->add_option("--percent-limit", percent_limit_,
                   "Without names: annotate functions with at least this % of the samples "
                   "(default 5)")
      ->check(CLI::Range(0.0, 100.0));
  add_sample_filter_options(*app_,
                            {&comm_list_, &pids_, &tids_, &dso_list_, nullptr, "", "-d", ""});
  app_->add_flag("--full-names", full_names_, "C++ names with parameter lists");
  app_->add_flag("--raw-names", raw_names_,
                 "Print functions, files and source text as they are, control bytes and all (by "
                 "default the text escapes them: \\x1b, \\xff)");
  app_->add_option("--debug-root", debug_root_,
                   "Where separate debug files are (default /usr/lib/debug)");
  app_->add_option("--kcore", kcore_, "Where kernel code is read (default /proc/kcore)");
  add_threads_option(*app_, threads_);
  app_->add_option("-M,--disassembler-style", disassembler_style_,
                   "x86-64 syntax: att (default, as objdump and perf write it) or intel");
  app_->footer(
      "Examples:\n"
      "  perfscope annotate -i perf.data leaf_60\n"
      "  perfscope annotate --children -i perf.data main   (a recording with -g)\n"
      "  perfscope annotate --source --percent-limit 10 --format json -i perf.data > hot.json");
  add_symbol_source_options(*app_, symbol_sources_);
  app_->add_option("-s,--symbol", symbols_,
                   "A function to annotate (as the names after the options)")
      ->type_name("SYMBOL");
  app_->add_option("-C,--cpu", cpu_list_, "Only samples taken on these CPUs (0-3,8)");
  app_->add_flag("-q,--quiet", quiet_, "No warnings on stderr: the annotation alone");
  app_->add_flag("-n,--show-nr-samples", show_nr_samples_,
                 "The Samples column (perfscope shows it always)");
  app_->add_flag("--show-total-period", text_.show_period,
                 "A Period column: the event's count each instruction stands for");
  app_->add_flag("--asm-raw", text_.raw_bytes, "Each instruction's encoding (its bytes in hex)");
  app_->add_flag("--full-paths", text_.full_paths, "Source files by their whole path");
  app_->add_flag("--skip-missing", text_.skip_missing,
                 "Leave out the functions whose code cannot be read (JIT code, missing files)");
  app_->add_option("--prefix", text_.prefix,
                   "Read the source files under this directory (with --prefix-strip)")
      ->type_name("DIR");
  app_->add_option("--prefix-strip", text_.prefix_strip,
                   "Leave out the first N directories of the source paths (with --prefix)")
      ->type_name("N");
  app_->add_option("--percent-type", percent_type_,
                   "What the percentages are of: local-period (the function's period, the "
                   "default), local-hits (its samples), global-period, global-hits (the event's)")
      ->check(CLI::IsMember({"local-period", "local-hits", "global-period", "global-hits"}));
  app_->add_flag("-D,--dump-raw-trace", dump_raw_trace_,
                 "perf's raw dump instead of the annotation: every record in hex and decoded, "
                 "then every record type's count");
}

int AnnotateCommand::run() {
  if (format_ != "text" && format_ != "json") {
    throw std::invalid_argument(
        fmt::format("--format '{}': the formats are text and json", format_));
  }
  if (source_ && asm_only_) {
    throw std::invalid_argument("--source and --asm-only exclude each other: pick one view");
  }
  AnnotateOptions options;
  if (disassembler_style_ == "intel") {
    options.syntax = AssemblySyntax::intel;
  } else if (disassembler_style_ != "att") {
    throw std::invalid_argument(fmt::format(
        "-M '{}': the disassembler styles are att (the default) and intel", disassembler_style_));
  }
  options.symbols = symbols_;
  options.percent_limit = percent_limit_;
  options.kcore_path = kcore_;
  options.callees = children_;
  options.profile.symbols.parameter_lists = full_names_;
  options.profile.threads = threads_;
  if (!debug_root_.empty()) options.profile.symbols.debug_root = debug_root_;
  SymbolSources sources(symbol_sources_);  // archives stay unpacked until annotate is done
  sources.apply(options.profile.symbols);
  options.profile.filter.comms = split_comma_list(comm_list_);
  options.profile.filter.pids = pids_;
  options.profile.filter.tids = tids_;
  options.profile.filter.dsos = split_comma_list(dso_list_);
  text_.raw_names = raw_names_;
  text_.percent = percent_type_ == "local-hits"      ? AnnotatePercent::local_hits
                  : percent_type_ == "global-period" ? AnnotatePercent::global_period
                  : percent_type_ == "global-hits"   ? AnnotatePercent::global_hits
                                                     : AnnotatePercent::local_period;

  PerfDataReader reader = PerfDataReader::open(input_);
  if (!cpu_list_.empty()) options.profile.filter.cpus = cpu_selection(cpu_list_, reader);
  if (dump_raw_trace_) {
    // perf annotate's: the dump, then the counts of every type (the empty ones too).
    RawTraceDumpResult dumped =
        print_raw_trace(reader, {PerfDumpTool::annotate, true, input_}, stdout);
    auto error = dumped.error;
    if (!error) {
      error = print_record_statistics(reader, stdout, false, false, &dumped.histogram_entries);
    }
    std::fflush(stdout);
    if (error) print_partial_data_warning(reader, *error);
    return 0;
  }
  Annotation annotation = annotate(reader, options);
  // The partial-data warning comes after the output, in the words every command uses; notes
  // (where symbols came from) are information and stay off stderr (they are in --format json).
  for (const std::string& warning : annotation.warnings) {
    if (warning == annotation.partial_data || quiet_) continue;
    fmt::print(stderr, "perfscope: warning: {}\n",
               raw_names_ ? warning : terminal_safe_lines(warning));
  }
  std::string text = format_ == "json" ? annotation_json(annotation)
                                       : render_annotation(annotation,
                                                           source_     ? AnnotateView::source
                                                           : asm_only_ ? AnnotateView::asm_only
                                                                       : AnnotateView::interleaved,
                                                           text_);
  std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::cout.flush();
  if (!std::cout) throw std::runtime_error("writing stdout failed");
  print_partial_data_warning(annotation.partial_data);
  return 0;
}

}  // namespace perfscope::cli
