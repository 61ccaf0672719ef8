// perfscope trace: options, the line and JSON printers and the summary table; the tracing itself
// (tracepoints, pairing, statistics) is SyscallTracer's (analysis/trace/).
#include "cmd_trace.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "command_line.hpp"
#include "delayed_enable.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/trace/syscall_tracer.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/safe_text.hpp"
#include "stop_signals.hpp"
#include "subcommand_table.hpp"
#include "target_options.hpp"

namespace perfscope::cli {

namespace {

// Calls whose return value is an address.
bool returns_address(std::string_view name) {
  return name == "mmap" || name == "brk" || name == "mremap" || name == "shmat";
}

// Prints each call as it is handed out: a line like perf trace's, or a JSON object per line.
class CallPrinter : public SyscallCallSink {
 public:
  CallPrinter(SyscallTracer& tracer, const TraceOptions& options, std::FILE* out)
      : tracer_(tracer), options_(options), out_(out) {}

  // --max-events reached: the trace ends.
  bool done() const { return options_.max_events != 0 && printed_ >= options_.max_events; }

  void call(const SyscallCall& call) override {
    if (options_.summary_only || done()) return;
    if (options_.failure_only && !call.failed()) return;
    if (options_.min_duration_ms >= 0 &&
        (!call.has_duration() ||
         static_cast<double>(call.duration_ns()) / 1e6 <= options_.min_duration_ms)) {
      return;
    }
    if (options_.json) {
      print_json(call);
    } else {
      print_line(call);
    }
    ++printed_;
  }

 private:
  std::string_view name_of(long number) {
    std::string_view name = tracer_.table().name(number);
    if (!name.empty()) return name;
    unknown_name_ = fmt::format("syscall_{}", number);
    return unknown_name_;
  }

  double relative_ms(std::uint64_t time) const {
    if (options_.absolute_time) return static_cast<double>(time) / 1e6;
    std::uint64_t first = tracer_.first_time();
    return time >= first ? static_cast<double>(time - first) / 1e6 : 0.0;
  }

  void append_return(const SyscallCall& call, std::string_view name) {
    auto sink = std::back_inserter(line_);
    if (!call.exited) {
      line_ += '?';
    } else if (call.failed()) {
      int error = call.error_number();
      fmt::format_to(sink, "-1 {} ({})", errno_label(error), std::strerror(error));
    } else if (returns_address(name)) {
      fmt::format_to(sink, "{:#x}", static_cast<std::uint64_t>(call.ret));
    } else {
      fmt::format_to(sink, "{}", call.ret);
    }
  }

  void print_line(const SyscallCall& call) {
    line_.clear();
    auto sink = std::back_inserter(line_);
    fmt::format_to(sink, "{:10.3f} (", relative_ms(call.time()));
    if (call.has_duration()) {
      fmt::format_to(sink, "{:6.3f} ms", static_cast<double>(call.duration_ns()) / 1e6);
    } else {
      line_ += "         ";
    }
    line_ += "): ";
    if (options_.show_comm) {
      append_terminal_safe(line_, tracer_.comm(call.tid));
      line_ += '/';
    }
    std::string_view name = name_of(call.number);
    fmt::format_to(sink, "{} {}(", call.tid, name);
    if (call.entered) {
      tracer_.signatures().append_arguments(line_, call.number, call.args);
    } else {
      line_ += "[enter not seen]";
    }
    line_ += ") = ";
    append_return(call, name);
    line_ += '\n';
    std::fwrite(line_.data(), 1, line_.size(), out_);
  }

  // Written by hand into the reused line: every text in it is ours (names, numbers, hex) but
  // the command name, which is escaped once per thread.
  void print_json(const SyscallCall& call) {
    line_.clear();
    auto sink = std::back_inserter(line_);
    std::string_view name = name_of(call.number);
    fmt::format_to(sink, R"({{"type":"call","time_ms":{:.6f},"duration_ms":)",
                   relative_ms(call.time()));
    if (call.has_duration()) {
      fmt::format_to(sink, "{:.6f}", static_cast<double>(call.duration_ns()) / 1e6);
    } else {
      line_ += "null";
    }
    fmt::format_to(sink, R"(,"pid":{},"tid":{},"comm":{},"syscall":"{}","number":{},"args":)",
                   call.pid, call.tid, json_comm(call.tid), name, call.number);
    if (call.entered) {
      const SyscallSignature& signature = tracer_.signatures().signature(call.number);
      line_ += '{';
      for (std::size_t i = 0; i < signature.arguments.size(); ++i) {
        fmt::format_to(sink, R"({}"{}":")", i == 0 ? "" : ",", signature.arguments[i].name);
        SyscallSignatures::append_value(line_, signature.arguments[i].kind, call.args[i]);
        line_ += '"';
      }
      line_ += '}';
    } else {
      line_ += "null";
    }
    line_ += R"(,"return":)";
    if (call.exited) {
      fmt::format_to(sink, "{}", call.ret);
    } else {
      line_ += "null";
    }
    if (call.failed()) fmt::format_to(sink, R"(,"error":"{}")", errno_label(call.error_number()));
    line_ += "}\n";
    std::fwrite(line_.data(), 1, line_.size(), out_);
  }

