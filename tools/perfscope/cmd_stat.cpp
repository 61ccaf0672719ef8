// perfscope stat: count events for a command, a process, threads, CPUs or a cgroup.
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include "command_line.hpp"
#include "commands.hpp"
#include "control_channel.hpp"
#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/engine/count_aggregation.hpp"
#include "perfscope/engine/counting_session.hpp"
#include "perfscope/engine/detailed_events.hpp"
#include "perfscope/engine/pmu_capacity.hpp"
#include "perfscope/sys/child_process.hpp"
#include "perfscope/sys/exit_watch.hpp"
#include "perfscope/sys/perf_syscalls.hpp"
#include "record_perf_options.hpp"
#include "stat_output.hpp"
#include "stat_record_file.hpp"
#include "stop_signals.hpp"
#include "subcommand_table.hpp"
#include "target_options.hpp"

namespace perfscope::cli {

namespace {

// --no-scale: each count as the PMU counted it while the event was on it, not extrapolated to
// the whole run (the share it ran is still printed).
void as_measured(std::vector<EventCount>& counts) {
  for (EventCount& count : counts)
    count.scaled = perfscope::as_measured(count.reading, count.scaled);
}

// --interval-clear: perf's CONSOLE_CLEAR (cursor home, erase the screen), before the interval's
// header.
void clear_screen(std::FILE* out) { std::fputs("\033[H\033[2J\n", out); }

constexpr std::string_view default_events =
    "task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,branches,"
    "branch-misses";

// SIGINT, SIGTERM and SIGHUP end a measurement and print what was counted so far. SIGINT with
// a command: the terminal sends it to the command too (same process group), and perf, like us,
// forwards nothing and waits for the command to exit. SIGTERM and SIGHUP sent to perfscope alone
// end the count at once; the command is then ended with SIGTERM (as when perf exits, perf's
// atexit handler does) rather than left running unmeasured.

// A signal that ends the count without waiting for the command.
bool ends_at_once(int signal, bool has_command) {
  return signal != 0 && (!has_command || signal != SIGINT);
}

// Exits as perf does after a stop signal: by that signal (status 128 + its number).
[[noreturn]] void exit_by_signal(int signal) {
  std::fflush(nullptr);
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(signal, &action, nullptr);
  ::raise(signal);
  std::_Exit(128 + signal);
}

Aggregation aggregation_from(const StatOptions& options) {
  std::vector<std::pair<bool, Aggregation>> chosen = {
      {options.no_aggr, Aggregation::cpu},   {options.per_core, Aggregation::core},
      {options.per_die, Aggregation::die},   {options.per_socket, Aggregation::socket},
      {options.per_node, Aggregation::node}, {options.per_thread, Aggregation::thread}};
  Aggregation mode = Aggregation::global;
  int count = 0;
  for (auto [set, which] : chosen) {
    if (!set) continue;
    mode = which;
    ++count;
  }
  if (count > 1) {
    throw std::invalid_argument(
        "choose one of -A/--no-aggr, --per-core, --per-die, --per-socket, --per-node and "
        "--per-thread");
  }
  return mode;
}

double now_ns() {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count());
}

}  // namespace

