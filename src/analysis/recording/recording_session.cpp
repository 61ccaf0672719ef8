#include "perfscope/analysis/recording/recording_session.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/synthesized_records.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

namespace flag = abi::attr_flag;
namespace misc = abi::record_misc;

// A round that brought at least this much means the events write faster than one read per
// wake-up takes away: read again at once rather than wait for the next wake-up (as perf record
// does), so that the buffers do not fill between wake-ups.
constexpr std::uint64_t streaming_bytes = 64 * 1024;

}  // namespace

// Between the sampling session and the sink: leaves out the samples of user-only events in
// kernel code, and notes where each round ends.
class RecordingSession::Filter final : public RecordConsumer {
 public:
  Filter(RecordingSession& session, RecordingSink& sink) : session_(session), sink_(sink) {}
  void consume(const SessionRecord& record) override {
    const RecordView& view = record.view;
    if (view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample) &&
        record.event < session_.user_only_.size() && session_.user_only_[record.event]) {
      auto mode = view.header.misc & misc::cpumode_mask;
      if (mode == misc::kernel || mode == misc::hypervisor) {
        ++session_.kernel_samples_left_out_;
        return;
      }
    }
    sink_.record(view, record.event, record.config);
  }
  void consume_aux(const SessionAuxData& data) override { sink_.aux_data(data); }

 private:
  RecordingSession& session_;
  RecordingSink& sink_;
};

RecordingSession::RecordingSession(std::vector<EventGroupSpec> groups, Target target,
                                   SamplingOptions options)
    : target_(target),
      synthesis_{options.namespaces, options.cgroups},
      sampling_(std::move(groups), std::move(target), options) {}

void RecordingSession::check_fit(const std::function<std::string(const SampleMisfit&)>& fix) const {
  if (auto misfit = sampling_.sample_that_cannot_fit()) {
    throw Error(EINVAL, misfit->summary(), fix(*misfit));
  }
}

void RecordingSession::open() { sampling_.open(); }

std::vector<PerfDataEvent> RecordingSession::file_events() const {
  std::vector<PerfDataEvent> events;
  for (std::size_t i = 0; i < sampling_.events().size(); ++i) {
    events.push_back(
        {sampling_.opened_attr(i).raw(), sampling_.events()[i].name, sampling_.event_ids(i)});
  }
  return events;
}

std::optional<ClockData> RecordingSession::clock_data() const {
  EventAttr first = sampling_.opened_attr(0);
  if (!first.has(flag::use_clockid)) return std::nullopt;
  return clock_reference(first.raw().clockid);
}

void RecordingSession::synthesize(RecordingSink& sink) {
  const ParseConfig& config = sampling_.config(0);
  std::size_t trailer = config.sample_id_size();
  auto to_sink = [&](std::span<const std::byte> bytes) {
    sink.record(record_view(bytes), 0, config);
  };
  // False when /proc/kallsyms shows us zeros: kernel addresses are not ours to know. The kernel
  // still samples user-only events when the counter overflows on the way into the kernel
  // (skid), with a kernel address as the IP: those samples could only be "[unknown]".
  kernel_addresses_visible_ = synthesize_kernel_map(trailer, to_sink);
  user_only_.clear();
  if (!kernel_addresses_visible_) {
    for (std::size_t i = 0; i < sampling_.events().size(); ++i) {
      user_only_.push_back(sampling_.opened_attr(i).has(flag::exclude_kernel));
    }
  }
  if (synthesis_.cgroups) synthesize_cgroups(trailer, to_sink, cgroup2_mount());
  if (!synthesis_.tasks) {
    // perf --synth=no still names the command it starts (a gated copy of the recorder).
    if (sampling_.command_pid() > 0) {
      synthesize_process_threads(sampling_.command_pid(), trailer, to_sink, synthesis_);
    }
    return;
  }
  switch (target_.kind()) {
    case Target::Kind::process:
      synthesize_process(target_.pid(), trailer, to_sink, synthesis_);
      break;
    case Target::Kind::thread:
      synthesize_process(process_of_thread(target_.pid()), trailer, to_sink, synthesis_);
      break;
    case Target::Kind::calling_thread:
      synthesize_process(::getpid(), trailer, to_sink, synthesis_);
      break;
    case Target::Kind::cpus:
    case Target::Kind::cgroup: synthesize_all_processes(trailer, to_sink, synthesis_); break;
    case Target::Kind::command:
      // The command is a gated copy of the recorder until its exec: name it, so that the samples
      // the kernel takes in the exec path (before COMM exec) have a command, as perf's do. Its
      // maps are the recorder's, not the command's: none are written.
      synthesize_process_threads(sampling_.command_pid(), trailer, to_sink, synthesis_);
      break;
  }
}

