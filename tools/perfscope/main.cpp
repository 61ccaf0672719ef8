// perfscope: the command-line front end. Each subcommand lives in its own cmd_<name>.cpp.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cmd_archive.hpp"
#include "cmd_diff.hpp"
#include "cmd_inject.hpp"
#include "cmd_push.hpp"
#include "cmd_sched.hpp"
#include "cmd_top.hpp"
#include "cmd_trace.hpp"
#include "cmd_view.hpp"
#include "command_line.hpp"
#include "commands.hpp"
#include "help_formatter.hpp"
#include "perf_commands_elsewhere.hpp"
#include "perf_config.hpp"
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

bool is_global_flag(const std::string& word) { return word == "-v" || word == "--verbose"; }

// The subcommand the words name: the first word that is not a global flag, when it is a
// subcommand's name. Empty for help, the version, no words or a mistyped name: those list every
// subcommand, so every one is added (without its options).
std::string chosen_subcommand(const std::vector<std::string>& words) {
  for (const std::string& word : words) {
    if (is_global_flag(word)) continue;
    return perfscope::cli::is_subcommand_name(word) ? word : std::string();
  }
  return {};
}

// perf's spellings: `perfscope help [COMMAND]` is `perfscope [COMMAND] --help`, and `perfscope
// version` alone is `perfscope --version`.
void rewrite_help_and_version(std::vector<std::string>& words) {
  auto first = std::find_if_not(words.begin(), words.end(), is_global_flag);
  if (first == words.end()) return;
  if (*first == "version" && first + 1 == words.end()) {
    *first = "--version";
  } else if (*first == "help") {
    auto next = first + 1;
    if (next != words.end() && perfscope::cli::is_subcommand_name(*next)) {
      std::string name = *next;
      words.erase(first, words.end());
      words.push_back(name);
      words.push_back("--help");
    } else {
      words.erase(first, words.end());
      words.push_back("--help");
    }
  }
}

// perf sched script is perf script (perf's alias): `perfscope sched script ARGS` runs
// `perfscope script ARGS`.
void rewrite_sched_script(std::vector<std::string>& words) {
  auto first = std::find_if_not(words.begin(), words.end(), is_global_flag);
  if (first == words.end() || *first != "sched") return;
  auto next = first + 1;
  if (next != words.end() && *next == "script") words.erase(first);
}

// perf's `stat record [-o FILE] ...` and `stat report [-i FILE]`: stat with the file it writes or
// reads (perf.data unless named); -o and -i before the command name that file there.
void rewrite_stat_record_and_report(std::vector<std::string>& words) {
  auto first = std::find_if_not(words.begin(), words.end(), is_global_flag);
  if (first == words.end() || *first != "stat" || first + 1 == words.end()) return;
  auto mode = first + 1;
  const bool record = *mode == "record";
  if (!record && *mode != "report") return;
  std::string file = "perf.data";
  std::vector<std::string> rest(mode + 1, words.end());
  std::vector<std::string> kept;
  const char* short_name = record ? "-o" : "-i";
  const char* long_name = record ? "--output" : "--input";
  for (std::size_t i = 0; i < rest.size(); ++i) {
    const std::string& word = rest[i];
    if (word == "--") {
      kept.insert(kept.end(), rest.begin() + static_cast<std::ptrdiff_t>(i), rest.end());
      break;
    }
    if ((word == short_name || word == long_name) && i + 1 < rest.size()) {
      file = rest[++i];
    } else if (word.starts_with(std::string(long_name) + "=")) {
      file = word.substr(std::string(long_name).size() + 1);
    } else if (word.size() > 2 && word.starts_with(short_name)) {
      file = word.substr(2);
    } else {
      kept.push_back(word);
    }
  }
  words.erase(mode, words.end());
  words.push_back(record ? "--record-to" : "--report-from");
  words.push_back(file);
  words.insert(words.end(), kept.begin(), kept.end());
}

// perf's `trace record ARGS`: a recording of every system call's enter and exit (perf trace -i
// replays it), i.e. `record -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -c 1 ARGS`.
void rewrite_trace_record(std::vector<std::string>& words) {
  auto first = std::find_if_not(words.begin(), words.end(), is_global_flag);
  if (first == words.end() || *first != "trace" || first + 1 == words.end()) return;
  if (*(first + 1) != "record") return;
  *first = "record";
  words.erase(first + 1);
  std::vector<std::string> events{
      "-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit", "-c", "1"};
  words.insert(first + 1, events.begin(), events.end());
}

