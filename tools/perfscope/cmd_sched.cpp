// perfscope sched: timehist, latency and states read a recording of the scheduler tracepoints
// (src/analysis/sched/); sched record makes one through record's path with perf sched record's
// events. Options and printing only.
#include "cmd_sched.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

#include "commands.hpp"
#include "partial_data.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/sched/sched_events.hpp"
#include "perfscope/analysis/sched/sched_latency.hpp"
#include "perfscope/analysis/sched/thread_states.hpp"
#include "perfscope/analysis/sched/timehist.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "raw_trace_dump.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

namespace {

void write_out(std::string& text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
    throw std::runtime_error("writing to standard output failed");
  }
  text.clear();
}

// The tracepoints perf sched record records (builtin-sched.c, __cmd_record): sched_waking where
// the kernel has it (the moment a task becomes runnable), else sched_wakeup, and the schedstat
// events where CONFIG_SCHEDSTATS exposes them.
std::string sched_record_events() {
  std::string events =
      "sched:sched_switch,sched:sched_stat_runtime,sched:sched_process_fork,"
      "sched:sched_wakeup_new,sched:sched_migrate_task";
  auto root = sys::tracefs_root();
  auto exists = [&](const char* name) {
    return root && sys::path_exists(fmt::format("{}/events/sched/{}", *root, name));
  };
  events += exists("sched_waking") ? ",sched:sched_waking" : ",sched:sched_wakeup";
  if (exists("sched_stat_wait")) {
    events += ",sched:sched_stat_wait,sched:sched_stat_sleep,sched:sched_stat_iowait";
  }
  return events;
}

// The trace refers to its reader: both stay where they were made.
struct OpenedTrace {
  std::unique_ptr<PerfDataReader> reader;
  std::unique_ptr<SchedTrace> trace;
};

OpenedTrace open_trace(const std::string& input, bool dump_raw_trace) {
  OpenedTrace opened{std::make_unique<PerfDataReader>(PerfDataReader::open(input)), nullptr};
  if (dump_raw_trace) {
    auto error = print_raw_trace(*opened.reader, {PerfDumpTool::sched, true, input}, stdout).error;
    std::fflush(stdout);
    if (error) print_partial_data_warning(*opened.reader, *error);
  }
  for (const auto& note : opened.reader->notes()) {
    fmt::print(stderr, "perfscope sched: note: {}\n", note);
  }
  opened.trace = std::make_unique<SchedTrace>(*opened.reader);
  for (const auto& note : opened.trace->notes()) {
    fmt::print(stderr, "perfscope sched: note: {}\n", note);
  }
  return opened;
}

// What the walk could not use, on stderr: nothing lost goes unsaid. Returns the exit status (0
// for a damaged file too, as report's and script's: what came before the damage was printed).
int report_walk(const SchedWalkStats& stats, const PerfDataReader& reader) {
  if (stats.lost != 0) {
    fmt::print(stderr,
               "perfscope sched: warning: the kernel lost {} records ({} LOST records): switches "
               "near them are missing and the times around them may be wrong; record again with "
               "a larger buffer (perfscope sched record -m PAGES)\n",
               stats.lost, stats.lost_records);
  }
  if (stats.malformed != 0) {
    fmt::print(stderr,
               "perfscope sched: warning: {} scheduler samples were too short for their format "
               "and were skipped\n",
               stats.malformed);
  }
  if (stats.error) print_partial_data_warning(reader, *stats.error);
  return 0;
}

void add_input_options(CLI::App& app, SchedCommandOptions& options) {
  app.add_option("-i,--input", options.input, "The recording (default perf.data)");
  app.add_flag("-D,--dump-raw-trace", options.dump_raw_trace,
               "perf's raw dump of every record (hex and decoded) before the analysis");
  app.add_flag("-f,--force", options.force,
               "Accepted for perf's scripts: perfscope reads any recording it can open");
}

}  // namespace