  // The thread's command name as a JSON string (valid UTF-8, escaped), kept per thread: a COMM
  // record (exec) changes it, so the cache is checked against the current name.
  const std::string& json_comm(pid_t tid) {
    std::string_view comm = tracer_.comm(tid);
    JsonName& cached = json_comms_[tid];
    if (!cached.valid || cached.raw != comm) {
      cached.raw.assign(comm);
      cached.json = nlohmann::json(valid_utf8(comm)).dump();
      cached.valid = true;
    }
    return cached.json;
  }

  struct JsonName {
    std::string raw, json;
    bool valid = false;
  };
  std::unordered_map<pid_t, JsonName> json_comms_;
  SyscallTracer& tracer_;
  const TraceOptions& options_;
  std::FILE* out_;
  std::string line_;
  std::string unknown_name_;
  std::uint64_t printed_ = 0;
};

std::string syscall_name(const SyscallTable& table, long number) {
  std::string_view name = table.name(number);
  return name.empty() ? fmt::format("syscall_{}", number) : std::string(name);
}

// --errno-summary adds, under a row with errors, each errno's count (perf's tab-indented lines).
void print_table(const SyscallTable& table,
                 const std::vector<std::pair<long, const SyscallStats*>>& rows, bool errnos,
                 std::FILE* out) {
  fmt::print(out,
             "   syscall            calls  errors  total       min       avg       max       "
             "stddev\n"
             "                                     (msec)    (msec)    (msec)    (msec)        "
             "(%)\n"
             "   --------------- --------  ------ -------- --------- --------- ---------     "
             "------\n");
  for (const auto& [number, stats] : rows) {
    fmt::print(out, "   {:<15} {:>8} {:>6} {:9.3f} {:9.3f} {:9.3f} {:9.3f} {:9.2f}%\n",
               syscall_name(table, number), stats->calls, stats->errors, stats->total_ms(),
               stats->min_ms(), stats->mean_ms(), stats->max_ms(), stats->stddev_percent());
    if (!errnos) continue;
    for (const auto& [error, count] : stats->errnos) {
      fmt::print(out, "\t\t\t\t{}: {}\n", errno_label(error), count);
    }
  }
  fmt::print(out, "\n\n");
}

// perf trace -s's tables, one per thread; with several threads, their sum last (as strace -c -f
// counts: every thread's calls together).
void print_summary_text(SyscallTracer& tracer, bool errnos, std::FILE* out) {
  const SyscallSummary& summary = tracer.summary();
  fmt::print(out, "\n Summary of events:\n\n");
  double all = static_cast<double>(std::max<std::uint64_t>(summary.events(), 1));
  auto threads = summary.threads();
  for (const ThreadSyscallSummary* thread : threads) {
    fmt::print(out, " {} ({}), {} events, {:.1f}%\n\n", terminal_safe(tracer.comm(thread->tid)),
               thread->tid, thread->events, static_cast<double>(thread->events) * 100.0 / all);
    print_table(tracer.table(), thread->by_total(), errnos, out);
  }
  if (threads.size() > 1) {
    fmt::print(out, " all {} threads together: {} events\n\n", threads.size(), summary.events());
    auto totals = summary.totals();
    print_table(tracer.table(), rows_by_total(totals), errnos, out);
  }
}

nlohmann::json summary_row(const SyscallTable& table, long number, const SyscallStats& stats) {
  nlohmann::json errnos = nlohmann::json::object();
  for (const auto& [error, count] : stats.errnos) errnos[errno_label(error)] = count;
  return {{"syscall", syscall_name(table, number)},
          {"number", number},
          {"calls", stats.calls},
          {"errors", stats.errors},
          {"errnos", std::move(errnos)},
          {"total_ms", stats.total_ms()},
          {"min_ms", stats.min_ms()},
          {"avg_ms", stats.mean_ms()},
          {"max_ms", stats.max_ms()},
          {"stddev_percent", stats.stddev_percent()}};
}

// "summary" rows per thread and call, then "total" rows per call (every thread's together).
void print_summary_json(SyscallTracer& tracer, std::FILE* out) {
  for (const ThreadSyscallSummary* thread : tracer.summary().threads()) {
    for (const auto& [number, stats] : thread->by_total()) {
      nlohmann::json row = summary_row(tracer.table(), number, *stats);
      row["type"] = "summary";
      row["pid"] = thread->pid;
      row["tid"] = thread->tid;
      row["comm"] = valid_utf8(tracer.comm(thread->tid));
      fmt::print(out, "{}\n", row.dump());
    }
  }
  auto totals = tracer.summary().totals();
  for (const auto& [number, stats] : rows_by_total(totals)) {
    nlohmann::json row = summary_row(tracer.table(), number, *stats);
    row["type"] = "total";
    fmt::print(out, "{}\n", row.dump());
  }
}

// No target and no command traces every process, as perf trace does.
bool traces_whole_system_by_default(const TraceOptions& options) {
  return options.pid < 0 && options.tid < 0 && !options.all_cpus && options.cpu_list.empty() &&
         options.cgroup.empty() && options.command.empty();
}

Target trace_target(const TraceOptions& options) {
  struct TargetOptions {
    int pid, tid;
    bool all_cpus;
    std::string cpu_list, cgroup;
    std::vector<std::string> command;
  } target{
      options.pid,      options.tid,    options.all_cpus || traces_whole_system_by_default(options),
      options.cpu_list, options.cgroup, options.command};
  return target_from_options(target, "trace");
}

}  // namespace

TraceCommand::TraceCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "trace");
  app_->add_option("-p,--pid", options_.pid, "Trace a running process and all its threads");
  app_->add_option("-t,--tid", options_.tid, "Trace one running thread");
  app_->add_flag("-a,--all-cpus", options_.all_cpus,
                 "Trace every process (system-wide; the default without a target or command)");
  app_->add_option("-C,--cpu", options_.cpu_list, "Trace the processes on these CPUs (e.g. 0-3,8)")
      ->type_name("CPUS");
  app_->add_option("-G,--cgroup", options_.cgroup,
                   "Trace the processes of this cgroup v2 (path under the cgroup2 mount)")
      ->type_name("CGROUP");
  app_->add_option_function<std::string>(
          "-e,--expr",
          [this](const std::string& joined) {
            // Each -e given (CLI11 joins repeated ones with newlines); perf trace's rule: a
            // leading '!' traces every call but the listed ones.
            std::stringstream occurrences(joined);
            for (std::string text; std::getline(occurrences, text);) {
              bool exclude = text.starts_with('!');
              if (!options_.syscalls.empty() && exclude != options_.exclude_syscalls) {
                throw CLI::ValidationError("-e",
                                           "give either calls to trace or, after '!', calls "
                                           "to leave out, not both");
              }
              options_.exclude_syscalls = exclude;
              auto names = split_comma_list(exclude ? text.substr(1) : text);
              try {
                // Checked now, so that a typo is an option error with a suggestion.
                syscall_numbers(SyscallTable::for_this_machine(), names);
              } catch (const std::exception& error) {
                throw CLI::ValidationError("-e", error.what());
              }
              options_.syscalls.insert(options_.syscalls.end(), names.begin(), names.end());
            }
          },
          "Only these system calls (comma-separated names or numbers, e.g. openat,read); "
          "'!futex,poll': all but these")
      ->multi_option_policy(CLI::MultiOptionPolicy::Join)
      ->type_name("SYSCALLS");
  app_->add_option_function<std::string>(
          "--duration",
          [this](const std::string& text) {
            char* end = nullptr;
            double ms = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || !(ms >= 0) || ms > 1e12) {
              throw CLI::ValidationError(
                  "--duration",
                  fmt::format("'{}' is not a number of milliseconds (e.g. 0.5)", text));
            }
            options_.min_duration_ms = ms;
          },
          "Show only calls that took longer than MS milliseconds (as perf trace)")
      ->type_name("MS");
  app_->add_flag("-s,--summary", options_.summary_only,
                 "Only the summary: calls, errors, total/min/avg/max/stddev per call and thread");
  app_->add_flag("-S,--with-summary", options_.with_summary, "Every call, then the summary");
  app_->add_flag("--failure", options_.failure_only, "Show only the calls that failed");
  app_->add_flag("--json", options_.json,
                 "One JSON object per line (calls; summary rows with -s/-S)");
  app_->add_option("-i,--input", options_.input,
                   "Print the calls of a recording (trace record's, or perf trace record's)");
  app_->add_option("-o,--output", options_.output,
                   "Write the trace to this file (default: standard error, as strace)");
  app_->add_option("-m,--mmap-pages", options_.mmap_pages,
                   "Ring buffer data pages per CPU (a power of two; default 1024 for root)");
  app_->add_flag("--no-inherit", options_.no_inherit,
                 "Do not follow threads and children created later");
  app_->add_flag("--comm,!--no-comm", options_.show_comm,
                 "Show the thread's command name next to its id (the default; --no-comm: the id "
                 "alone)");
  app_->add_flag("-T,--time", options_.absolute_time,
                 "Full timestamps (the clock's milliseconds), not times since the first call");
  app_->add_option("--max-events", options_.max_events,
                   "Stop after printing N calls (a command then runs on untraced)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  app_->add_flag("--errno-summary", options_.errno_summary,
                 "With -s or -S: each error's count under its call's row (ENOENT: 2)");
  app_->add_option("--delay", options_.delay_ms,
                   "Start tracing MS milliseconds after the command starts (or after attaching)")
      ->type_name("MS")
      ->check(CLI::NonNegativeNumber);
  app_->add_option_function<std::string>(
          "--filter-pids",
          [this](const std::string& text) {
            for (const std::string& word : split_comma_list(text)) {
              char* end = nullptr;
              long pid = std::strtol(word.c_str(), &end, 10);
              if (word.empty() || *end != '\0' || pid <= 0 || pid > 4194304) {
                throw CLI::ValidationError(
                    "--filter-pids",
                    fmt::format("'{}' is not a process id (e.g. 1234,1235)", word));
              }
              options_.filter_pids.push_back(static_cast<pid_t>(pid));
            }
          },
          "Leave out these threads' calls (comma-separated ids; the kernel filters them)")
      ->type_name("PIDS");
  app_->prefix_command();
  app_->footer(command_rule_help("trace") +
               "\n\nArguments come from the tracepoints' formats; the kernel records pointers, "
               "not the strings they point to, so paths print as addresses.\n\nExamples:\n"
               "  perfscope trace -e openat,read -- cat /etc/hostname\n"
               "  perfscope trace -s -p 1234\n"
               "  perfscope trace -a -s -- sleep 5   (every process, for five seconds)");
}