// A subcommand's object, made only when its name was chosen (or when no name was: then every
// subcommand is listed): the options of the other twelve are never built, which was most of a
// short run's start-up (CLI11's add_option).
template <typename Command>
struct Chosen {
  std::optional<Command> command;
  bool selected() const { return command && command->selected(); }
};

int run_cli(int argc, char** argv) {
  CLI::App app{"perfscope: counting and profiling with Linux perf_event", "perfscope"};
  app.require_subcommand(1);
  app.formatter(std::make_shared<perfscope::cli::HelpFormatter>());
  app.set_version_flag("--version", std::string(perfscope::version_banner));
  bool verbose = false;
  constexpr const char* verbose_help = "Show the perf_event_attr of a failed event and more";
  app.add_flag(
      "-v,--verbose", verbose,
      "More detail in error messages (the perf_event_attr of an event that failed to open)");

  std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty()) {
    for (const auto& entry : perfscope::cli::subcommand_table()) {
      perfscope::cli::add_subcommand_named(app, entry.name);
    }
    perfscope::cli::print_subcommand_list(app, stderr);
    return 1;
  }
  rewrite_help_and_version(words);
  rewrite_sched_script(words);
  rewrite_stat_record_and_report(words);
  rewrite_trace_record(words);
  const std::string chosen = chosen_subcommand(words);

  Chosen<perfscope::cli::StatCommand> stat;
  Chosen<perfscope::cli::DoctorCommand> doctor;
  Chosen<perfscope::cli::ListCommand> list;
  Chosen<perfscope::cli::RecordCommand> record;
  Chosen<perfscope::cli::ScriptCommand> script;
  Chosen<perfscope::cli::ReportCommand> report;
  Chosen<perfscope::cli::DiffCommand> diff;
  Chosen<perfscope::cli::AnnotateCommand> annotate;
  Chosen<perfscope::cli::TraceCommand> trace;
  Chosen<perfscope::cli::ArchiveCommand> archive;
  Chosen<perfscope::cli::InjectCommand> inject;
  Chosen<perfscope::cli::TopCommand> top;
  Chosen<perfscope::cli::SchedCommand> sched;
  Chosen<perfscope::cli::PushCommand> push;
  Chosen<perfscope::cli::ViewCommand> view;
  Chosen<perfscope::cli::EvlistCommand> evlist;
  Chosen<perfscope::cli::BuildidListCommand> buildid_list;
  Chosen<perfscope::cli::KallsymsCommand> kallsyms;
  Chosen<perfscope::cli::VersionCommand> version;
  Chosen<perfscope::cli::CheckCommand> check;
  Chosen<perfscope::cli::DataCommand> data;
  Chosen<perfscope::cli::ConfigCommand> config;
  Chosen<perfscope::cli::BuildidCacheCommand> buildid_cache;
  Chosen<perfscope::cli::ProbeCommand> probe;
  if (chosen.empty()) {
    // A perf command perfscope does not have: what perf does there and what perfscope offers.
    auto first = std::find_if_not(words.begin(), words.end(), is_global_flag);
    if (first != words.end()) {
      if (auto answer = perfscope::cli::perf_command_elsewhere(*first)) {
        fmt::print(stderr, "perfscope: {}.\n", *answer);
        return 1;
      }
    }
    for (const auto& entry : perfscope::cli::subcommand_table()) {
      perfscope::cli::add_subcommand_named(app, entry.name);
    }
  } else if (chosen == "stat") {
    stat.command.emplace(app);
  } else if (chosen == "doctor") {
    doctor.command.emplace(app);
  } else if (chosen == "list") {
    list.command.emplace(app);
  } else if (chosen == "record") {
    record.command.emplace(app);
  } else if (chosen == "script") {
    // perf's scripting (-s FILE.py, -l, record/report NAME) runs in its own helper.
    auto at = std::find(words.begin(), words.end(), std::string("script"));
    std::vector<std::string> after(at + 1, words.end());
    if (perfscope::cli::script_words_ask_for_scripting(after)) {
      try {
        perfscope::cli::run_scripting_helper(after);
      } catch (const std::exception& error) {
        fmt::print(stderr, "perfscope script: {}\n", error.what());
        return 1;
      }
    }
    script.command.emplace(app);
  } else if (chosen == "report") {
    report.command.emplace(app);
  } else if (chosen == "diff") {
    diff.command.emplace(app);
  } else if (chosen == "annotate") {
    annotate.command.emplace(app);
  } else if (chosen == "trace") {
    trace.command.emplace(app);
  } else if (chosen == "inject") {
    inject.command.emplace(app);
  } else if (chosen == "archive") {
    archive.command.emplace(app);
  } else if (chosen == "top") {
    top.command.emplace(app);
  } else if (chosen == "sched") {
    sched.command.emplace(app);
  } else if (chosen == "push") {
    push.command.emplace(app);
  } else if (chosen == "view") {
    view.command.emplace(app);
  } else if (chosen == "evlist") {
    evlist.command.emplace(app);
  } else if (chosen == "buildid-list") {
    buildid_list.command.emplace(app);
  } else if (chosen == "kallsyms") {
    kallsyms.command.emplace(app);
  } else if (chosen == "version") {
    version.command.emplace(app);
  } else if (chosen == "check") {
    check.command.emplace(app);
  } else if (chosen == "data") {
    data.command.emplace(app);
  } else if (chosen == "config") {
    config.command.emplace(app);
  } else if (chosen == "buildid-cache") {
    buildid_cache.command.emplace(app);
  } else if (chosen == "probe") {
    probe.command.emplace(app);
  }
  // -v after the subcommand too, as perf takes it (`perfscope record -v`). What it shows beyond
  // an error's detail (the attr of an event that failed to open) is said only where events open.
  for (CLI::App* subcommand : app.get_subcommands({})) {
    const bool opens = perfscope::cli::opens_events(subcommand->get_name());
    subcommand->add_flag("-v,--verbose", verbose,
                         opens ? verbose_help : "More detail in error messages");
    // sched's own subcommands: only its record opens events.
    for (CLI::App* nested : subcommand->get_subcommands({})) {
      nested->add_flag(
          "-v,--verbose", verbose,
          opens && nested->get_name() == "record" ? verbose_help : "More detail in error messages");
    }
  }

  // Event strings may name uprobe symbols and vendor events: resolved in the analysis layer.
  perfscope::install_elf_symbol_resolver();