SchedCommand::SchedCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "sched");
  app_->require_subcommand(1);
  add_input_options(*app_, options_);
  app_->footer(
      "Subcommands: record, timehist, latency, states (perfscope sched SUBCOMMAND --help); "
      "script is perfscope script, as perf sched script is perf script.\n\n"
      "Examples:\n"
      "  perfscope sched record -- ./myserver --port 8080\n"
      "  perfscope sched timehist -i perf.data");

  record_ = app_->add_subcommand(
      "record", "Record the scheduler tracepoints on every CPU (as perf sched record -a)");
  record_->add_flag("-a,--all-cpus", options_.all_cpus,
                    "Record every CPU (always: the scheduler's view needs them all)");
  record_->add_option("-o,--output", options_.output, "Output file (default perf.data)");
  record_->add_option("-m,--mmap-pages", options_.mmap_pages,
                      "Ring buffer data pages per CPU (a power of two; default 1024, as perf)");
  record_->add_flag("-g", options_.frame_pointer_graph,
                    "Record the call chain of each event (frame pointers)");
  record_->prefix_command();
  record_->footer(
      "Records sched_switch, sched_stat_runtime, sched_process_fork, sched_wakeup_new, "
      "sched_migrate_task and sched_waking (sched_wakeup on kernels without it) on every CPU "
      "while COMMAND runs, or until Ctrl-C without one.\n\n"
      "Examples:\n"
      "  perfscope sched record -- ./myprogram --its-option\n"
      "  perfscope sched record -o sched.data -- sleep 5");

  timehist_ = app_->add_subcommand(
      "timehist", "One row per context switch: wait time, scheduling delay, run time");
  add_input_options(*timehist_, options_);
  timehist_->add_flag("--state", options_.show_state,
                      "Add the state each task left the CPU in (perf's letters)");
  timehist_->footer(
      "Columns and numbers as perf sched timehist (Linux perf 6.1's rules): the task switched "
      "out, its time off the CPU before this run, the part of it after its wake-up, and the "
      "run.\n\n"
      "Examples:\n"
      "  perfscope sched timehist -i perf.data\n"
      "  perfscope sched timehist --state -i sched.data | grep myprogram");

  latency_ = app_->add_subcommand(
      "latency", "Per task: run time, switches, average and maximum scheduling delay");
  add_input_options(*latency_, options_);
  latency_->add_option("-s,--sort", options_.sort,
                       "Sort keys, most significant first: avg, max, switch, runtime, pid "
                       "(default: avg, max, switch, runtime)");
  latency_->add_flag("-p,--pids", options_.per_thread, "One row per thread, not per name");
  latency_->add_flag("--waking", options_.count_waking,
                     "Measure waits from sched_waking too (newer perf's rule; perf 6.1 counts "
                     "only sched_wakeup and sched_wakeup_new)");
  latency_->footer(
      "The table of perf sched latency (Linux perf 6.1's rules).\n\n"
      "Examples:\n"
      "  perfscope sched latency -i perf.data\n"
      "  perfscope sched latency -p -s max -i sched.data");

  states_ = app_->add_subcommand(
      "states",
      "Per thread: running, runnable (waiting), sleeping, blocked (D) share of wall time");
  add_input_options(*states_, options_);
  states_->footer(
      "Each thread is followed from its first event (its wake-up or first switch) to its exit or "
      "the end of the recording; the states add up to that wall time. A preempted task is "
      "runnable; sleeping includes idle kernel threads, parked and stopped tasks. Where the "
      "recording lacks a switch to a thread (it is switched out twice in a row), its "
      "sched_stat_runtime events say when it went back on a CPU; without one the time between is "
      "unknown: an unknown column shows it, and a note counts the missing switches.\n\n"
      "Examples:\n"
      "  perfscope sched states -i perf.data\n"
      "  perfscope sched states -i sched.data | sort -k2 -n -r | head");
}

int SchedCommand::run(std::vector<std::string> command) {
  if (record_->parsed()) return record_sched(std::move(command));
  if (timehist_->parsed()) return run_timehist();
  if (latency_->parsed()) return run_latency();
  return run_states();
}

