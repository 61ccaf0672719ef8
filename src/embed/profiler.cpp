#include "perfscope/embed/profiler.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/abi/user_registers.hpp"
#include "perfscope/analysis/perf_data/host_description.hpp"
#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/engine/sampling_session.hpp"
#include "perfscope/engine/target.hpp"
#include "perfscope/sys/event_poll.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

namespace sf = abi::sample_format;
namespace flag = abi::attr_flag;
namespace misc = abi::record_misc;

// How long the drain thread waits for a buffer's wakeup before draining anyway. The wakeups
// normally come first; this bounds the wait when the thread that owned a per-CPU buffer's fd has
// exited (its fd hangs up and leaves the epoll set).
constexpr int drain_timeout_ms = 100;

}  // namespace

// One start()/stop(): the recording session, the profile being built, and the drain thread.
struct Profiler::Run final : RecordingSink {
  Run(std::vector<EventGroupSpec> groups, Target target, SamplingOptions sampling,
      const ProfileOptions& profile)
      : session(std::move(groups), std::move(target), sampling), builder(profile) {}

  RecordingSession session;
  ProfileBuilder builder;
  std::size_t tid_offset = 0;  // of the TID field in every sample (same layout for all events)
  pid_t drain_tid = -1;        // written by the drain thread before it consumes anything
  std::uint64_t drain_thread_samples = 0;
  std::uint64_t wakeups = 0;
  std::atomic<bool> stopping{false};
  std::exception_ptr drain_error;
  std::thread drainer;

  void record(const RecordView& view, std::size_t event, const ParseConfig&) override {
    if (view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample) && drain_tid > 0 &&
        tid_offset + sizeof(std::uint32_t) <= view.bytes.size()) {
      std::uint32_t tid = 0;
      std::memcpy(&tid, view.bytes.data() + tid_offset, sizeof tid);
      if (static_cast<pid_t>(tid) == drain_tid) {
        ++drain_thread_samples;
        return;
      }
    }
    builder.observe(view, static_cast<std::uint32_t>(event));
  }

  void drain_loop() noexcept {
    drain_tid = sys::current_thread_id();
    try {
      while (!stopping.load(std::memory_order_acquire)) {
        if (session.poll(*this, drain_timeout_ms) > 0) ++wakeups;
      }
    } catch (...) {
      // Rethrown by stop(): the buffers are drained there one last time all the same.
      drain_error = std::current_exception();
    }
  }

  // With every signal blocked, so that signals sent to the process go to the program's own
  // threads, never to this one.
  void start_drain_thread() {
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &before);
    try {
      drainer = std::thread([this] { drain_loop(); });
    } catch (...) {
      pthread_sigmask(SIG_SETMASK, &before, nullptr);
      throw;
    }
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }

  void stop_drain_thread() noexcept {
    stopping.store(true, std::memory_order_release);
    session.interrupt_poll();
    if (drainer.joinable()) drainer.join();
  }
};

Profiler::Profiler(ProfilerOptions options) : options_(std::move(options)) {
  if (options_.buffer_pages == 0 || !std::has_single_bit(options_.buffer_pages)) {
    throw std::invalid_argument(fmt::format(
        "ProfilerOptions::buffer_pages {}: a ring buffer needs a power of two data pages (e.g. 64)",
        options_.buffer_pages));
  }
  if (options_.call_graph == ProfilerCallGraph::dwarf &&
      (options_.dwarf_stack_size == 0 || options_.dwarf_stack_size > 65528 ||
       options_.dwarf_stack_size % 8 != 0)) {
    throw std::invalid_argument(fmt::format(
        "ProfilerOptions::dwarf_stack_size {}: give a multiple of 8 between 8 and 65528 bytes",
        options_.dwarf_stack_size));
  }
  if (options_.frequency == 0 && options_.period == 0) {
    throw std::invalid_argument(
        "ProfilerOptions: frequency and period are both 0; give samples per second (frequency) "
        "or events per sample (period)");
  }
  if (options_.period == 0) {
    auto max_rate = sys::read_sysctl("perf_event_max_sample_rate");
    if (max_rate && *max_rate > 0 && options_.frequency > static_cast<std::uint64_t>(*max_rate)) {
      notices_.push_back(fmt::format(
          "sampling at {} Hz instead of {} Hz: kernel.perf_event_max_sample_rate is {} (the "
          "kernel lowers it when sampling interrupts take too long)",
          *max_rate, options_.frequency, *max_rate));
      options_.frequency = static_cast<std::uint64_t>(*max_rate);
    }
  }
  events_ = options_.events;
  if (events_.empty()) {
    events_ = "cycles";
    if (!can_sample_cpu_cycles(options_.frequency)) {
      events_ = "cpu-clock";
      notices_.push_back(
          "no hardware PMU can sample cycles here (a VM without one?): sampling cpu-clock instead");
    }
  }
  // Parsed and set up once here, so that a malformed string fails at construction.
  groups_ = parse_event_list(events_);
  for (auto& group : groups_) {
    for (auto& spec : group.events) configure_sampling(spec);
  }
  base_notices_ = notices_.size();
}

