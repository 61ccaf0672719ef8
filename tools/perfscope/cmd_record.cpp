// perfscope record: sample a command, a process, threads, CPUs or a cgroup into a perf.data file.
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <memory>
#include <vector>

#include "command_line.hpp"
#include "commands.hpp"
#include "control_channel.hpp"
#include "delayed_enable.hpp"
#include "perf_config.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/abi/user_registers.hpp"
#include "perfscope/analysis/perf_data/host_description.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/perf_data/tracing_data.hpp"
#include "perfscope/analysis/profile/off_cpu_profile.hpp"
#include "perfscope/analysis/recording/aux_recording.hpp"
#include "perfscope/analysis/recording/off_cpu_recorder.hpp"
#include "perfscope/analysis/recording/perf_data_sink.hpp"
#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/analysis/recording/stack_completion_sink.hpp"
#include "perfscope/analysis/symbols/kallsyms_cache.hpp"
#include "perfscope/analysis/unwinding/stack_completion.hpp"
#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/core/ring_buffer.hpp"
#include "perfscope/engine/sampling_session.hpp"
#include "perfscope/sys/child_process.hpp"
#include "perfscope/sys/exit_watch.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "perfscope/sys/perf_syscalls.hpp"
#include "record_jit.hpp"
#include "record_perf_options.hpp"
#include "record_summary.hpp"
#include "stop_signals.hpp"
#include "subcommand_table.hpp"
#include "target_options.hpp"