int SchedCommand::record_sched(std::vector<std::string> after_dashes) {
  std::vector<std::string> command = record_->remaining();
  // CLI11 leaves an unknown option before the command for the command: it is an option error.
  if (!command.empty() && command.front().size() > 1 && command.front()[0] == '-') {
    fmt::print(stderr,
               "perfscope sched record: unknown option {}; run 'perfscope sched record --help' "
               "for the options\n",
               command.front());
    return usage_error_status;
  }
  RecordOptions options;
  options.events = sched_record_events();
  // perf sched record records every CPU: a task's switches, wake-ups and the tasks it waits
  // for run on every CPU, and another task's switch-out is this one's switch-in.
  options.all_cpus = true;
  options.sample_cpu = true;
  options.output = options_.output;
  options.mmap_pages = options_.mmap_pages;
  options.frame_pointer_graph = options_.frame_pointer_graph;
  command.insert(command.end(), after_dashes.begin(), after_dashes.end());
  options.command = std::move(command);
  return cli::run_record(std::move(options));
}

int SchedCommand::run_timehist() {
  OpenedTrace opened = open_trace(options_.input, options_.dump_raw_trace);
  TimehistText text(options_.show_state);
  std::string out;
  text.header(out);
  constexpr std::size_t flush_at = 1 << 20;
  TimehistAnalyzer analyzer(
      opened.trace->tasks(), opened.trace->cpus_online(),
      [&](const TimehistRow& row) {
        text.row(out, row);
        if (out.size() >= flush_at) write_out(out);
      },
      [&](std::uint64_t lost, std::uint32_t cpu, std::uint64_t time) {
        text.lost(out, lost, cpu, time);
      });
  SchedInterest interest;
  interest.migrations = interest.runtime = interest.names = false;
  SchedWalkStats stats = opened.trace->walk(analyzer, interest);
  write_out(out);
  std::fflush(stdout);
  return report_walk(stats, *opened.reader);
}

int SchedCommand::run_latency() {
  LatencyOptions options;
  options.sort_keys = parse_latency_sort_keys(options_.sort);
  options.per_thread = options_.per_thread;
  options.count_waking = options_.count_waking;
  OpenedTrace opened = open_trace(options_.input, options_.dump_raw_trace);
  LatencyAnalyzer analyzer(opened.trace->tasks(), options, opened.trace->has_event("sched_waking"));
  SchedInterest interest;
  interest.migrations = interest.names = false;
  SchedWalkStats stats = opened.trace->walk(analyzer, interest);
  std::string out = render_latency(analyzer.finish(options, stats));
  write_out(out);
  std::fflush(stdout);
  return report_walk(stats, *opened.reader);
}

int SchedCommand::run_states() {
  OpenedTrace opened = open_trace(options_.input, options_.dump_raw_trace);
  ThreadStateAnalyzer analyzer(opened.trace->tasks());
  SchedInterest interest;
  interest.migrations = false;
  SchedWalkStats stats = opened.trace->walk(analyzer, interest);
  std::vector<ThreadStateRow> rows = analyzer.finish();
  std::string out = render_thread_states(rows);
  write_out(out);
  std::fflush(stdout);
  std::uint64_t missing = 0, placed = 0, threads = 0, unknown_ns = 0;
  for (const auto& row : rows) {
    missing += row.missing_switches();
    placed += row.placed_switch_ins;
    threads += row.missing_switches() != 0 ? 1 : 0;
    unknown_ns += row.unknown;
  }
  if (missing != 0) {
    fmt::print(stderr,
               "perfscope sched: note: {} switch{} of {} thread{} {} missing from the recording "
               "({}); {} placed by the threads' sched_stat_runtime events, the other {} leave "
               "{:.3f} ms in the unknown column\n",
               missing, missing == 1 ? "" : "es", threads, threads == 1 ? "" : "s",
               missing == 1 ? "is" : "are",
               stats.lost != 0 ? "the kernel lost records"
                               : "a thread switched out, or in, twice in a row; no record lost",
               placed, missing - placed, static_cast<double>(unknown_ns) / 1e6);
  }
  return report_walk(stats, *opened.reader);
}

}  // namespace perfscope::cli