void Profiler::configure_sampling(EventSpec& spec) {
  EventAttr& attr = spec.attr;
  std::uint64_t sample_type = attr.raw().sample_type | sf::ip | sf::tid | sf::time | sf::period;
  if (options_.period > 0) {
    attr.set_sample_period(options_.period);
  } else if (attr.raw().sample_period_or_freq == 0) {
    if (attr.type() == static_cast<std::uint32_t>(abi::EventType::tracepoint)) {
      attr.set_sample_period(1);  // like perf: every hit of a tracepoint
    } else {
      attr.set_sample_freq(options_.frequency);
    }
  } else if (attr.has(flag::freq)) {
    // A freq= term of the string: the kernel refuses rates above its maximum.
    auto max_rate = sys::read_sysctl("perf_event_max_sample_rate");
    std::uint64_t asked = attr.raw().sample_period_or_freq;
    if (max_rate && *max_rate > 0 && asked > static_cast<std::uint64_t>(*max_rate)) {
      attr.set_sample_freq(static_cast<std::uint64_t>(*max_rate));
      notices_.push_back(fmt::format(
          "{} samples at {} Hz instead of {} Hz: kernel.perf_event_max_sample_rate is {}",
          spec.name, *max_rate, asked, *max_rate));
    }
  }
  std::string mode = spec.call_graph;
  if (mode.empty()) {
    mode = options_.call_graph == ProfilerCallGraph::frame_pointers ? "fp"
           : options_.call_graph == ProfilerCallGraph::dwarf        ? "dwarf"
                                                                    : "no";
  }
  if (mode == "fp") {
    sample_type |= sf::callchain;
  } else if (mode == "dwarf") {
    sample_type |= sf::callchain | sf::regs_user | sf::stack_user;
    attr.set_sample_regs_user(abi::dwarf_unwind_register_mask());
    attr.set_sample_stack_user(spec.stack_size ? spec.stack_size : options_.dwarf_stack_size);
    // The user part of the stack comes from the unwinder; the kernel's walk would only repeat
    // (or, without frame pointers, truncate) it.
    attr.set_flag(flag::exclude_callchain_user);
    dwarf_ = true;
  } else if (mode != "no") {
    throw std::invalid_argument(fmt::format(
        "{}: call-graph={} is not supported by the profiler; use fp or dwarf", spec.name, mode));
  }
  attr.set_sample_type(sample_type);
}

Profiler::~Profiler() {
  if (!running_) return;
  try {
    stop();
  } catch (...) {
    // A destructor cannot report it; stop() has released everything before it throws.
  }
}

