// perfscope: the command-line front end. Each subcommand lives in its own cmd_<name>.cpp.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "commands.hpp"
#include "perfscope/analysis/event_resolvers/elf_symbol_resolver.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#ifdef PERFSCOPE_HAVE_LIBPFM
#include "perfscope/analysis/event_resolvers/libpfm_event_resolver.hpp"
#endif
#include "perfscope/core/error.hpp"
#include "perfscope/core/event_spec.hpp"

namespace {

int run_cli(int argc, char** argv) {
  CLI::App app{"perfscope: counting and profiling with Linux perf_event", "perfscope"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "perfscope 0.1.0");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Show the perf_event_attr of a failed event and more");

  perfscope::cli::StatCommand stat(app);
  perfscope::cli::DoctorCommand doctor(app);
  perfscope::cli::ListCommand list(app);
  perfscope::cli::RecordCommand record(app);
  perfscope::cli::ScriptCommand script(app);
  perfscope::cli::ReportCommand report(app);
  perfscope::cli::AnnotateCommand annotate(app);

  // Event strings may name uprobe symbols and vendor events: resolved in the analysis layer.
  perfscope::install_elf_symbol_resolver();
#ifdef PERFSCOPE_HAVE_LIBPFM
  perfscope::install_libpfm_event_resolver();
#endif

  // Words after the first "--" are a command to run, never options: split them off before CLI11
  // sees them (without "--", the subcommand's first non-option word starts the command).
  std::vector<std::string> words(argv + 1, argv + argc);
  std::vector<std::string> command;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "--") {
      command.assign(words.begin() + static_cast<std::ptrdiff_t>(i) + 1, words.end());
      words.resize(i);
      break;
    }
  }
  std::reverse(words.begin(), words.end());  // CLI11 takes a reversed vector
  try {
    app.parse(words);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  try {
    if (stat.selected()) return stat.run(verbose, std::move(command));
    if (doctor.selected()) return doctor.run();
    if (list.selected()) return list.run();
    if (record.selected()) return record.run(verbose, std::move(command));
    if (script.selected()) return script.run();
    if (report.selected()) return report.run();
    if (annotate.selected()) return annotate.run();
  } catch (const perfscope::EventSpecError& error) {
    fmt::print(stderr, "perfscope: {}\n", error.with_caret());
    return 2;
  } catch (const perfscope::PerfDataError& error) {
    fmt::print(stderr, "perfscope: {}\n", error.what());
    return 1;
  } catch (const perfscope::Error& error) {
    fmt::print(stderr, "perfscope: {}\n", verbose ? error.detailed() : std::string(error.what()));
    if (!verbose && error.attr()) fmt::print(stderr, "(run with -v to see the event's attr)\n");
    return 1;
  } catch (const std::exception& error) {
    fmt::print(stderr, "perfscope: {}\n", error.what());
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