#ifdef PERFSCOPE_HAVE_LIBPFM
  perfscope::install_libpfm_event_resolver();
#endif

  // The words after a "--" that ends stat's or record's options are the command, never options:
  // split them off before CLI11 sees them. A "--" after the command's first word stays in it.
  if (auto help = perfscope::cli::help_text_requested(app, words)) {
    std::fwrite(help->data(), 1, help->size(), stdout);
    return 0;
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
  // The option coverage test (tests/cli/perf_options_cli_test.cpp) asks whether each of perf's
  // options parses, without running anything.
  if (std::getenv("PERFSCOPE_PARSE_OPTIONS_ONLY") != nullptr) return 0;
  try {
    // -v names the perf settings (~/.perfconfig) that the commands reading them leave unread.
    if (verbose && (report.selected() || record.selected() || top.selected())) {
      for (const std::string& line : perfscope::cli::perf_config().unused_settings()) {
        fmt::print(stderr, "perfscope: note: {}\n", line);
      }
    }
    if (stat.selected()) return stat.command->run(verbose, std::move(command));
    if (doctor.selected()) return doctor.command->run();
    if (list.selected()) return list.command->run();
    if (record.selected()) return record.command->run(verbose, std::move(command));
    if (script.selected()) return script.command->run();
    if (report.selected()) return report.command->run();
    if (diff.selected()) return diff.command->run();
    if (annotate.selected()) return annotate.command->run();
    if (trace.selected()) return trace.command->run(verbose, std::move(command));
    if (archive.selected()) return archive.command->run();
    if (inject.selected()) return inject.command->run();
    if (top.selected()) return top.command->run();
    if (sched.selected()) return sched.command->run(std::move(command));
    if (push.selected()) return push.command->run();
    if (view.selected()) return view.command->run();
    if (evlist.selected()) return evlist.command->run();
    if (buildid_list.selected()) return buildid_list.command->run();
    if (kallsyms.selected()) return kallsyms.command->run();
    if (version.selected()) return version.command->run();
    if (check.selected()) return check.command->run();
    if (data.selected()) return data.command->run();
    if (config.selected()) return config.command->run();
    if (buildid_cache.selected()) return buildid_cache.command->run(verbose);
    if (probe.selected()) return probe.command->run();
  } catch (const perfscope::EventSpecError& error) {
    fmt::print(stderr, "perfscope: {}\n", perfscope::terminal_safe_lines(error.with_caret()));
    return perfscope::cli::usage_error_status;  // an -e value is an option error, as in perf
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