StatCommand::StatCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "stat");
  add_event_list_option(*app_, options_.events,
                        "Events: comma list, {a,b} groups, :u/:k modifiers (default: perf's set)")
      ->type_name("LIST")
      ->check([](const std::string& list) -> std::string {
        // perf refuses an empty list too ("event syntax error"), rather than counting its set.
        return list.find_first_not_of(" ,") == std::string::npos
                   ? "no event given: name one or more (perfscope list shows them), or leave "
                     "out -e for perf's default set"
                   : "";
      });
  app_->add_option("--filter",
                   "A tracepoint filter for the events of the -e before it (ftrace's syntax: "
                   "'id == 39', 'common_pid != 1'): only the hits it keeps count")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("FILTER");
  app_->add_option("-p,--pid", options_.pid, "Count a running process (all its threads)");
  app_->add_option("-t,--tid", options_.tid, "Count one thread");
  app_->add_flag("-a,--all-cpus", options_.all_cpus, "Count every process on every CPU");
  app_->add_option("-C,--cpu", options_.cpu_list, "Count on these CPUs only (e.g. 0-3,8)");
  app_->add_option("--control", options_.control,
                   "Commands from a FIFO or descriptor while counting: enable, disable, ping, "
                   "stop (fifo:CTL[,ACK] or fd:CTL[,ACK]; each answered ack on ACK), as perf; "
                   "with -D -1 the counters wait for 'enable'")
      ->type_name("fifo:CTL[,ACK]")
      ->check(control_spec_error, "");
  app_->add_option("-D,--delay", options_.delay_ms,
                   "Start counting this many ms after the command starts (-1: never, the "
                   "counters stay disabled), as perf stat -D")
      ->check(CLI::Range(-1, 24 * 3600 * 1000))
      ->type_name("MS");
  app_->add_flag("-n,--null", options_.null_run,
                 "Count nothing: the command's elapsed time alone (perf's null run)");
  app_->add_flag("-g,--group", options_.group,
                 "The events in one group, counted together (as {EVENTS})");
  app_->add_option("-G,--cgroup", options_.cgroup,
                   "Count the processes of this cgroup v2 (path under the cgroup2 mount)");
  app_->add_option("-I,--interval-print", options_.interval_ms,
                   "Print the counts of every interval of this many milliseconds")
      ->check(CLI::Range(1, 3600 * 1000));
  app_->add_option("-r,--repeat", options_.repeat, "Run the command N times: mean and stddev")
      ->check(CLI::Range(1, 100000));
  app_->add_flag("--json", options_.json,
                 "perfscope's JSON: one document (JSON lines with -I), every reading and run");
  app_->add_flag("-j,--json-output", options_.perf_json,
                 "perf stat -j's JSON lines: one object an event (and an interval, an aggregate)");
  app_->add_flag(
      "--csv", options_.csv,
      "CSV output with perfscope's columns and a header row (-x SEP sets its separator)");
  app_->add_option("-x,--field-separator", options_.field_separator,
                   "perf stat -x's CSV layout with this separator: value, unit, event, run time, "
                   "percentage running, metric value, metric unit; no header")
      ->type_name("SEP");
  app_->add_option("-o,--output", options_.output, "Write the counts to FILE instead of stderr");
  app_->add_flag("-i,--no-inherit", options_.no_inherit,
                 "Do not count threads and children created after start");
  app_->add_flag("-A,--no-aggr", options_.no_aggr, "Counts per CPU (with -a or -C)");
  app_->add_flag("--per-core", options_.per_core, "Counts per physical core (with -a or -C)");
  app_->add_flag("--per-die", options_.per_die, "Counts per die (with -a or -C)");
  app_->add_flag("--per-socket", options_.per_socket, "Counts per socket (with -a or -C)");
  app_->add_flag("--per-node", options_.per_node, "Counts per NUMA node (with -a or -C)");
  app_->add_flag("--per-thread", options_.per_thread,
                 "Counts per thread (with -p, -t or a command)");
  app_->add_option("--interval-count", options_.interval_count,
                   "With -I: stop after this many intervals")
      ->check(CLI::PositiveNumber);
  app_->add_option("--timeout", options_.timeout_ms,
                   "Stop after this many milliseconds (the command is ended), and print the counts")
      ->check(CLI::PositiveNumber);
  app_->add_flag("--all-user", options_.all_user, "Count user space only, every event (as :u)");
  app_->add_flag("--all-kernel", options_.all_kernel, "Count the kernel only, every event (as :k)");
  app_->add_flag("-q,--quiet", options_.quiet, "Print no counts (the exit status remains)");
  app_->add_flag("--append", options_.append, "With -o: append to the file");
  app_->add_flag("--summary", options_.summary,
                 "With -I and -x: the totals after the intervals, each row led by 'summary'");
  app_->add_flag("--no-csv-summary", options_.no_csv_summary,
                 "With --summary: the totals' rows without the 'summary' field");
  app_->add_option("--log-fd", options_.log_fd,
                   "Write the counts to this open file descriptor instead of stderr")
      ->check(CLI::NonNegativeNumber);
  app_->add_option("--pre", options_.pre, "Run this shell command before each run (with -r)");
  app_->add_option("--post", options_.post, "Run this shell command after each run (with -r)");
  app_->add_flag("--sync", options_.sync, "Call sync() before each run");
  app_->add_flag("--table", options_.run_table,
                 "With -r: each run's elapsed time and its distance from the mean, as perf's "
                 "table of individual measurements");
  app_->add_flag("--interval-clear", options_.interval_clear,
                 "With -I: clear the screen before each interval (a live view on a terminal)");
  app_->add_flag("-c,--scale,!--no-scale", options_.scale,
                 "Scale multiplexed counts to the whole run (the default); --no-scale prints "
                 "what the PMU counted while the event was on it");
  app_->add_flag("-d,--detailed", options_.detailed,
                 "Add perf's detailed cache events (-dd and -ddd add more)");
  // `stat record` and `stat report` (main rewrites them into these).
  app_->add_option("--record-to", options_.record_to, "")->group("");
  app_->add_option("--report-from", options_.report_from, "")->group("");
  // Everything from the first non-option word (or after --) is the command, as with perf.
  app_->prefix_command();
  app_->footer(command_rule_help("stat") +
               "\n\nExamples:\n"
               "  perfscope stat -e task-clock,page-faults -- ls /usr\n"
               "  perfscope stat -a -I 1000 -- sleep 3");
}