namespace perfscope::cli {

namespace {

namespace sf = abi::sample_format;
namespace flag = abi::attr_flag;

constexpr std::uint64_t default_frequency = 4000;
constexpr std::uint32_t default_dwarf_stack = 8192;

struct CallGraph {
  std::string mode;  // "", "fp", "dwarf" or "no"
  std::uint32_t stack_size = default_dwarf_stack;
  // -g: frame pointers, with the user registers and a small stack copy from which the callers
  // the frame-pointer walk skips are recovered while recording (StackCompleter).
  bool fill_gaps = false;
};

CallGraph parse_call_graph(const std::string& text) {
  CallGraph graph;
  auto comma = text.find(',');
  graph.mode = text.substr(0, comma);
  if (graph.mode != "fp" && graph.mode != "dwarf" && graph.mode != "no") {
    throw std::invalid_argument(fmt::format(
        "--call-graph '{}': the mode must be fp (frame pointers) or dwarf (copies of the user "
        "stack), optionally dwarf,SIZE",
        text));
  }
  if (comma != std::string::npos) {
    if (graph.mode != "dwarf") {
      throw std::invalid_argument("--call-graph: only dwarf takes a stack size (dwarf,SIZE)");
    }
    unsigned long size = std::strtoul(text.c_str() + comma + 1, nullptr, 10);
    if (size == 0 || size > 65528 || size % 8 != 0) {
      throw std::invalid_argument(fmt::format(
          "--call-graph dwarf,{}: the stack size must be a multiple of 8 between 8 and 65528",
          text.substr(comma + 1)));
    }
    graph.stack_size = static_cast<std::uint32_t>(size);
  }
  return graph;
}

// Samples a second per CPU an event asks for: its frequency, or for a clock's period in
// nanoseconds, the rate that makes; 0 where the rate is the workload's (a count of events).
std::uint64_t samples_per_second(const EventAttr& attr) {
  const abi::PerfEventAttr& raw = attr.raw();
  if (raw.sample_period_or_freq == 0) return 0;
  if (attr.has(flag::freq)) return raw.sample_period_or_freq;
  bool clock = raw.type == static_cast<std::uint32_t>(abi::EventType::software) &&
               (raw.config == static_cast<std::uint64_t>(abi::SoftwareEvent::cpu_clock) ||
                raw.config == static_cast<std::uint64_t>(abi::SoftwareEvent::task_clock));
  return clock ? 1'000'000'000 / raw.sample_period_or_freq : 0;
}

void configure_sampling(EventSpec& spec, const RecordOptions& options, const CallGraph& graph) {
  EventAttr& attr = spec.attr;
  bool tracepoint = attr.type() == static_cast<std::uint32_t>(abi::EventType::tracepoint);
  std::uint64_t sample_type = attr.raw().sample_type | sf::ip | sf::tid | sf::time | sf::period;
  if (options.period > 0) {
    attr.set_sample_period(options.period);
  } else if (options.frequency > 0) {
    attr.set_sample_freq(options.frequency);
  } else if (attr.raw().sample_period_or_freq == 0) {
    // Like perf: every tracepoint hit, and a frequency for counting events.
    if (tracepoint) {
      attr.set_sample_period(1);
    } else {
      attr.set_sample_freq(default_frequency);
    }
  }
  // -n: perf's frequency of 0 (the kernel then never raises an overflow).
  if (options.no_samples) attr.set_sample_freq(0);
  if (tracepoint) sample_type |= sf::raw;
  if (options.sample_addr) sample_type |= sf::addr;
  // Without it, like perf record, the CPU is only recorded for CPU-wide and cgroup targets.
  if (options.sample_cpu) sample_type |= sf::cpu;
  CallGraph event_graph = graph;
  if (!spec.call_graph.empty()) {
    event_graph.mode = spec.call_graph;
    if (spec.stack_size) event_graph.stack_size = spec.stack_size;
  }
  if (event_graph.mode == "fp") {
    sample_type |= sf::callchain;
    // No stack copy where the user part of the chain is not wanted (--kernel-callchains).
    // Nor where the user asked for user registers of their own: the completed file would lose
    // them with the copies.
    if (graph.fill_gaps && spec.call_graph.empty() && !options.kernel_callchains &&
        options.user_regs == 0) {
      sample_type |= sf::regs_user | sf::stack_user;
      attr.set_sample_regs_user(abi::dwarf_unwind_register_mask());
      attr.set_sample_stack_user(frame_pointer_gap_stack_bytes(samples_per_second(attr)));
    }
  } else if (event_graph.mode == "dwarf") {
    sample_type |= sf::callchain | sf::regs_user | sf::stack_user;
    attr.set_sample_regs_user(abi::dwarf_unwind_register_mask());
    attr.set_sample_stack_user(event_graph.stack_size);
    attr.set_flag(flag::exclude_callchain_user);
  } else if (event_graph.mode == "lbr") {
    throw std::invalid_argument(
        fmt::format("{}: call-graph=lbr is not supported by perfscope "
                    "record; use fp or dwarf",
                    spec.name));
  }
  // perf's -R: raw data from every event, with the time and CPU that place it.
  if (options.raw_samples) sample_type |= sf::raw | sf::time | sf::cpu;
  if (options.sample_identifier) sample_type |= sf::identifier;
  if (options.phys_data) sample_type |= sf::phys_addr;
  if (options.data_page_size) sample_type |= sf::data_page_size;
  if (options.code_page_size) sample_type |= sf::code_page_size;
    // As perf: x86's memory events weigh in the struct form (the instruction latency beside).
#if defined(__x86_64__)
  if (options.weight) sample_type |= sf::weight_struct;
#else
  if (options.weight) sample_type |= sf::weight;
#endif
  if (options.transaction) sample_type |= sf::transaction;
  if (options.intr_regs != 0) {
    sample_type |= sf::regs_intr;
    attr.set_sample_regs_intr(options.intr_regs);
  }
  if (options.user_regs != 0) {
    sample_type |= sf::regs_user;
    attr.set_sample_regs_user(attr.raw().sample_regs_user | options.user_regs);
  }
  if (options.all_cgroups) sample_type |= sf::cgroup;
  if (options.branch_filter != 0) {
    sample_type |= sf::branch_stack;
    attr.set_branch_sample_type(options.branch_filter);
  }
  attr.set_sample_type(sample_type);
  // As perf's evsel config: only the two exclude bits, whatever the event's modifiers said.
  if (options.all_user) attr.set_flag(flag::exclude_kernel).set_flag(flag::exclude_user, false);
  if (options.all_kernel) attr.set_flag(flag::exclude_kernel, false).set_flag(flag::exclude_user);
  if (options.user_callchains) attr.set_flag(flag::exclude_callchain_kernel);
  if (options.kernel_callchains) attr.set_flag(flag::exclude_callchain_user);
  // Time samples by CLOCK_MONOTONIC (perf record -k mono) rather than the kernel's perf_clock,
  // which no clock_gettime reads: the CLOCK_DATA feature can then tie sample times to dates.
  if (options.clockid >= 0) {
    attr.set_clockid(options.clockid);
  } else if (!attr.has(flag::use_clockid)) {
    attr.set_clockid(CLOCK_MONOTONIC);
  }
}

// perf's --timestamp-filename suffix: local time to the second, and hundredths.
std::string timestamp_suffix() {
  struct timeval now {};
  ::gettimeofday(&now, nullptr);
  struct tm local {};
  ::localtime_r(&now.tv_sec, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d%H%M%S", &local);
  return fmt::format("{}{:02}", text, now.tv_usec / 10000);
}

// perf's HEADER_GROUP_DESC: each braced group of two events or more, by its leader's index.
std::vector<EventGroupDesc> group_descriptions(const std::vector<EventGroupSpec>& groups) {
  std::vector<EventGroupDesc> described;
  std::uint32_t index = 0;
  for (const auto& group : groups) {
    auto members = static_cast<std::uint32_t>(group.events.size());
    if (group.braced && members > 1) described.push_back({"", index, members});
    index += members;
  }
  return described;
}

// perf's --group: every event in one group led by the first (braced groups included).
std::vector<EventGroupSpec> as_one_group(std::vector<EventGroupSpec> groups) {
  if (groups.size() == 1) {
    groups.front().braced = true;
    return groups;
  }
  EventGroupSpec one;
  one.braced = true;
  for (auto& group : groups) {
    for (auto& spec : group.events) one.events.push_back(std::move(spec));
  }
  return {std::move(one)};
}

// -F N, or -F max as perf: the highest rate the kernel allows now (it lowers
// kernel.perf_event_max_sample_rate itself when sampling interrupts take too long).
// perf's rule: -F above kernel.perf_event_max_sample_rate is lowered to that maximum with a
// warning, and refused only with --strict-freq.
std::uint64_t allowed_frequency(std::uint64_t requested, bool strict) {
  auto rate = sys::read_sysctl("perf_event_max_sample_rate");
  if (!rate || *rate <= 0 || requested <= static_cast<std::uint64_t>(*rate)) return requested;
  auto maximum = static_cast<std::uint64_t>(*rate);
  if (strict) {
    throw std::invalid_argument(fmt::format(
        "-F {}: above kernel.perf_event_max_sample_rate ({} Hz), and --strict-freq refuses to "
        "lower it; give -F {} or less, or raise the limit (sysctl "
        "kernel.perf_event_max_sample_rate={})",
        requested, maximum, maximum, requested));
  }
  fmt::print(stderr,
             "perfscope: warning: -F {} is above kernel.perf_event_max_sample_rate: sampling at "
             "{} Hz instead (raise the sysctl to go higher; --strict-freq refuses instead)\n",
             requested, maximum);
  return maximum;
}

// --off-cpu-thresh: a duration with its unit (ns, us, ms, s); a bare number is milliseconds,
// as perf's --off-cpu-thresh.
std::uint64_t parse_duration_ns(const std::string& text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  std::uint64_t scale = unit == "ns"                 ? 1
                        : unit == "us"               ? 1000
                        : unit == "ms" || unit == "" ? 1000000
                        : unit == "s"                ? 1000000000
                                                     : 0;
  if (error != std::errc{} || end == text.data() || scale == 0) {
    throw CLI::ValidationError("--off-cpu-thresh",
                               fmt::format("'{}' is not a duration: give a number with ns, us, ms "
                                           "or s (a bare number is milliseconds), e.g. 10ms",
                                           text));
  }
  return value * scale;
}

double cpu_seconds() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& value) {
    return static_cast<double>(value.tv_sec) + static_cast<double>(value.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Whether perf would take the larger AUX area by default: locked memory is not limited for
// root, nor at perf_event_paranoid -1.
bool privileged_for_locked_memory() {
  return ::geteuid() == 0 || sys::read_sysctl("perf_event_paranoid").value_or(2) < 0;
}

// One recording from its options to its file: prepare() opens the events, creates the file and
// writes what exists before sampling; record() samples until a stop signal or the target's end;
// finish() stops, drains, ends the command and completes the file.
struct Recording {
  RecordOptions options;
  Target target;
  std::unique_ptr<RecordingSession> session;
  std::optional<std::vector<std::byte>> tracing_data;
  std::optional<ClockData> clock_data;
  std::unique_ptr<PerfDataWriter> writer;
  std::unique_ptr<PerfDataSink> sink;
  std::chrono::steady_clock::time_point wall_start;
  // With --off-cpu: between the session and the file (off_cpu_recorder.hpp).
  std::unique_ptr<OffCpuRecorder> off_cpu;
  OffCpuCapability off_cpu_capability;
  // --push: the interval profiles (their sink passes records on to the file's, if any).
  std::unique_ptr<RecordPush> push;
  // An AUX-tracing event (intel_pt//, ...): its PMU and areas.
  std::optional<AuxRecordingPlan> aux;
  // -g and --call-graph dwarf: the user stacks completed on their way to the file.
  std::unique_ptr<StackCompletionSink> completion;
  bool size_limit_reached = false;  // --max-size: recording stopped at the file's size
  // The braced groups ({a,b}, --group) as the file's GROUP_DESC says them.
  std::vector<EventGroupDesc> groups;
  // --control: last, so that its reader ends before the session it drives.
  std::unique_ptr<ControlChannel> control;
  RecordingSink& active_sink() {
    if (completion) return *completion;
    return push ? push->sink() : *sink;
  }
  // What the session feeds: with --off-cpu the switch matcher, in front of the file.
  RecordingSink& session_sink() {
    return off_cpu ? static_cast<RecordingSink&>(*off_cpu) : active_sink();
  }
};

// --off-cpu: the switch-out event this user can sample (the best of off_cpu_recorder.hpp's
// methods) as one more group, configured like the others but sampling every Nth switch-out.
void add_off_cpu_events(std::vector<EventGroupSpec>& groups, const RecordOptions& options,
                        const CallGraph& graph, const OffCpuCapability& capability) {
  if (capability.method == OffCpuMethod::switch_records) return;
  auto switch_groups = parse_event_list(
      capability.method == OffCpuMethod::sched_switch ? "sched:sched_switch" : "context-switches");
  RecordOptions switch_options = options;
  switch_options.period = options.off_cpu_every;
  switch_options.frequency = 0;
  for (auto& group : switch_groups) {
    for (auto& spec : group.events) {
      configure_sampling(spec, switch_options, graph);
      if (capability.method == OffCpuMethod::sched_switch) {
        spec.attr.set_sample_type(spec.attr.raw().sample_type | sf::raw);
      }
    }
    groups.push_back(std::move(group));
  }
}

// --wall adds time to time: its on-CPU samples must be of a clock, whose periods are ns.
void check_wall_events(const std::vector<EventGroupSpec>& groups) {
  for (const auto& group : groups) {
    for (const auto& spec : group.events) {
      if (!event_period_is_ns(spec.name)) {
        throw std::invalid_argument(fmt::format(
            "--wall: '{}' counts events, not time, and cannot add up with blocked time; leave "
            "out -e (--wall samples cpu-clock) or give -e cpu-clock or -e task-clock",
            spec.name));
      }
    }
  }
}

std::unique_ptr<Recording> prepare(RecordOptions options) {
  if (options.mmap_pages != 0 && (options.mmap_pages & (options.mmap_pages - 1)) != 0) {
    throw std::invalid_argument(
        fmt::format("--mmap-pages {}: the ring buffer needs a power of two pages (e.g. {})",
                    options.mmap_pages, std::bit_ceil(options.mmap_pages)));
  }
  if (options.frequency > 0) {
    options.frequency = allowed_frequency(options.frequency, options.strict_frequency);
  }
  CallGraph graph;
  const PerfConfig& config = perf_config();
  if (!options.call_graph.empty()) {
    graph = parse_call_graph(options.call_graph);
  } else if (auto mode = config.get("call-graph.record-mode");
             options.frame_pointer_graph && mode && *mode != "fp") {
    // -g as ~/.perfconfig's call-graph.record-mode says (with its dump-size for dwarf), as perf.
    std::string text = *mode;
    if (auto size = config.get("call-graph.dump-size"); size && *mode == "dwarf") {
      text += "," + *size;
    }
    graph = parse_call_graph(text);
  } else if (options.frame_pointer_graph) {
    graph.mode = "fp";
    graph.fill_gaps = true;
  }
  // record.build-id: cache (the default), no-cache (-N), skip (-B).
  if (auto build_id = config.get("record.build-id")) {
    if (*build_id == "no-cache") {
      options.no_buildid_cache = true;
    } else if (*build_id == "skip") {
      options.no_buildid = true;
    } else if (*build_id != "cache") {
      throw std::invalid_argument(fmt::format(
          "perfconfig setting record.build-id = '{}': perfscope takes cache, no-cache or skip",
          *build_id));
    }
  }
  if (options.keep_stacks && graph.mode != "dwarf") {
    throw std::invalid_argument(
        "--keep-stacks keeps the user stack copies of --call-graph dwarf in the file: add "
        "--call-graph dwarf, or leave --keep-stacks out");
  }
  Target target = target_from_options(options, "record");

  if (options.wall) options.off_cpu = true;
  if (!options.off_cpu && (options.off_cpu_thresh_ns != 0 || options.off_cpu_every != 1)) {
    throw std::invalid_argument(
        "--off-cpu-thresh and --off-cpu-every shape off-CPU samples: add --off-cpu (or --wall)");
  }
  // The interval profiles of --push are built from the sampled events alone; the off-CPU
  // intervals are an event of the file's.
  if (options.off_cpu && !options.push.url.empty()) {
    throw std::invalid_argument(
        "--push does not carry off-CPU intervals yet: record --off-cpu (or --wall) to a file, "
        "then send it with 'perfscope push FILE URL'");
  }
  if (options.per_thread &&
      (target.kind() == Target::Kind::cpus || target.kind() == Target::Kind::cgroup)) {
    throw std::invalid_argument(
        "--per-thread records threads: give -p PID, -t TID or a command, not -a, -C or -G");
  }
  if (options.per_thread && options.off_cpu) {
    throw std::invalid_argument(
        "--per-thread and --off-cpu (or --wall) do not go together: off-CPU intervals are "
        "followed across threads as they are created; leave out --per-thread");
  }
  if (options.off_cpu_every == 0) {
    throw std::invalid_argument("--off-cpu-every 0: give 1 (every switch) or more");
  }
  std::string events = options.events;
  if (events.empty() && options.wall) events = "cpu-clock";
  if (events.empty()) {
    events = "cycles";
    if (!can_sample_cpu_cycles(default_frequency)) {
      if (!options.quiet) {
        fmt::print(stderr,
                   "perfscope: no hardware PMU can sample cycles here: sampling cpu-clock "
                   "instead\n");
      }
      events = "cpu-clock";
    }
  }
  auto groups = parse_event_list(events);
  if (options.group) groups = as_one_group(std::move(groups));
  apply_event_filters(groups, options.filters);
  if (options.wall) check_wall_events(groups);
  OffCpuCapability capability;
  if (options.off_cpu) {
    capability = probe_off_cpu_capability();
    if (!capability.limitation.empty() && !options.quiet) {
      fmt::print(stderr, "perfscope: note: off-CPU via {}: {}\n",
                 off_cpu_method_name(capability.method), capability.limitation);
    }
  }
  for (auto& group : groups) {
    for (auto& spec : group.events) {
      configure_sampling(spec, options, graph);
      // The file gets one more event, offcpu-time: with several events every sample says its
      // own (IDENTIFIER), as perf requires.
      if (options.off_cpu) spec.attr.set_sample_type(spec.attr.raw().sample_type | sf::identifier);
    }
  }
  std::optional<AuxRecordingPlan> aux =
      plan_aux_recording(groups,
                         AuxRecordingRequest{options.mmap_pages, options.aux_pages, options.period,
                                             privileged_for_locked_memory()},
                         PmuRegistry::system());
  if (!aux && options.aux_pages != 0) {
    throw std::invalid_argument(fmt::format(
        "-m {},{}: no event traces into an AUX area; the second number is for events such as "
        "intel_pt//, intel_bts//, arm_spe_0// ('perfscope doctor' lists this machine's)",
        options.mmap_pages, options.aux_pages));
  }
  if (options.off_cpu) add_off_cpu_events(groups, options, graph, capability);
  bool dwarf_graph = false;
  // Which stacks are completed while recording: those of every event with stack copies, all of
  // one kind (an event with a call-graph term of its own of the other kind leaves them as the
  // kernel wrote them).
  bool copies_unwound = false, copies_fill_gaps = false;
  for (const auto& group : groups) {
    for (const auto& spec : group.events) {
      const auto& raw = spec.attr.raw();
      dwarf_graph |= (raw.sample_type & sf::stack_user) != 0;
      if ((raw.sample_type & sf::stack_user) == 0) continue;
      ((raw.flags & flag::exclude_callchain_user) != 0 ? copies_unwound : copies_fill_gaps) = true;
    }
  }
  std::optional<StackCompletion> completion;
  // --user-regs: the registers asked for stay in the file, and so the stack copies with them
  // (perf's own format: the report unwinds them).
  if (options.user_regs != 0) options.keep_stacks = true;
  if (copies_fill_gaps && !copies_unwound) {
    completion = StackCompletion::fill_frame_pointer_gaps;
    dwarf_graph = false;  // the file has no stack copies for perf to unwind
  } else if (copies_unwound && !copies_fill_gaps && !options.keep_stacks) {
    completion = StackCompletion::unwind_dwarf;
  }

  SamplingOptions sampling;
  sampling.data_pages = options.mmap_pages;
  if (options.no_buffering) sampling.wakeup_events = 1;
  sampling.namespaces = options.namespaces;
  sampling.cgroups = options.all_cgroups;
  sampling.build_id_mmaps = options.buildid_mmap;
  sampling.inherit = !options.per_thread;
  sampling.enable_at_start = options.delay_ms == 0;
  // A switch-out sample with its call chain on every blocking switch outpaces one wake-up per
  // quarter of perf's default buffer on a busy machine: four times that (2 MiB per CPU), where
  // the kernel context it needs also lifts the locked-memory limit.
  if (options.off_cpu && options.mmap_pages == 0 &&
      capability.method != OffCpuMethod::switch_records) {
    sampling.data_pages = 4 * RingBuffer::default_data_pages();
  }
  if (aux) {
    sampling.aux_pages = aux->aux_pages;
    if (aux->data_pages != 0) sampling.data_pages = aux->data_pages;
  }
  // As perf record does for --call-graph dwarf, so that perf can unwind our files too.
  sampling.data_mmaps = dwarf_graph;
  // Each buffer's records go to the file as they lie, a round at a time, as perf record writes
  // them: readers order them by round (a merge here would cost a comparison per buffer and
  // record while the buffers fill).
  sampling.time_ordered = false;
  // Off-CPU intervals end at the thread's switch-in: the SWITCH records say when. A trace's
  // decoder follows which thread ran by them too.
  sampling.context_switches = options.off_cpu || aux.has_value() || options.switch_events;
  // --push builds profiles from the live records: a sample must come after the MMAP of its code,
  // which another CPU's buffer may hold (a file's reader orders them itself).
  if (!options.push.url.empty()) sampling.time_ordered = true;
  // Stacks unwound as they come need the mappings of their time: records merged by time.
  if (completion) sampling.time_ordered = true;
  if (options.dry_run) return nullptr;
  auto recording = std::make_unique<Recording>(Recording{options,
                                                         target,
                                                         nullptr,
                                                         {},
                                                         {},
                                                         {},
                                                         {},
                                                         std::chrono::steady_clock::now(),
                                                         {},
                                                         capability,
                                                         {},
                                                         aux,
                                                         {},
                                                         false,
                                                         group_descriptions(groups),
                                                         nullptr});
  recording->session = std::make_unique<RecordingSession>(std::move(groups), target, sampling);
  if (!options.control.empty()) {
    RecordingSession* driven = recording->session.get();
    recording->control = std::make_unique<ControlChannel>(
        options.control, ControlHandlers{[driven] { driven->sampling().enable(); },
                                         [driven] { driven->sampling().disable(); },
                                         [driven] {
                                           stop_signal.store(SIGTERM);
                                           driven->interrupt_poll();
                                         },
                                         options.quiet});
  }
  recording->session->limit_synthesis(options.synthesis.tasks, options.synthesis.mmaps,
                                      options.synthesis.cgroups);
  RecordingSession& session = *recording->session;
  session.check_fit([](const SampleMisfit& misfit) {
    return fmt::format(
        "Fix: a larger buffer, at least {} pages and better {} (perfscope record -m {}: a buffer "
        "that holds one sample loses the next while it is read){}.",
        misfit.pages_needed, misfit.pages_advised, misfit.pages_advised,
        misfit.sample.stack_dump != 0 ? ", or dump less of the stack (--call-graph dwarf,SIZE)"
                                      : "");
  });
  // With -o - the stream owns standard output: the command (forked by open) writes its own to
  // stderr, as perf's does.
  int saved_stdout =
      options.output == "-" && target.has_command() ? sys::divert_stdout_to_stderr() : -1;
  try {
    session.open();
  } catch (const Error& error) {
    if (saved_stdout >= 0) sys::restore_stdout(saved_stdout);
    if (options.branch_filter != 0 &&
        (error.code().value() == EOPNOTSUPP || error.code().value() == EINVAL)) {
      throw std::runtime_error(fmt::format(
          "branch stacks (-b/-j) need a PMU that records taken branches (Intel LBR, AMD "
          "LbrExtV2, Arm BRBE), and this machine's events cannot ({}); leave out -b/-j, and "
          "use --call-graph fp or dwarf for call stacks",
          error.what()));
    }
    throw;
  } catch (...) {
    if (saved_stdout >= 0) sys::restore_stdout(saved_stdout);
    throw;
  }
  if (saved_stdout >= 0) sys::restore_stdout(saved_stdout);
  // perf's -r: the recorder under SCHED_FIFO, after the command was forked (it keeps its own
  // policy).
  if (options.realtime_priority > 0) {
    struct sched_param parameter {};
    parameter.sched_priority = options.realtime_priority;
    if (::sched_setscheduler(0, SCHED_FIFO, &parameter) != 0) {
      throw std::runtime_error(fmt::format(
          "-r {}: cannot run the recorder under SCHED_FIFO: {} (root or CAP_SYS_NICE, and a "
          "priority from 1 to {})",
          options.realtime_priority, std::strerror(errno), ::sched_get_priority_max(SCHED_FIFO)));
    }
  }
  if (!recording->options.quiet) {
    if (!recording->options.mmap_note.empty()) {
      fmt::print(stderr, "perfscope: note: {}\n", recording->options.mmap_note);
    }
    for (const auto& notice : session.sampling().notices()) {
      fmt::print(stderr, "perfscope: note: {}\n", notice);
    }
  }

  std::vector<PerfDataEvent> file_events = session.file_events();
  OffCpuSource off_cpu_source;
  if (options.off_cpu) {
    std::size_t last = session.sampling().events().size() - 1;
    if (capability.method != OffCpuMethod::switch_records) off_cpu_source.switch_event = last;
    off_cpu_source.prev_state_offset = capability.prev_state_offset;
    off_cpu_source.prev_state_size = capability.prev_state_size;
    off_cpu_source.identity_fields = session.sampling().opened_attr(0).raw().sample_type;
    off_cpu_source.model =
        session.sampling().opened_attr(off_cpu_source.switch_event.value_or(0)).raw();
    file_events.push_back(off_cpu_file_event(off_cpu_source));
  }
  if (completion) {
    for (auto& event : file_events)
      event.attr = StackCompleter::output_attr(event.attr, *completion);
  }
  // Read before recording: a module unloaded meanwhile would take its tracepoints' formats.
  try {
    if (auto data = collect_tracing_data(file_events)) {
      recording->tracing_data = encode_tracing_data(*data);
    }
  } catch (const Error& error) {
    fmt::print(
        stderr,
        "perfscope: warning: {}\nperfscope: Linux perf will not read this file; perfscope will.\n",
        error.what());
  }
  recording->clock_data = session.clock_data();
  // With --push the perf.data file is written only when -o asks for it.
  if (options.push.url.empty() || options.push.keep_file) {
    recording->writer = std::make_unique<PerfDataWriter>(options.output, std::move(file_events));
    PerfDataWriter& writer = *recording->writer;
    recording->sink = std::make_unique<PerfDataSink>(writer);
    if (writer.pipe_mode()) {
      // A stream cannot go back for the features: they go first, as perf sends them.
      PerfDataFeatures features = describe_host(own_command_line());
      features.tracing_data = recording->tracing_data;
      features.clock_data = recording->clock_data;
      features.groups = recording->groups;
      writer.begin_pipe(features);
    }
    // First, as perf writes it: readers set up the trace's decoder before any record.
    if (aux) {
      writer.append(auxtrace_info_of(session.sampling(), aux->pmu, sampling.context_switches,
                                     PmuRegistry::system()));
    }
  }
  if (!options.push.url.empty()) {
    std::string command =
        target.has_command()
            ? options.command.front().substr(options.command.front().rfind('/') + 1)
        : options.all_cpus || !options.cpu_list.empty() ? "system-wide"
        : options.pid > 0                               ? fmt::format("pid-{}", options.pid)
        : options.tid > 0                               ? fmt::format("tid-{}", options.tid)
                                                        : "cgroup-" + options.cgroup;
    std::uint64_t rate = options.period > 0  ? 0
                         : options.frequency ? options.frequency
                                             : default_frequency;
    recording->push = std::make_unique<RecordPush>(options.push, session, recording->sink.get(),
                                                   command, rate, completion);
  }
  if (completion) {
    recording->completion = std::make_unique<StackCompletionSink>(
        recording->push ? recording->push->sink() : *recording->sink, *completion);
  }
  if (options.off_cpu) {
    recording->off_cpu = std::make_unique<OffCpuRecorder>(
        recording->completion ? static_cast<RecordingSink&>(*recording->completion)
                              : *recording->sink,
        off_cpu_source, OffCpuOptions{options.off_cpu_thresh_ns, options.off_cpu_every});
  }
  session.synthesize(recording->active_sink());
  if (recording->writer) {
    recording->writer->end_init();
    recording->writer->end_round();
  }
  // Stacks are completed beside the drain from here on, so that the buffers are read as fast as
  // the kernel fills them (-g's copies fill them several times as fast as perf's chains alone).
  // Not with --push, whose intervals are closed on this thread from what reached them.
  if (recording->completion && !recording->push) recording->completion->start_worker();
  return recording;
}

// Samples until a stop signal, the command's exit or (-p, -t) the target's.
void record(Recording& recording, bool verbose) {
  RecordingSession& session = *recording.session;
  const Target& target = recording.target;
  session.start();
  // After start: once this is printed, the events sample (tests wait for it).
  if (verbose) {
    fmt::print(stderr, "perfscope: recording {} event(s) of {}\n",
               session.sampling().events().size(), target.describe());
  }
  sys::ExitWatch target_watch = target.exit_watch();
  const std::uint64_t max_size = recording.options.max_size;
  // -D: perf's lines around the delay, which the loop below keeps draining and watching through.
  const int delay_ms = recording.options.delay_ms;
  const bool quiet = recording.options.quiet;
  if (delay_ms != 0 && !quiet) fmt::print(stderr, "Events disabled\n");
  if (recording.control) recording.control->start();
  DelayedEnable delayed(delay_ms, [&] {
    session.sampling().enable();
    if (!quiet) fmt::print(stderr, "Events enabled\n");
  });
  while (stop_signal.load() == 0) {
    session.poll(recording.session_sink(), delayed.poll_timeout(250));
    if (recording.push) recording.push->tick();
    if (session.command_exited()) break;
    if (target_watch.exited()) break;
    if (max_size != 0 && recording.writer && recording.writer->file_size() >= max_size) {
      // perf's words; then it ends as at a stop signal (the command too).
      fmt::print(stderr, "[ perf record: perf size limit reached ({} KB), stopping session ]\n",
                 recording.writer->file_size() >> 10);
      recording.size_limit_reached = true;
      break;
    }
  }
}

// Stops and drains, ends a command perfscope started that is still running (as perf record: a
// stop signal ends the recording, not only the sampling), completes the file and prints the
// summary. Returns the exit status.
int finish(Recording& recording) {
  RecordingSession& session = *recording.session;
  session.stop(recording.session_sink());
  if (recording.off_cpu) recording.off_cpu->finish();
  if (recording.completion) recording.completion->finish();
  bool stopped = stop_signal.load() != 0 || recording.size_limit_reached;
  // The command's output may still be in flight; the file is complete before waiting for it.
  if (stopped) session.terminate_command();
  bool pushed = !recording.push || recording.push->finish();
  if (!recording.writer) {
    int status = recording.target.has_command() ? session.wait_for_command() : 0;
    if (!recording.options.quiet) print_samples_line(session.stats().totals);
    if (!pushed) return 1;
    if (stopped && !recording.target.has_command()) return 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  PerfDataWriter& writer = *recording.writer;
  PerfDataSink& sink = *recording.sink;

  PerfDataFeatures features =
      writer.pipe_mode() ? PerfDataFeatures{} : describe_host(own_command_line());
  features.build_ids = sink.build_ids(recording.options.buildid_all);
  // perf record's copy of kallsyms in the build-id cache, for reports after a reboot or module
  // changes; only for recordings with kernel samples (the kernel's BUILD_ID entry), as perf.
  const bool kernel_hit =
      std::any_of(features.build_ids.begin(), features.build_ids.end(),
                  [](const BuildIdEntry& entry) { return entry.filename == "[kernel.kallsyms]"; });
  if (recording.options.no_buildid) features.build_ids.clear();
  features.tracing_data = std::move(recording.tracing_data);
  features.clock_data = recording.clock_data;
  features.groups = recording.groups;
  if (sink.first_time() != 0) features.sample_time = {sink.first_time(), sink.last_time()};
  if (!writer.pipe_mode()) carry_jit_files(sink, features);
  if (recording.options.clockid >= 0 && !writer.pipe_mode()) {
    struct timespec resolution {};
    if (::clock_getres(recording.options.clockid, &resolution) == 0) {
      features.clockid_res_ns = static_cast<std::uint64_t>(resolution.tv_sec) * 1000000000ULL +
                                static_cast<std::uint64_t>(resolution.tv_nsec);
    }
  }
  writer.finish(features);
  // --timestamp-filename: the finished file takes the time, as perf names it.
  std::string written = recording.options.output;
  std::string renamed;
  if (recording.options.timestamp_filename && !writer.pipe_mode()) {
    renamed = written + "." + timestamp_suffix();
    if (::rename(written.c_str(), renamed.c_str()) != 0) {
      throw std::runtime_error(fmt::format("cannot rename {} to {} (--timestamp-filename): {}",
                                           written, renamed, std::strerror(errno)));
    }
    written += ".<timestamp>";  // perf's summary line says it so
  }
  // Best effort, as perf: an unwritable HOME only loses the copy.
  if (!writer.pipe_mode() && session.kernel_addresses_visible() && kernel_hit &&
      !recording.options.no_buildid_cache) {
    save_kallsyms_copy(default_build_id_cache_dir());
  }
  int status = 0;
  if (recording.target.has_command()) status = session.wait_for_command();

  double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - recording.wall_start)
          .count();
  RecordingStats recorded = session.stats();
  const BufferStats& stats = recorded.totals;
  if (std::uint64_t left_out = recorded.kernel_samples_left_out;
      left_out != 0 && !recording.options.quiet) {
    fmt::print(stderr,
               "perfscope: note: left out {} sample{} that user-space-only events took in kernel "
               "code (skid into a system call or fault): this user may not see kernel addresses "
               "(perf_event_paranoid >= 2 without CAP_SYSLOG, or kernel.kptr_restrict)\n",
               left_out, left_out == 1 ? "" : "s");
  }
  if (!recording.options.quiet) {
    // perf's two lines first, as perf prints them: scripts written for perf read them.
    fmt::print(stderr, "[ perf record: Woken up {} times to write data ]\n", recorded.wakeups);
    if (!renamed.empty()) fmt::print(stderr, "[ perf record: Dump {} ]\n", renamed);
    // As perf: the output "-" and no sample count in pipe mode, none either without samples.
    fmt::print(stderr, "[ perf record: Captured and wrote {:.3f} MB {}{} ]\n",
               static_cast<double>(writer.file_size()) / (1024.0 * 1024.0),
               writer.pipe_mode() ? std::string("-") : written,
               writer.pipe_mode() || stats.samples == 0
                   ? std::string()
                   : fmt::format(" ({} samples)", stats.samples));
    print_samples_line(stats);
    fmt::print(stderr,
               "[ perfscope record: wrote {:.3f} MB to {}; recorder {:.3f} s wall, {:.3f} s CPU "
               "]\n",
               static_cast<double>(writer.file_size()) / 1e6,
               writer.pipe_mode() ? std::string("standard output")
               : renamed.empty()  ? recording.options.output
                                  : renamed,
               wall, cpu_seconds());
  }
  if (recording.completion && !recording.options.quiet) {
    print_stack_summary(*recording.completion);
  }
  if (recording.off_cpu) {
    print_off_cpu_summary(*recording.off_cpu, recording.off_cpu_capability,
                          std::max(stats.lost, stats.lost_samples));
  }
  if (recording.aux) {
    fmt::print(stderr, "[ perfscope record: {} trace: {:.3f} MB in AUXTRACE records ]\n",
               recording.aux->pmu, static_cast<double>(stats.aux_bytes) / 1e6);
    if (stats.aux_truncated != 0 || stats.aux_overwritten != 0) {
      fmt::print(stderr,
                 "perfscope: warning: trace data lost: {} AUX records say the area was full "
                 "(truncated), {} bytes were overwritten before they were read. Fix: a larger "
                 "AUX area (-m DATA,AUX), or trace less (a filter, user space only with :u)\n",
                 stats.aux_truncated, stats.aux_overwritten);
    }
  }
  if (auto warning =
          lost_samples_warning(stats.samples, std::max(stats.lost, stats.lost_samples))) {
    fmt::print(stderr, "perfscope: warning: {}\n", *warning);
  }
  if (!pushed) return 1;
  if (stopped && !recording.target.has_command()) return 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 0;
}
}  // namespace

RecordCommand::RecordCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "record");
  add_event_list_option(*app_, options_.events,
                        "Events to sample (default: cycles, or cpu-clock without a hardware PMU)");
  auto* frequency = app_->add_option_function<std::string>(
      "-F,--freq", [this](const std::string& text) { options_.frequency = parse_frequency(text); },
      "Samples per second (default 4000; max: kernel.perf_event_max_sample_rate)");
  frequency->type_name("HZ|max");
  auto* period = app_->add_option("-c,--count", options_.period, "Sample every N events");
  frequency->excludes(period);
  app_->add_flag("-g", options_.frame_pointer_graph,
                 "Call chains by frame pointers, with the callers they skip (a function that has "
                 "not set up its frame: libc's system-call wrappers, frameless routines) found "
                 "from a 1 KiB stack copy while recording; the file holds plain call chains");
  app_->add_option("--call-graph", options_.call_graph,
                   "Call chains: fp (the kernel's frame-pointer walk alone, as perf -g), or "
                   "dwarf[,SIZE] (user stack copies of SIZE bytes, default 8192, unwound while "
                   "recording: the file holds call chains, not the copies)");
  app_->add_flag("--keep-stacks", options_.keep_stacks,
                 "With --call-graph dwarf: write the stack copies to the file as perf does "
                 "(unwound by each report, through JIT code by its jitdump's CFI) instead of "
                 "unwinding them while recording");
  app_->add_option("-p,--pid", options_.pid, "Record a running process and all its threads");
  app_->add_option("-t,--tid", options_.tid, "Record one running thread");
  app_->add_flag("-a,--all-cpus", options_.all_cpus, "Record every CPU (system-wide)");
  app_->add_option("-C,--cpu", options_.cpu_list, "Record these CPUs (e.g. 0-3,8)");
  app_->add_option("-G,--cgroup", options_.cgroup, "Record the processes of a cgroup v2");
  app_->add_option("-o,--output", options_.output,
                   "Output file (default perf.data; - writes pipe mode to standard output)");
  app_->add_flag("--sample-cpu", options_.sample_cpu,
                 "Record the CPU of each sample also when not recording CPUs (-a, -C, -G)");
  app_->add_flag("--strict-freq", options_.strict_frequency,
                 "Refuse -F above kernel.perf_event_max_sample_rate instead of lowering it");
  app_->add_flag("--per-thread,-i,--no-inherit", options_.per_thread,
                 "One ring buffer per thread (-p, -t, or the command's first thread) instead of "
                 "per CPU; threads created later are not followed (perf's --per-thread)");
  app_->add_option_function<std::string>(
          "-m,--mmap-pages",
          [this](const std::string& text) {
            options_.mmap_note.clear();
            auto [data, aux] = parse_mmap_pages(text, options_.mmap_note);
            options_.mmap_pages = data;
            options_.aux_pages = aux;
          },
          "Ring buffer data pages per CPU or thread (or a size: 16M; rounded up to a power of "
          "two), and after a comma the AUX area's pages for an AUX-tracing event (intel_pt//, "
          "arm_spe_0//, ...)")
      ->type_name("DATA[,AUX]");
  app_->add_flag("--jit", options_.jit,
                 "Tell the command's runtime to describe its JIT code, and say what was set: "
                 "Node.js (a jitdump), the JVM (frame pointers, a perf map at exit), Python "
                 "3.12 and later (a perf map); the files are carried in the recording");
  app_->add_flag("--off-cpu", options_.off_cpu,
                 "Also record where threads wait: one offcpu-time sample per blocking interval "
                 "(stack at the switch-out, state, blocked ns)");
  app_->add_flag("--wall", options_.wall,
                 "Wall-clock profile: --off-cpu with cpu-clock on-CPU samples, so that each "
                 "thread's on- plus off-CPU time is its lifetime");
  app_->add_option_function<std::string>(
          "--off-cpu-thresh",
          [this](const std::string& text) { options_.off_cpu_thresh_ns = parse_duration_ns(text); },
          "Leave out (count only) blocking intervals shorter than this (e.g. 1ms, 50us)")
      ->type_name("TIME");
  app_->add_option("--off-cpu-every", options_.off_cpu_every,
                   "Sample every Nth switch-out only (each weighs N times its duration)")
      ->type_name("N");
  add_perf_record_options(*app_, options_);
  add_push_options(*app_, options_.push, true);
  // Everything from the first non-option word (or after --) is the command, as with perf.
  app_->prefix_command();
  app_->footer(command_rule_help("record") +
               "\n\nExamples:\n"
               "  perfscope record -F 999 -g -o perf.data -- ./myprogram --its-option\n"
               "  perfscope record -a -e cpu-clock -- sleep 5\n"
               "  perfscope record --wall -g -- ./myserver   (then: perfscope report --wall)");
}

int RecordCommand::run(bool verbose, std::vector<std::string> command) {
  // First: a stop signal that comes while the events open still ends the recording with a
  // complete file, rather than ending perfscope before it wrote one.
  install_stop_handlers();
  RecordOptions options = options_;
  options.push.keep_file = app_->get_option("-o")->count() > 0;
  options.command = app_->remaining();
  if (!command.empty())
    options.command.insert(options.command.end(), command.begin(), command.end());
  if (options.jit) set_jit_switches(options);
  options.filters = event_filters_in_order(*app_, [](const std::string& list) {
    std::size_t events = 0;
    for (const auto& group : parse_event_list(list)) events += group.events.size();
    return events;
  });
  return run_record(std::move(options), verbose);
}

int run_record(RecordOptions options, bool verbose) {
  install_stop_handlers();
  if (verbose && options.no_bpf_event) {
    fmt::print(stderr,
               "perfscope: --no-bpf-event: perfscope records no BPF program events (BPF_EVENT, "
               "and KSYMBOL for BPF programs) anyway: nothing to leave out\n");
  }
  auto recording = prepare(std::move(options));
  if (!recording) return 0;  // --dry-run
  record(*recording, verbose);
  return finish(*recording);
}

}  // namespace perfscope::cli