namespace {

// -o's file; null for standard error (strace's and perf trace's place).
std::unique_ptr<std::FILE, int (*)(std::FILE*)> output_file(const TraceOptions& options) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(nullptr, std::fclose);
  if (options.output.empty()) return file;
  file.reset(std::fopen(options.output.c_str(), "w"));
  if (!file) {
    throw std::runtime_error(
        fmt::format("cannot write {}: {}", options.output, std::strerror(errno)));
  }
  return file;
}

}  // namespace

// trace -i: the calls of a recording, printed as a live trace prints them.
int TraceCommand::replay(const TraceOptions& options) {
  if (!options.command.empty() || options.pid >= 0 || options.tid >= 0 || options.all_cpus ||
      !options.cpu_list.empty() || !options.cgroup.empty()) {
    throw std::invalid_argument(
        "-i replays a recording: it takes no command or target (they were the recording's)");
  }
  PerfDataReader reader = PerfDataReader::open(options.input);
  for (const auto& note : reader.notes()) {
    fmt::print(stderr, "perfscope: {}: {}\n", options.input, note);
  }
  SyscallTraceOptions trace_options;
  trace_options.syscalls = options.syscalls;
  trace_options.exclude = options.exclude_syscalls;
  trace_options.excluded_pids = options.filter_pids;
  SyscallTracer tracer(SyscallTracer::Recorded{}, trace_options);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file = output_file(options);
  std::FILE* out = file ? file.get() : stderr;
  CallPrinter printer(tracer, options, out);
  tracer.replay(reader, printer);
  if (options.summary_only || options.with_summary) {
    if (options.json) {
      print_summary_json(tracer, out);
    } else {
      print_summary_text(tracer, options.errno_summary, out);
    }
  }
  std::fflush(out);
  SyscallTraceStats stats = tracer.stats();
  if (stats.lost != 0 || stats.lost_samples != 0) {
    fmt::print(stderr,
               "perfscope trace: warning: the recording lost {} events ({} records the kernel "
               "could not write, {} lost samples): calls around them may be missing or "
               "unpaired\n",
               stats.lost + stats.lost_samples, stats.lost, stats.lost_samples);
  }
  if (stats.malformed != 0) {
    fmt::print(stderr, "perfscope trace: warning: {} samples did not decode and were skipped\n",
               stats.malformed);
  }
  return 0;
}

