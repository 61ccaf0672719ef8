// perfscope top: samples a target live (system-wide by default, as perf top) and shows where
// the CPU goes, refreshed every -d seconds; the model is LiveProfile (analysis/live), the screen
// top_screen.cpp. --stdio/--batch N print text snapshots instead.
#include "cmd_top.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "command_line.hpp"
#include "perf_config.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/live/live_profile.hpp"
#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/engine/sampling_session.hpp"
#include "perfscope/sys/child_process.hpp"
#include "perfscope/sys/exit_watch.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "perfscope/sys/perf_syscalls.hpp"
#include "record_perf_options.hpp"
#include "stop_signals.hpp"
#include "subcommand_table.hpp"
#include "target_options.hpp"
#include "top_screen.hpp"

namespace perfscope::cli {

namespace {

namespace sf = abi::sample_format;
namespace flag = abi::attr_flag;
using Clock = std::chrono::steady_clock;

// No SA_RESTART: the wait for samples returns at once. Installed before the screen starts, so
// ncurses keeps them and the screen's destructor restores the terminal on the way out.

// What a run samples and how it is described in the header.
struct TopRun {
  std::unique_ptr<RecordingSession> session;
  std::string event_text;  // "cpu-clock 4000 Hz"
  std::string target_text;
  std::vector<std::string> notes;
  bool user_only = false;
  sys::ExitWatch target_watch;  // of an attached process or thread
};

TopRun open_session(const TopOptions& options, LiveProfile& profile) {
  TopOptions target_options = options;
  bool any_target = options.pid >= 0 || options.tid >= 0 || options.all_cpus ||
                    !options.cpu_list.empty() || !options.cgroup.empty();
  if (!any_target) target_options.all_cpus = true;  // perf top's default: the whole machine
  Target target = target_from_options(target_options, "top");

  TopRun run;
  std::uint64_t frequency = options.frequency;
  if (options.period == 0) {
    auto max_rate = sys::read_sysctl("perf_event_max_sample_rate");
    if (max_rate && *max_rate > 0 && frequency > static_cast<std::uint64_t>(*max_rate)) {
      run.notes.push_back(
          fmt::format("-F {} is above kernel.perf_event_max_sample_rate: sampling at {} Hz",
                      frequency, *max_rate));
      frequency = static_cast<std::uint64_t>(*max_rate);
    }
  }
  std::string events = options.events;
  if (events.empty()) {
    events = "cycles";
    if (!can_sample_cpu_cycles(frequency)) {
      events = "cpu-clock";
      run.notes.emplace_back("no hardware PMU samples cycles here: sampling cpu-clock");
    }
  }
  auto groups = parse_event_list(events);
  for (auto& group : groups) {
    for (auto& spec : group.events) {
      EventAttr& attr = spec.attr;
      std::uint64_t sample_type = attr.raw().sample_type | sf::ip | sf::tid | sf::time | sf::period;
      if (options.call_graph) sample_type |= sf::callchain;
      if (options.period > 0) {
        attr.set_sample_period(options.period);
      } else if (attr.raw().sample_period_or_freq == 0) {
        if (attr.type() == static_cast<std::uint32_t>(abi::EventType::tracepoint)) {
          attr.set_sample_period(1);
        } else {
          attr.set_sample_freq(frequency);
        }
      }
      attr.set_sample_type(sample_type);
    }
  }
  SamplingOptions sampling;
  sampling.data_pages = options.mmap_pages;
  run.session = std::make_unique<RecordingSession>(std::move(groups), target, sampling);
  RecordingSession& session = *run.session;
  session.check_fit([](const SampleMisfit& misfit) {
    return fmt::format("Fix: perfscope top -m {} (a larger ring buffer).", misfit.pages_advised);
  });
  session.open();
  const SamplingSession& opened = session.sampling();
  for (std::size_t i = 0; i < opened.events().size(); ++i) {
    EventAttr attr = opened.opened_attr(i);
    if (!run.event_text.empty()) run.event_text += ", ";
    run.event_text +=
        attr.has(flag::freq)
            ? fmt::format("{} {} Hz", opened.events()[i].name, attr.raw().sample_period_or_freq)
            : fmt::format("{} every {}", opened.events()[i].name, attr.raw().sample_period_or_freq);
    run.user_only |= attr.has(flag::exclude_kernel);
  }
  switch (target.kind()) {
    case Target::Kind::cpus:
      run.target_text = target.cpu_list().empty()
                            ? fmt::format("all, {} CPUs", online_cpus().size())
                            : fmt::format("CPUs {}", format_cpu_list(target.cpu_list()));
      break;
    case Target::Kind::process: run.target_text = fmt::format("pid {}", target.pid()); break;
    case Target::Kind::thread: run.target_text = fmt::format("tid {}", target.pid()); break;
    default: run.target_text = target.describe(); break;
  }
  // kallsyms is read on a thread meanwhile: the first kernel sample would wait for it.
  if (!run.user_only) profile.resolver().symbolizer().prefetch_kernel();
  // Processes that exist now are named from /proc; the rest from their records.
  session.synthesize(profile);
  session.start();
  run.target_watch = target.exit_watch();
  return run;
}

std::vector<std::string> header_lines(const TopRun& run, const LiveProfile& profile, double seconds,
                                      bool target_gone) {
  LiveTotals totals = profile.totals();
  RecordingStats stats = run.session->stats();
  std::uint64_t lost = stats.totals.lost + stats.totals.lost_samples + totals.undecodable;
  double rate = seconds > 0 ? static_cast<double>(totals.interval_samples) / seconds : 0;
  double kernel = totals.interval_samples != 0
                      ? 100.0 * static_cast<double>(totals.interval_kernel_samples) /
                            static_cast<double>(totals.interval_samples)
                      : 0;
  std::vector<std::string> lines;
  lines.push_back(fmt::format(
      "perfscope top: {:8.0f} samples/s  kernel:{:5.1f}%  lost: {}  throttled: {}  [{}]  ({})",
      rate, kernel, lost, stats.totals.throttles, run.event_text, run.target_text));
  if (run.user_only) {
    lines.push_back(fmt::format(
        "user space only: kernel.perf_event_paranoid is {} and top runs unprivileged (root, "
        "CAP_PERFMON or paranoid <= 1 shows the kernel)",
        sys::read_sysctl("perf_event_paranoid").value_or(2)));
  }
  for (const auto& note : run.notes) lines.push_back("note: " + note);
  if (target_gone) lines.emplace_back("the target has exited: its samples fade out");
  return lines;
}

void print_snapshot(const TopOptions& options, const LiveProfile& profile,
                    const std::vector<std::string>& header, int number, double elapsed,
                    bool children) {
  LiveSnapshotOptions snapshot_options;
  snapshot_options.symbol_filter = options.symbol_filter;
  snapshot_options.dso_filter = options.dso_filter;
  snapshot_options.sort_by_children = children;
  snapshot_options.percent_limit = options.percent_limit;
  snapshot_options.max_rows = options.rows;
  LiveSnapshot snapshot = profile.snapshot(snapshot_options);
  std::string out;
  for (const auto& line : header) out += line + "\n";
  out += fmt::format("snapshot {}{} at {:.1f} s: {} rows{}\n", number,
                     options.batch > 0 ? fmt::format(" of {}", options.batch) : std::string(),
                     elapsed, snapshot.rows.size(),
                     snapshot.rows_before_limit > snapshot.rows.size()
                         ? fmt::format(" of {} (--rows)", snapshot.rows_before_limit)
                         : std::string());
  out += std::string(78, '-') + "\n";
  TopColumns columns = top_columns(snapshot, profile.options().sort, children);
  columns.samples = options.show_samples;
  out += top_heading(columns) + "\n";
  std::vector<std::string> callers;
  for (const LiveRow& row : snapshot.rows) {
    out += top_row(row, columns) + "\n";
    if (options.call_graph && row.function != LiveRow::no_function) {
      callers.clear();
      append_caller_lines(callers, profile.caller_tree(row.function, 1.0, 4), 14);
      for (const auto& line : callers) out += line + "\n";
    }
  }
  out += "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

MachineCheck top_check(const MachineReport& report) {
  MachineCheck check;
  check.id = "top";
  check.title = "perfscope top";
  check.status = CheckStatus::ok;
  constexpr int cap_sys_admin = 21, cap_perfmon = 38;
  std::uint64_t caps = sys::effective_capabilities();
  bool privileged = (caps & (1ULL << cap_sys_admin)) != 0 || (caps & (1ULL << cap_perfmon)) != 0;
  auto paranoid = sys::read_sysctl("perf_event_paranoid");
  bool whole_machine = privileged || (paranoid && *paranoid <= 0);
  bool kernel = privileged || (paranoid && *paranoid <= 1);
  bool kernel_symbols = true;
  for (const auto& other : report.checks) {
    if (other.id == "kptr_restrict" && other.status != CheckStatus::ok) kernel_symbols = false;
  }
  std::vector<std::string> parts, fixes;
  // Room made first: growing from empty, GCC 12 at -O3 sees a false -Warray-bounds in the
  // inlined string construction (the plain Release build stopped on it).
  parts.reserve(4);
  fixes.reserve(4);
  parts.emplace_back(whole_machine ? "the whole machine (-a, the default) and any process"
                                   : "only your own processes (-p PID, -t TID)");
  parts.emplace_back(kernel ? "kernel and user space" : "user space only");
  if (kernel && !kernel_symbols) parts.emplace_back("kernel functions unnamed (kptr_restrict)");
  if (!whole_machine) {
    check.status = CheckStatus::warn;
    fixes.emplace_back(
        "for the whole machine run as root, grant CAP_PERFMON, or `sysctl "
        "kernel.perf_event_paranoid=0`");
  }
  if (kernel && !kernel_symbols) {
    check.status = CheckStatus::warn;
    fixes.emplace_back("`sysctl kernel.kptr_restrict=0` names kernel functions");
  }
  // The live view draws through terminfo; --stdio and --batch need no terminal.
  const char* term = std::getenv("TERM");
  int terminfo_error = 0;
  bool known = term != nullptr && *term != '\0' && top_terminal_known(term, terminfo_error);
  parts.push_back(known ? fmt::format("terminal '{}' known to terminfo", term)
                        : fmt::format("terminal '{}' unknown to terminfo: text snapshots only",
                                      term ? term : ""));
  if (!known) {
    check.status = CheckStatus::warn;
    fixes.emplace_back(
        "set TERM to a type terminfo knows (e.g. xterm-256color; Debian ncurses-base, "
        "ncurses-term), or use perfscope top --stdio");
  }
  for (std::size_t i = 0; i < parts.size(); ++i) check.value += (i ? ", " : "") + parts[i];
  check.explanation =
      "top samples at 4000 Hz (cpu-clock without a hardware PMU) and names functions as it goes; "
      "the live view needs a terminal, --stdio/--batch N print text.";
  for (std::size_t i = 0; i < fixes.size(); ++i) check.fix += (i ? "; " : "") + fixes[i];
  return check;
}

TopCommand::TopCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "top");
  add_event_list_option(*app_, options_.events,
                        "Event to sample (default: cycles, or cpu-clock without a hardware PMU)");
  auto* frequency = app_->add_option_function<std::string>(
      "-F,--freq", [this](const std::string& text) { options_.frequency = parse_frequency(text); },
      "Samples per second (default 4000; max: kernel.perf_event_max_sample_rate)");
  frequency->type_name("HZ|max");
  app_->add_option("-c,--count", options_.period, "Sample every N events instead of -F")
      ->check(CLI::PositiveNumber)
      ->excludes(frequency);
  app_->add_option("-p,--pid", options_.pid, "Show one running process (all its threads)");
  app_->add_option("-t,--tid", options_.tid, "Show one running thread");
  app_->add_flag("-a,--all-cpus", options_.all_cpus, "Show every CPU (the default)");
  app_->add_option("-C,--cpu", options_.cpu_list, "Show these CPUs (e.g. 0-3,8)");
  app_->add_option("-G,--cgroup", options_.cgroup, "Show the processes of a cgroup v2");
  app_->add_flag("-g", options_.call_graph,
                 "Sample call chains (frame pointers): callers, children, the call-graph view");
  app_->add_flag("--children,!--no-children", options_.children,
                 "Order by inclusive share (default with -g) or by self share");
  app_->add_option("-d,--delay", options_.delay_seconds, "Seconds between refreshes (default 2)")
      ->check(CLI::Range(0.1, 3600.0));
  app_->add_option("-s,--sort", options_.sort, "Row keys: comm, pid, dso, sym (default dso,sym)");
  app_->add_flag("--stdio", options_.stdio, "Print text snapshots instead of the live screen");
  app_->add_option("-n,--batch", options_.batch, "Print N text snapshots, then exit")
      ->check(CLI::PositiveNumber);
  app_->add_option("--rows,-E,--entries", options_.rows,
                   "Rows per text snapshot (default 40; 0: every row); perf's -E/--entries");
  app_->add_flag("--show-nr-samples", options_.show_samples,
                 "A Samples column: each row's samples (decayed as its share is, exact with -z)");
  app_->add_option("--percent-limit", options_.percent_limit, "Hide rows below this share (%)")
      ->check(CLI::Range(0.0, 100.0));
  app_->add_flag("-z,--zero", options_.zero, "Forget all samples at each refresh (no decay)");
  app_->add_option("--symbol-filter", options_.symbol_filter,
                   "Show only symbols containing this text (key s in the live view)");
  app_->add_option("--dso-filter", options_.dso_filter,
                   "Show only DSOs containing this text (key d in the live view)");
  add_kernel_symbol_options(*app_, options_.kernel, "-k,--vmlinux", "");
  add_event_switch_options(*app_, options_.switches);
  app_->add_option("--kallsyms", options_.kallsyms,
                   "Kernel symbols from this file (a copy of /proc/kallsyms), as perf's --kallsyms")
      ->check(readable_file());
  app_->add_option("-m,--mmap-pages", options_.mmap_pages,
                   "Ring buffer data pages per CPU or thread (a power of two)");
  app_->footer(
      "Keys: q quit, arrows select, Enter callers, g call graph, s/d filter by symbol/DSO, "
      "p pause, h help.\n"
      "Old samples decay by 7/8 at each refresh. Unprivileged at perf_event_paranoid 2: user "
      "space of your own processes (-p/-t).\n\n"
      "Examples:\n"
      "  perfscope top -g -F 999\n"
      "  perfscope top -p $(pidof myserver) --batch 3 -d 1 --rows 10");
}

int TopCommand::run() {
  // First, as record: a stop signal while the events open ends top, not perfscope mid-setup.
  install_stop_handlers({SIGINT, SIGTERM, SIGHUP, SIGQUIT});
  TopOptions options = options_;
  options.rows = app_->count("--rows") != 0 ? options_.rows : 40;
  if (options.mmap_pages != 0 && (options.mmap_pages & (options.mmap_pages - 1)) != 0) {
    throw std::invalid_argument(
        fmt::format("--mmap-pages {}: the ring buffer needs a power of two pages (e.g. {})",
                    options.mmap_pages, std::bit_ceil(options.mmap_pages)));
  }
  if (options.children == 0 && options.call_graph) {
    if (auto configured = perf_config().boolean("top.children")) {
      options.children = *configured ? 1 : -1;  // ~/.perfconfig's, as perf top reads it
    }
  }
  bool children = options.children > 0 || (options.children == 0 && options.call_graph);
  if (children && !options.call_graph) {
    throw std::invalid_argument("--children needs call chains: add -g");
  }
  LiveProfileOptions model;
  model.callchains = options.call_graph;
  model.decay = options.zero ? 0.0 : 7.0 / 8.0;
  model.sort = parse_live_sort_keys(options.sort);
  model.resolver.symbols.parameter_lists = false;  // perf top's short C++ names
  apply_kernel_symbol_options(options.kernel, model.resolver.symbols);
  // The live kernel: its build id picks a vmlinux of the same build where perf looks for one.
  model.resolver.symbols.kernel_build_id = kernel_build_id().value_or(std::vector<std::uint8_t>());
  if (!options.kallsyms.empty()) {
    model.resolver.symbols.kallsyms_path = options.kallsyms;
    model.resolver.symbols.kallsyms_path_chosen = true;
  }
  bool text = options.stdio || options.batch > 0;
  if (!text && (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO))) {
    fmt::print(stderr, "perfscope top: no terminal: printing text snapshots (--stdio)\n");
    text = true;
  }