void Profiler::start() {
  if (running_) {
    throw std::logic_error(
        "perfscope::Profiler::start(): the profiler is already running; call stop() first (each "
        "start() begins a new profile)");
  }
  std::vector<EventGroupSpec> groups = groups_;
  SamplingOptions sampling;
  sampling.data_pages = options_.buffer_pages;
  sampling.inherit = options_.scope == ProfilerScope::process;
  // perfscope's unwinder finds .eh_frame_hdr through the read-only segment that holds it.
  sampling.data_mmaps = dwarf_;
  Target target = options_.scope == ProfilerScope::process ? Target::process(::getpid())
                                                           : Target::calling_thread();
  auto run =
      std::make_unique<Run>(std::move(groups), std::move(target), sampling, options_.profile);
  RecordingSession& session = run->session;
  session.check_fit([](const SampleMisfit& misfit) {
    return fmt::format(
        "Fix: ProfilerOptions::buffer_pages = {} or more (at least {}: a buffer that holds one "
        "sample loses the next while it is read){}.",
        misfit.pages_advised, misfit.pages_needed,
        misfit.sample.stack_dump != 0 ? ", or a smaller ProfilerOptions::dwarf_stack_size" : "");
  });
  session.open();
  const SamplingSession& opened = session.sampling();
  notices_.resize(base_notices_);
  for (const auto& notice : opened.notices()) notices_.push_back(notice);

  for (std::size_t i = 0; i < opened.events().size(); ++i) {
    run->builder.add_event(opened.events()[i].name, opened.config(i));
  }
  const ParseConfig& first = opened.config(0);
  run->tid_offset = sizeof(abi::RecordHeader) +
                    (first.has(sf::identifier) ? sizeof(std::uint64_t) : 0) +
                    (first.has(sf::ip) ? sizeof(std::uint64_t) : 0) + sizeof(std::uint32_t);

  // The process is already running: its mappings and threads are read from /proc now, as perf
  // record -p synthesizes them, before sampling starts (the profiler's own work stays out of the
  // profile). A library mapped between this read and the enable below has no MMAP record: its
  // samples would show as addresses.
  session.synthesize(*run);

  run->start_drain_thread();
  try {
    session.start();
  } catch (...) {
    run->stop_drain_thread();
    throw;
  }
  run_ = std::move(run);
  running_ = true;
  finished_ = false;
  profile_ = Profile{};
  stats_ = ProfilerStats{};
}

void Profiler::stop() {
  if (!running_) {
    throw std::logic_error(
        "perfscope::Profiler::stop(): the profiler is not running; call start() first");
  }
  std::unique_ptr<Run> run = std::move(run_);
  running_ = false;
  RecordingSession& session = run->session;
  // Sampling stops first, then the drain thread; what the buffers still hold is read here.
  session.sampling().stop();
  run->stop_drain_thread();
  session.stop(*run);
  RecordingStats recorded = session.stats();
  const BufferStats& totals = recorded.totals;
  stats_.samples = totals.samples + recorded.kernel_samples_left_out;
  stats_.lost_records = totals.lost_records;
  stats_.lost = totals.lost;
  stats_.lost_samples = totals.lost_samples;
  stats_.throttles = totals.throttles;
  stats_.kernel_samples_left_out = recorded.kernel_samples_left_out;
  stats_.drain_thread_samples = run->drain_thread_samples;
  stats_.wakeups = run->wakeups;

  profile_ = run->builder.finish();
  ProfileSummary& summary = profile_.summary;
  PerfDataFeatures host = describe_host(own_command_line());
  summary.hostname = host.hostname.value_or("");
  summary.os_release = host.osrelease.value_or("");
  summary.arch = host.arch.value_or("");
  summary.cpu_description = host.cpudesc.value_or("");
  if (host.cmdline) {
    for (const auto& word : *host.cmdline) {
      if (!summary.command_line.empty()) summary.command_line.push_back(' ');
      summary.command_line += word;
    }
  }
  if (recorded.kernel_samples_left_out != 0) {
    summary.warnings.push_back(fmt::format(
        "left out {} sample{} that user-space-only events took in kernel code (skid into a "
        "system call or fault): kernel addresses are hidden from this user",
        recorded.kernel_samples_left_out, recorded.kernel_samples_left_out == 1 ? "" : "s"));
  }

  finished_ = true;
  std::exception_ptr drain_error = run->drain_error;
  run.reset();
  if (drain_error) std::rethrow_exception(drain_error);
}

const Profile& Profiler::profile() const {
  if (!finished_) {
    throw std::logic_error(running_ ? "perfscope::Profiler: the profile is not finished; call "
                                      "stop() before reading or writing it"
                                    : "perfscope::Profiler: no profile yet; call start() and "
                                      "stop() around the code to profile first");
  }
  return profile_;
}

void Profiler::write(std::ostream& out, ExportFormat format) const {
  write_profile(profile(), format, out);
}

void Profiler::write_file(const std::string& path, ExportFormat format) const {
  const Profile& finished = profile();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    int errnum = errno != 0 ? errno : EIO;
    throw Error(errnum, fmt::format("cannot create '{}': {}", path, std::strerror(errnum)),
                "check that its directory exists and is writable.");
  }
  try {
    write_profile(finished, format, out);
    out.flush();
  } catch (const std::exception& error) {
    throw Error(EIO, fmt::format("cannot write '{}': {}", path, error.what()),
                "check the free space of its file system.");
  }
  if (!out) {
    throw Error(EIO, fmt::format("cannot write '{}'", path),
                "check the free space of its file system.");
  }
}

}  // namespace perfscope