void RecordingSession::start() { sampling_.start(); }

std::size_t RecordingSession::poll(RecordingSink& sink, int timeout_ms, int max_rounds) {
  Filter filter(*this, sink);
  std::size_t delivered = 0;
  for (int round = 0; round < max_rounds; ++round) {
    std::uint64_t bytes_before = sampling_.total_stats().bytes;
    std::size_t count = sampling_.poll(filter, round == 0 ? timeout_ms : 0);
    if (count == 0) break;
    delivered += count;
    sink.buffers_filled(sampling_.fullest_fill());
    sink.end_round();
    if (sampling_.command_exited()) break;
    if (sampling_.total_stats().bytes - bytes_before < streaming_bytes) break;
  }
  return delivered;
}

void RecordingSession::stop(RecordingSink& sink) {
  sampling_.stop();
  Filter filter(*this, sink);
  if (sampling_.drain(filter) > 0) sink.end_round();
  // A buffer still full when the events stopped never got to write the LOST record for what it
  // dropped last: the kernel's own count says how much that was, and the recording says it too.
  std::uint64_t reported = sampling_.total_stats().lost;
  unreported_lost_ = 0;
  kernel_lost_samples_ = 0;
  auto kernel_lost = sampling_.kernel_lost();
  if (!kernel_lost || *kernel_lost == 0) return;
  const ParseConfig& config = sampling_.config(0);
  auto write = [&](std::span<const std::byte> bytes) {
    sink.record(record_view(bytes), 0, config);
  };
  if (*kernel_lost > reported) {
    unreported_lost_ = *kernel_lost - reported;
    auto ids = sampling_.event_ids(0);
    synthesize_lost(ids.empty() ? 0 : ids.front(), unreported_lost_, config.sample_id_size(),
                    write);
  }
  // The kernel's whole count, as perf record writes it at its end: perf report's "Total Lost
  // Samples" of this file is then the count this recorder reported, not 0.
  kernel_lost_samples_ = *kernel_lost;
  synthesize_lost_samples(kernel_lost_samples_, config.sample_id_size(), write);
  sink.end_round();
}

bool RecordingSession::terminate_command() noexcept {
  if (!target_.has_command() || sampling_.command_exited()) return false;
  pid_t pid = sampling_.command_pid();
  // Still our unreaped child (wait_for_command reaps it): the pid cannot name another process.
  return pid > 0 && ::kill(pid, SIGTERM) == 0;
}

RecordingStats RecordingSession::stats() const noexcept {
  RecordingStats stats;
  stats.totals = sampling_.total_stats();
  if (unreported_lost_ != 0) {
    ++stats.totals.lost_records;
    stats.totals.lost += unreported_lost_;
  }
  stats.unreported_lost = unreported_lost_;
  stats.totals.lost_samples += kernel_lost_samples_;
  stats.kernel_samples_left_out = kernel_samples_left_out_;
  stats.wakeups = sampling_.wakeups();
  stats.totals.samples -= std::min(stats.totals.samples, kernel_samples_left_out_);
  return stats;
}

std::vector<std::string> own_command_line() {
  std::vector<std::string> words;
  auto cmdline = sys::read_text_file("/proc/self/cmdline");
  if (!cmdline) return words;
  std::size_t start = 0;
  for (std::size_t i = 0; i < cmdline->size(); ++i) {
    if ((*cmdline)[i] != '\0') continue;
    words.push_back(cmdline->substr(start, i - start));
    start = i + 1;
  }
  char exe[4096];
  ssize_t length = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (length > 0 && !words.empty()) words.front().assign(exe, static_cast<std::size_t>(length));
  return words;
}

pid_t process_of_thread(pid_t tid) {
  auto status = sys::read_text_file("/proc/" + std::to_string(tid) + "/status");
  if (!status) return tid;
  auto at = status->find("\nTgid:");
  if (at == std::string::npos) return tid;
  return static_cast<pid_t>(std::strtol(status->c_str() + at + 6, nullptr, 10));
}

}  // namespace perfscope