  LiveProfile profile(model);
  TopRun run = open_session(options, profile);
  if (!options.switches.on.empty() || !options.switches.off.empty()) {
    std::vector<std::string> names;
    for (const auto& event : run.session->sampling().events()) names.push_back(event.name);
    profile.set_event_switch(EventSwitch(switch_event_index(names, options.switches.on, "on"),
                                         switch_event_index(names, options.switches.off, "off"),
                                         options.switches.show));
  }
  RecordingSession& session = *run.session;
  const sys::ExitWatch& target_watch = run.target_watch;
  bool target_gone = false;
  auto check_target = [&] {
    if (!target_gone && target_watch.exited()) target_gone = true;
  };

  auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options.delay_seconds));
  Clock::time_point start = Clock::now();
  Clock::time_point interval_start = start;
  Clock::time_point next_refresh = start + interval;
  std::unique_ptr<TopScreen> screen;
  if (!text) {
    TopScreenSetup setup{model.sort,          children,
                         options.call_graph,  options.symbol_filter,
                         options.dso_filter,  options.percent_limit,
                         options.show_samples};
    screen = std::make_unique<TopScreen>(profile, setup);
    screen->show_interval(header_lines(run, profile, 0, false));
  }
  int snapshots = 0;
  while (stop_signal.load() == 0) {
    auto now = Clock::now();
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_refresh - now).count();
    int timeout = static_cast<int>(std::clamp<long long>(wait, 0, screen ? 100 : 1000));
    session.poll(profile, timeout);
    if (screen && !screen->handle_keys()) break;
    check_target();
    now = Clock::now();
    // A batch whose target exited prints what it has now instead of waiting for nothing.
    bool batch_ends = text && target_gone;
    if (now < next_refresh && !batch_ends) continue;
    double seconds = std::chrono::duration<double>(now - interval_start).count();
    auto header = header_lines(run, profile, seconds, target_gone);
    if (screen) {
      screen->show_interval(std::move(header));
    } else {
      ++snapshots;
      print_snapshot(options, profile, header, snapshots,
                     std::chrono::duration<double>(now - start).count(), children);
    }
    profile.end_interval();
    interval_start = now;
    next_refresh += interval;
    if (next_refresh < now) next_refresh = now + interval;
    if (options.batch > 0 && snapshots >= options.batch) break;
    if (batch_ends) {
      if (options.batch > 0 && snapshots < options.batch) {
        fmt::print(stderr, "perfscope top: the target exited after {} of {} snapshots\n", snapshots,
                   options.batch);
      }
      break;
    }
  }
  screen.reset();  // the terminal comes back before anything else is printed
  session.sampling().stop();
  return 0;
}

}  // namespace perfscope::cli