int TraceCommand::run(bool verbose, std::vector<std::string> command) {
  // First, as record: a stop signal while the events open ends the trace, not perfscope.
  install_stop_handlers();
  TraceOptions options = options_;
  options.command = app_->remaining();
  options.command.insert(options.command.end(), command.begin(), command.end());
  if (options.mmap_pages != 0 && (options.mmap_pages & (options.mmap_pages - 1)) != 0) {
    throw std::invalid_argument(fmt::format(
        "--mmap-pages {}: the ring buffer needs a power of two pages", options.mmap_pages));
  }
  if (!options.input.empty()) return replay(options);
  Target target = trace_target(options);
  if (traces_whole_system_by_default(options)) {
    fmt::print(stderr,
               "perfscope trace: tracing every process (no target or command given, as "
               "perf trace); Ctrl-C ends it\n");
  }
  SyscallTraceOptions trace_options;
  trace_options.syscalls = options.syscalls;
  trace_options.exclude = options.exclude_syscalls;
  trace_options.data_pages = options.mmap_pages;
  trace_options.inherit = !options.no_inherit;
  trace_options.excluded_pids = options.filter_pids;
  trace_options.enable_at_start = options.delay_ms == 0;
  SyscallTracer tracer(target, trace_options);

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file = output_file(options);
  std::FILE* out = file ? file.get() : stderr;
  tracer.open();
  for (const auto& notice : tracer.notices()) fmt::print(stderr, "perfscope: note: {}\n", notice);
  CallPrinter printer(tracer, options, out);
  tracer.start();
  // After start: once this is printed, every call is traced (tests wait for it).
  if (verbose) fmt::print(stderr, "perfscope: tracing the system calls of {}\n", target.describe());
  // --delay: the events opened disabled; enabled once the delay has passed.
  DelayedEnable delayed(options.delay_ms, [&] { tracer.enable(); });
  while (stop_signal.load() == 0) {
    tracer.poll(printer, delayed.poll_timeout(100));
    if (tracer.target_ended() || printer.done()) break;
  }
  tracer.stop(printer);
  if (stop_signal.load() != 0) tracer.terminate_command();
  int status = target.has_command() ? tracer.wait_for_command() : 0;

  if (options.summary_only || options.with_summary) {
    if (options.json) {
      print_summary_json(tracer, out);
    } else {
      print_summary_text(tracer, options.errno_summary, out);
    }
  }
  SyscallTraceStats stats = tracer.stats();
  // In the JSON stream too: a reader of it alone must know calls are missing.
  if (options.json && (stats.lost != 0 || stats.lost_samples != 0)) {
    fmt::print(out,
               R"({{"type":"lost","lost_records":{},"lost_samples":{}}})"
               "\n",
               stats.lost, stats.lost_samples);
  }
  std::fflush(out);
  if (stats.lost != 0 || stats.lost_samples != 0) {
    fmt::print(stderr,
               "perfscope trace: warning: {} events lost ({} records the kernel could not write, "
               "{} lost samples): calls around them may be missing or unpaired. Fix: larger "
               "buffers (-m {}), or fewer calls (-e)\n",
               stats.lost + stats.lost_samples, stats.lost, stats.lost_samples,
               options.mmap_pages ? options.mmap_pages * 8 : 4096);
  }
  if (stats.malformed != 0) {
    fmt::print(stderr, "perfscope trace: warning: {} samples did not decode and were skipped\n",
               stats.malformed);
  }
  if (stop_signal.load() != 0 && !target.has_command()) return 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 0;
}

}  // namespace perfscope::cli
