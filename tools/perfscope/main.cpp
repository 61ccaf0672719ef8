// perfscope: the command-line front end. Each subcommand lives in its own cmd_<name>.cpp.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>

#include "cmd_archive.hpp"
#include "cmd_diff.hpp"
#include "cmd_push.hpp"
#include "cmd_sched.hpp"
#include "cmd_top.hpp"
#include "cmd_trace.hpp"
#include "command_line.hpp"
#include "commands.hpp"
#include "perfscope/analysis/event_resolvers/elf_symbol_resolver.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#ifdef PERFSCOPE_HAVE_LIBPFM
#include "perfscope/analysis/event_resolvers/libpfm_event_resolver.hpp"
#endif
#include "perfscope/core/error.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/safe_text.hpp"
#include "perfscope/version.hpp"

namespace {

int run_cli(int argc, char** argv) {
  CLI::App app{"perfscope: counting and profiling with Linux perf_event", "perfscope"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(perfscope::version_banner));
  bool verbose = false;
  constexpr const char* verbose_help = "Show the perf_event_attr of a failed event and more";
  app.add_flag("-v,--verbose", verbose, verbose_help);

  perfscope::cli::StatCommand stat(app);
  perfscope::cli::DoctorCommand doctor(app);
  perfscope::cli::ListCommand list(app);
  perfscope::cli::RecordCommand record(app);
  perfscope::cli::ScriptCommand script(app);
  perfscope::cli::ReportCommand report(app);
  perfscope::cli::DiffCommand diff(app);
  perfscope::cli::AnnotateCommand annotate(app);
  perfscope::cli::TraceCommand trace(app);
  perfscope::cli::ArchiveCommand archive(app);
  perfscope::cli::TopCommand top(app);
  perfscope::cli::SchedCommand sched(app);
  perfscope::cli::PushCommand push(app);
  // -v after the subcommand too, as perf takes it (`perfscope record -v`).
  for (CLI::App* subcommand : app.get_subcommands({})) {
    subcommand->add_flag("-v,--verbose", verbose, verbose_help);
  }

  // Event strings may name uprobe symbols and vendor events: resolved in the analysis layer.
  perfscope::install_elf_symbol_resolver();
#ifdef PERFSCOPE_HAVE_LIBPFM
  perfscope::install_libpfm_event_resolver();
#endif

  // The words after a "--" that ends stat's or record's options are the command, never options:
  // split them off before CLI11 sees them. A "--" after the command's first word stays in it.
  std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty()) {
    perfscope::cli::print_subcommand_list(app, stderr);
    return 1;
  }
  std::vector<std::string> command = perfscope::cli::split_off_command(app, words);
  std::reverse(words.begin(), words.end());  // CLI11 takes a reversed vector
  try {
    app.parse(words);
    // CLI11 leaves an unknown option before the command for the command: it is an option error.
    if (stat.selected()) perfscope::cli::check_no_unknown_option(*app.get_subcommand("stat"));
    if (record.selected()) perfscope::cli::check_no_unknown_option(*app.get_subcommand("record"));
    if (trace.selected()) perfscope::cli::check_no_unknown_option(*app.get_subcommand("trace"));
  } catch (const CLI::ParseError& error) {
    return perfscope::cli::report_parse_error(app, error);
  }
  try {
    if (stat.selected()) return stat.run(verbose, std::move(command));
    if (doctor.selected()) return doctor.run();
    if (list.selected()) return list.run();
    if (record.selected()) return record.run(verbose, std::move(command));
    if (script.selected()) return script.run();
    if (report.selected()) return report.run();
    if (diff.selected()) return diff.run();
    if (annotate.selected()) return annotate.run();
    if (trace.selected()) return trace.run(verbose, std::move(command));
    if (archive.selected()) return archive.run();
    if (top.selected()) return top.run();
    if (sched.selected()) return sched.run(std::move(command));
    if (push.selected()) return push.run();
  } catch (const perfscope::EventSpecError& error) {
    fmt::print(stderr, "perfscope: {}\n", perfscope::terminal_safe_lines(error.with_caret()));
    return 2;
  } catch (const perfscope::PerfDataError& error) {
    fmt::print(stderr, "perfscope: {}\n", perfscope::terminal_safe_lines(error.what()));
    return 1;
  } catch (const perfscope::Error& error) {
    fmt::print(stderr, "perfscope: {}\n",
               perfscope::terminal_safe_lines(verbose ? error.detailed() : error.what()));
    if (!verbose && error.attr()) fmt::print(stderr, "(run with -v to see the event's attr)\n");
    return 1;
  } catch (const std::invalid_argument& error) {
    // A subcommand's own check of its option values: an option error like CLI11's.
    return perfscope::cli::report_option_value_error(app,
                                                     perfscope::terminal_safe_lines(error.what()));
  } catch (const std::exception& error) {
    // Messages quote file names, comms and symbols: escaped as every other text output.
    fmt::print(stderr, "perfscope: {}\n", perfscope::terminal_safe_lines(error.what()));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int status = run_cli(argc, argv);
  std::fflush(nullptr);
#ifndef PERFSCOPE_SANITIZED
  // Everything is written and closed: skip the destructors and exit handlers of the option
  // parser and the libraries (a measurable part of a short `stat` run's start-up cost).
  std::_Exit(status);
#else
  return status;  // let LeakSanitizer see the normal teardown
#endif
}