int StatCommand::run(bool verbose, std::vector<std::string> command) {
  // First: a stop signal that comes while the events open still gets the totals printed.
  install_stop_handlers();
  auto& options = options_;
  options.command = app_->remaining();
  options.command.insert(options.command.end(), command.begin(), command.end());
  const bool perf_csv = !options.field_separator.empty() && !options.csv;
  std::string separator = options.field_separator.empty() ? "," : options.field_separator;
  if (int(options.json) + int(options.perf_json) + int(options.csv || perf_csv) > 1) {
    throw std::invalid_argument("choose one of --json, -j/--json-output and CSV (--csv, -x)");
  }
  StatFormat format = options.json        ? StatFormat::json
                      : options.perf_json ? StatFormat::perf_json
                      : perf_csv          ? StatFormat::perf_csv
                      : options.csv       ? StatFormat::csv
                                          : StatFormat::text;
  if (!options.report_from.empty()) {
    if (!options.command.empty()) {
      throw std::invalid_argument("stat report prints a recording's counts: it runs no command");
    }
    report_stat_file(options.report_from, stderr, format, separator);
    return 0;
  }
  Target target = target_from_options(options, "stat");
  Aggregation aggregation = aggregation_from(options);
  if (aggregation != Aggregation::global && (options.interval_ms > 0 || options.repeat > 1)) {
    throw std::invalid_argument(
        "-A and --per-* print the counts of one run: drop -I and -r, or the aggregation");
  }
  if (!options.record_to.empty() && (aggregation != Aggregation::global || options.repeat > 1)) {
    throw std::invalid_argument(
        "stat record keeps one run's totals (and -I intervals): -r, -A and --per-* are not "
        "recorded; drop them");
  }
  if (options.repeat > 1 && !target.has_command()) {
    throw std::invalid_argument("-r repeats a command: give one after --");
  }
  std::string event_list(options.events.empty() ? default_events : options.events);
  std::string detailed = detailed_event_list(options.detailed);
  if (!detailed.empty()) event_list += "," + detailed;
  // -g: one group of every event, as perf's --group makes the list a group.
  if (options.group && !options.null_run) event_list = "{" + event_list + "}";
  auto groups = parse_event_list(event_list);
  // --filter: on the tracepoints of the -e before it, as record's (the user's events come first
  // in the list: -d's are added after them).
  apply_event_filters(groups, event_filters_in_order(*app_, [](const std::string& list) {
                        std::size_t events = 0;
                        for (const auto& group : parse_event_list(list)) {
                          events += group.events.size();
                        }
                        return events;
                      }));
  if (options.null_run) groups.clear();
  if (options.all_user && options.all_kernel) {
    throw std::invalid_argument("--all-user and --all-kernel exclude each other: give one");
  }
  for (auto& group : groups) {
    for (auto& spec : group.events) {
      if (options.all_user) spec.attr.count_user_only();
      if (options.all_kernel) spec.attr.count_kernel_only();
    }
  }
  if (options.interval_count > 0 && options.interval_ms <= 0) {
    throw std::invalid_argument("--interval-count counts -I intervals: give -I MS too");
  }
  if (!options.output.empty() && options.log_fd >= 0) {
    throw std::invalid_argument("-o and --log-fd exclude each other: give one");
  }
  // Before counting, so that the warning is not lost after a long run's output.
  for (const std::string& warning : group_capacity_warnings(groups)) {
    fmt::print(stderr, "perfscope: warning: {}\n", warning);
  }

  std::FILE* out = stderr;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> output_file(nullptr, &std::fclose);
  if (!options.output.empty()) {
    // 0600 like the recordings: counts name the commands and processes measured.
    int fd = ::open(options.output.c_str(),
                    O_WRONLY | O_CREAT | O_CLOEXEC | (options.append ? O_APPEND : O_TRUNC), 0600);
    if (fd >= 0) output_file.reset(::fdopen(fd, "w"));
    if (fd >= 0 && !output_file) ::close(fd);
    if (!output_file) {
      throw std::runtime_error(
          fmt::format("cannot write '{}': {}", options.output, std::strerror(errno)));
    }
    out = output_file.get();
  } else if (options.log_fd >= 0) {
    int fd = ::fcntl(options.log_fd, F_DUPFD_CLOEXEC, 3);
    if (fd >= 0) output_file.reset(::fdopen(fd, "a"));
    if (fd >= 0 && !output_file) ::close(fd);
    if (!output_file) {
      throw std::invalid_argument(fmt::format("--log-fd {}: not an open file descriptor ({})",
                                              options.log_fd, std::strerror(errno)));
    }
    out = output_file.get();
  }
  // Every format goes to stderr unless -o is given, as perf stat does: the measured command
  // owns stdout, and JSON or CSV mixed into its output would be unusable.

  CountingOptions counting;
  counting.inherit = !options.no_inherit;
  counting.enable_at_start = options.delay_ms == 0;

  StatResult result;
  result.target = target.describe();
  // perf quotes a CPU-wide target ('system wide', 'CPU(s) 0-3'); a cgroup is counted system
  // wide there (perf stat -a -G).
  if (target.kind() == Target::Kind::cgroup) {
    result.header_target = "'system wide'";
  } else if (target.kind() == Target::Kind::cpus) {
    result.header_target = "'" + result.target + "'";
  }
  result.command = options.command;
  result.command_is_target = target.kind() == Target::Kind::command;
  result.runs = options.repeat;
  result.run_table = options.run_table && options.repeat > 1;
  std::vector<RunningStatistics> per_event;
  std::unique_ptr<StatRecordWriter> recording;
  if (!options.record_to.empty()) {
    recording = std::make_unique<StatRecordWriter>(options.record_to, groups, options.interval_ms);
  }

  auto run_shell = [](const char* option, const std::string& shell_command) {
    if (shell_command.empty()) return;
    std::fflush(nullptr);
    int status = std::system(shell_command.c_str());
    if (status != 0) {
      throw std::runtime_error(fmt::format("{} '{}' failed (status {}): the runs stop", option,
                                           shell_command, sys::exit_status_from_wait(status)));
    }
  };
  for (int run = 0; run < options.repeat && (run == 0 || stop_signal.load() == 0); ++run) {
    run_shell("--pre", options.pre);
    if (options.sync) ::sync();
    CountingSession session(groups, target, counting);
    session.open();
    if (run == 0) {
      for (const auto& notice : session.notices())
        fmt::print(stderr, "perfscope: note: {}\n", notice);
      if (!detailed.empty()) {
        // Once, rather than a reason per line: on a machine without a hardware PMU none of
        // them opens, for the same reason.
        std::vector<std::string> missing;
        std::size_t asked = 0;
        for (const auto& group : parse_event_list(detailed)) {
          for (const auto& spec : group.events) {
            ++asked;
            for (const auto& count : session.events()) {
              if (!count.supported && count.name == spec.text) missing.push_back(count.name);
            }
          }
        }
        if (!missing.empty()) {
          fmt::print(stderr,
                     "perfscope: note: -{}: {} of the {} detailed events cannot be counted "
                     "here (no PMU of this machine has them; `perfscope list` shows what it "
                     "counts): {}\n",
                     std::string(static_cast<std::size_t>(std::min(options.detailed, 3)), 'd'),
                     missing.size(), asked, fmt::join(missing, ", "));
        }
      }
    }
    if (recording) {
      std::string comm =
          target.has_command() && !options.command.empty()
              ? options.command.front().substr(options.command.front().rfind('/') + 1)
              : std::string();
      recording->begin(target.has_command() ? session.command_pid() : -1, comm);
    }
    std::unique_ptr<CountAggregator> aggregator;
    if (aggregation != Aggregation::global) {
      aggregator = std::make_unique<CountAggregator>(aggregation, session);
    }
    double started = now_ns();
    session.start();
    // After start: once this is printed, the counters count (tests wait for it).
    if (verbose && run == 0) {
      fmt::print(stderr, "perfscope: {} event fds on {} unit(s) of {}\n", session.open_fd_count(),
                 session.unit_count(), target.describe());
    }

    // The command's pidfd (its zombie waits for our waitpid), or the attached target's watch.
    int watch_fd = target.has_command() ? sys::open_pidfd(session.command_pid()) : -1;
    sys::ExitWatch target_watch = target.exit_watch();
    // -D: perf's two lines around the delay, and the elapsed time counted from the enable.
    if (options.delay_ms != 0) {
      fmt::print(stderr, "Events disabled\n");
      if (options.delay_ms > 0) {
        if (watch_fd >= 0) {
          sys::wait_readable(watch_fd, options.delay_ms);
        } else if (!target.has_command()) {
          target_watch.wait(options.delay_ms);
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(options.delay_ms));
        }
        session.enable();
        fmt::print(stderr, "Events enabled\n");
        started = now_ns();
      }
    }
    // --control: commands while the counters run; 'stop' ends the count as SIGTERM does (the
    // signal to this thread ends its wait below).
    std::unique_ptr<ControlChannel> control;
    if (!options.control.empty()) {
      const pthread_t counting_thread = ::pthread_self();
      control = std::make_unique<ControlChannel>(
          options.control,
          ControlHandlers{[&session] { session.enable(); }, [&session] { session.stop(); },
                          [counting_thread] { ::pthread_kill(counting_thread, SIGTERM); },
                          options.quiet});
      control->start();
    }
    // Intervals count from zero at start, so the first one includes the command's start-up.
    std::vector<EventCount> previous = session.read();
    for (auto& count : previous) count.reading = Reading{};
    double previous_at = started;
    bool first_interval = true;
    int intervals_printed = 0;
    bool ended_early = false;  // --interval-count or --timeout reached
    auto print_interval = [&] {
      ++intervals_printed;
      const auto& now_counts = session.read();
      double at = now_ns();
      if (recording) {
        recording->round(now_counts, false, static_cast<std::uint64_t>(at - started));
      }
      std::vector<EventCount> delta = now_counts;
      for (std::size_t i = 0; i < delta.size(); ++i) {
        delta[i].reading = now_counts[i].reading.since(previous[i].reading);
        delta[i].scaled = scale_delta(delta[i].reading, now_counts[i].reading);
      }
      if (!options.scale) as_measured(delta);
      if (!options.quiet && options.interval_clear) clear_screen(out);
      if (!options.quiet) {
        print_stat_interval(out, format, (at - started) / 1e9, delta, at - previous_at,
                            first_interval || options.interval_clear, separator);
      }
      first_interval = false;
      previous = now_counts;
      previous_at = at;
    };
    // Without a pidfd (kernels before 5.3) nothing would wake the wait below: go straight to
    // waitpid (intervals are then not printed while the command runs).
    bool can_watch = watch_fd >= 0 || !target.has_command();
    // Intervals end on a fixed schedule, start + k * interval: a late wake-up shortens the next
    // wait instead of pushing every later interval back.
    const double interval_ns = options.interval_ms * 1e6;
    double next_interval_at = started + interval_ns;
    const double deadline = options.timeout_ms > 0 ? started + options.timeout_ms * 1e6 : 0;
    for (; can_watch;) {
      int timeout = -1;
      auto wait_until = [&](double at) {
        double left_ns = at - now_ns();
        int ms = left_ns <= 0 ? 0 : static_cast<int>(std::ceil(left_ns / 1e6));
        timeout = timeout < 0 ? ms : std::min(timeout, ms);
      };
      if (options.interval_ms > 0) wait_until(next_interval_at);
      if (deadline > 0) wait_until(deadline);
      if (deadline > 0 && now_ns() >= deadline) {
        ended_early = true;
        break;
      }
      if (ends_at_once(stop_signal.load(), target.has_command())) break;
      int ready =
          target.has_command() ? sys::wait_readable(watch_fd, timeout) : target_watch.wait(timeout);
      if (ready == 1) break;  // the command or the process exited
      if (ready == -EINTR && !target.has_command()) break;
      if (ready < 0 && ready != -EINTR) {
        if (target.has_command()) break;  // no pidfd: fall back to waitpid below
        throw std::runtime_error(fmt::format("poll failed: {}", std::strerror(-ready)));
      }
      if (ready == 0 && options.interval_ms > 0 && now_ns() >= next_interval_at) {
        print_interval();
        if (options.interval_count > 0 && intervals_printed >= options.interval_count) {
          ended_early = true;
          break;
        }
        // After a stall of more than an interval, the next one ends at the schedule's next
        // point still ahead (the printed time says how long this one was).
        while (next_interval_at <= now_ns()) next_interval_at += interval_ns;
      }
    }
    if (watch_fd >= 0) sys::close_fd(watch_fd);
    if (ends_at_once(stop_signal.load(), target.has_command()) || ended_early) {
      session.stop();  // the command is ended when the session goes
    } else if (target.has_command()) {
      int status = session.wait_for_command();
      result.exit_status = sys::exit_status_from_wait(status);
      result.has_exit_status = true;
      result.user_seconds += session.command_user_seconds();
      result.system_seconds += session.command_system_seconds();
    } else {
      session.stop();
    }
    // The last, partial interval, read once the counters stopped: without it the intervals would
    // not add up to the totals (and JSON lines and CSV, which print no totals, would lose the end
    // of the run); read before the stop, the totals would hold what ran in between.
    if (options.interval_ms > 0 && !(options.interval_count > 0 && ended_early)) print_interval();
    double elapsed = now_ns() - started;
    result.counts = session.read();
    if (!options.scale) as_measured(result.counts);
    if (recording) {
      // With -I the intervals are the record, as perf's (its files have no final round).
      if (options.interval_ms == 0) {
        recording->round(result.counts, true, static_cast<std::uint64_t>(elapsed));
      }
      recording->finish();
    }
    if (aggregator) {
      result.aggregation = aggregation;
      result.aggregates = aggregator->read(session);
    }
    result.elapsed_ns.add(elapsed);
    result.elapsed_values_ns.push_back(elapsed);
    per_event.resize(result.counts.size());
    result.per_event_values.resize(result.counts.size());
    for (std::size_t i = 0; i < result.counts.size(); ++i) {
      if (result.counts[i].scaled.status != CountStatus::not_counted) {
        per_event[i].add(result.counts[i].scaled.value);
        result.per_event_values[i].push_back(result.counts[i].scaled.value);
      }
    }
    result.runs = run + 1;
    run_shell("--post", options.post);
  }
  if (result.runs > 1) {
    result.user_seconds /= result.runs;
    result.system_seconds /= result.runs;
  }
  result.per_event = std::move(per_event);
  const bool csv_summary = options.summary && format == StatFormat::perf_csv;
  if (csv_summary && options.interval_ms > 0 && !options.no_csv_summary) {
    result.csv_row_label = "summary";
  }
  if (!options.quiet && (options.interval_ms == 0 || format == StatFormat::text || csv_summary)) {
    print_stat(out, format, result, separator);
  }
  // A full disk shows only now, when the buffered counts reach it: never exit 0 with them lost.
  if (output_file && (std::fflush(out) != 0 || std::ferror(out))) {
    throw std::runtime_error(
        fmt::format("cannot write '{}': {}", options.output, std::strerror(errno)));
  }
  if (int signal = stop_signal.load();
      ends_at_once(signal, target.has_command()) || (signal == SIGINT && !result.has_exit_status)) {
    output_file.reset();
    exit_by_signal(signal);
  }
  return result.has_exit_status ? result.exit_status : 0;
}

}  // namespace perfscope::cli
