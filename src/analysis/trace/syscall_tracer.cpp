#include "perfscope/analysis/trace/syscall_tracer.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/tracepoint_format.hpp"
#include "perfscope/analysis/perf_data/tracing_data.hpp"
#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/core/ring_buffer.hpp"
#include "perfscope/engine/syscall_tracing_check.hpp"
#include "perfscope/sys/child_process.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "perfscope/sys/perf_syscalls.hpp"

namespace perfscope {

namespace {

namespace sf = abi::sample_format;
using abi::RecordType;

std::string unknown_syscall_message(const std::string& name,
                                    const std::vector<std::string>& suggestions) {
  std::string message = fmt::format("'{}' is not a system call of this architecture", name);
  if (!suggestions.empty()) {
    message += " (did you mean ";
    for (std::size_t i = 0; i < suggestions.size(); ++i) {
      if (i != 0) message += i + 1 == suggestions.size() ? " or " : ", ";
      message += suggestions[i];
    }
    message += "?)";
  }
  message += "; the names are those of the kernel's table (ls /sys/kernel/tracing/events/syscalls)";
  return message;
}

std::uint64_t read_u64(std::span<const std::byte> payload, std::size_t offset) noexcept {
  std::uint64_t value = 0;
  if (offset + sizeof value <= payload.size()) {
    std::memcpy(&value, payload.data() + offset, sizeof value);
  }
  return value;
}

}  // namespace

UnknownSyscallError::UnknownSyscallError(std::string name, std::vector<std::string> suggestions)
    : std::invalid_argument(unknown_syscall_message(name, suggestions)),
      name_(std::move(name)),
      suggestions_(std::move(suggestions)) {}

std::vector<long> syscall_numbers(const SyscallTable& table, std::span<const std::string> names) {
  std::vector<long> numbers;
  for (const auto& name : names) {
    long number = -1;
    auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), number);
    bool numeric = error == std::errc{} && end == name.data() + name.size();
    if (numeric && number >= 0 && number < table.size()) {
      numbers.push_back(number);
      continue;
    }
    auto found = table.number(name);
    if (!found) throw UnknownSyscallError(name, table.closest_names(name));
    numbers.push_back(*found);
  }
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  return numbers;
}

std::string syscall_filter(std::span<const long> numbers, std::span<const pid_t> excluded_pids,
                           bool exclude_numbers) {
  std::string calls;
  for (long number : numbers) {
    if (!calls.empty()) calls += exclude_numbers ? " && " : " || ";
    calls += fmt::format("id {} {}", exclude_numbers ? "!=" : "==", number);
  }
  std::string processes;
  for (pid_t pid : excluded_pids) {
    if (!processes.empty()) processes += " && ";
    processes += fmt::format("common_pid != {}", pid);
  }
  if (processes.empty()) return calls;
  return calls.empty() ? processes : fmt::format("({}) && {}", calls, processes);
}

// Turns the session's records into calls: samples of event 0 are enters, of event 1 exits;
// COMM/FORK/EXIT name threads and end their open calls.
class SyscallTracer::Reader : public RecordingSink {
 public:
  explicit Reader(SyscallTracer& tracer) : tracer_(tracer) {}
  SyscallCallSink* sink = nullptr;

  void record(const RecordView& view, std::size_t event, const ParseConfig& config) override {
    auto type = static_cast<RecordType>(view.header.type);
    if (type == RecordType::sample) {
      DecodeError error;
      if (!decode_sample(view, config, sample_, error) || sample_.raw.empty()) {
        ++tracer_.malformed_;
        return;
      }
      on_sample(event);
      return;
    }
    if (type != RecordType::comm && type != RecordType::fork && type != RecordType::exit) return;
    DecodeError error;
    if (!decode_record(view, config, record_, error)) return;
    if (const auto* comm = std::get_if<CommRecord>(&record_)) {
      tracer_.comms_[static_cast<pid_t>(comm->tid)].assign(comm->comm);
    } else if (const auto* task = std::get_if<TaskRecord>(&record_)) {
      auto tid = static_cast<pid_t>(task->tid);
      if (type == RecordType::fork) {
        auto parent = tracer_.comms_.find(static_cast<pid_t>(task->ptid));
        if (parent != tracer_.comms_.end()) tracer_.comms_[tid] = parent->second;
      } else if (sink) {
        tracer_.pairer_.thread_exited(tid, *sink);
      }
    }
  }

 private:
  void on_sample(std::size_t event) {
    auto pid = static_cast<pid_t>(sample_.pid);
    auto tid = static_cast<pid_t>(sample_.tid);
    // A recording's samples of excluded processes (live, the kernel's filter dropped them: its
    // common_pid is the thread's id, as here).
    const std::vector<pid_t>& excluded = tracer_.options_.excluded_pids;
    if (!excluded.empty() && std::find(excluded.begin(), excluded.end(), tid) != excluded.end()) {
      return;
    }
    if (tracer_.first_time_ == 0) tracer_.first_time_ = sample_.time;
    tracer_.summary_.count_event(pid, tid);
    if (!sink) return;
    if (tracer_.replay_selects_) {
      auto number = static_cast<long>(
          read_u64(sample_.raw, event == 0 ? tracer_.enter_id_offset_ : tracer_.exit_id_offset_));
      const auto& numbers = tracer_.replayed_numbers_;
      bool listed = std::find(numbers.begin(), numbers.end(), number) != numbers.end();
      if (listed == tracer_.options_.exclude) return;
    }
    if (event == 0) {
      auto number = static_cast<long>(read_u64(sample_.raw, tracer_.enter_id_offset_));
      for (std::size_t i = 0; i < args_.size(); ++i) {
        args_[i] = read_u64(sample_.raw, tracer_.enter_args_offset_ + i * sizeof(std::uint64_t));
      }
      tracer_.pairer_.enter(pid, tid, sample_.time, number, args_, forward_);
    } else {
      auto number = static_cast<long>(read_u64(sample_.raw, tracer_.exit_id_offset_));
      auto ret = static_cast<std::int64_t>(read_u64(sample_.raw, tracer_.exit_ret_offset_));
      tracer_.pairer_.exit(pid, tid, sample_.time, number, ret, forward_);
    }
  }

  // Every finished call goes into the summary, then to the caller's sink.
  struct Forward : SyscallCallSink {
    explicit Forward(Reader& owner) : reader(owner) {}
    void call(const SyscallCall& call) override {
      reader.tracer_.summary_.add(call);
      reader.sink->call(call);
    }
    Reader& reader;
  };

  SyscallTracer& tracer_;
  SampleRecord sample_;
  Record record_;
  std::array<std::uint64_t, 6> args_{};
  Forward forward_{*this};
};

SyscallTracer::SyscallTracer(Target target, SyscallTraceOptions options)
    : target_(std::move(target)),
      options_(std::move(options)),
      table_(SyscallTable::for_this_machine()),
      signatures_(table_) {
  std::vector<long> numbers = syscall_numbers(table_, options_.syscalls);
  SyscallTracingSupport support = probe_syscall_tracing();
  if (!support.usable) {
    throw Error(support.error, "cannot trace system calls here: " + support.problem,
                "Fix: " + support.fix + ".");
  }
  missing_calls_ = table_.calls_missing_from_table(support.tracefs);
  TracepointCatalog catalog;
  const TracepointFormat& enter = catalog.load("raw_syscalls", "sys_enter");
  const TracepointFormat& exit = catalog.load("raw_syscalls", "sys_exit");
  auto offset = [](const TracepointFormat& format, std::string_view field, std::size_t fallback) {
    const TracepointField* found = format.field(field);
    return found ? found->offset : fallback;
  };
  enter_id_offset_ = offset(enter, "id", enter_id_offset_);
  enter_args_offset_ = offset(enter, "args", enter_args_offset_);
  exit_id_offset_ = offset(exit, "id", exit_id_offset_);
  exit_ret_offset_ = offset(exit, "ret", exit_ret_offset_);

  bool cpu_wide = target_.kind() == Target::Kind::cpus || target_.kind() == Target::Kind::cgroup;
  std::vector<pid_t> excluded = options_.excluded_pids;
  if (cpu_wide) excluded.push_back(::getpid());
  std::string filter = syscall_filter(numbers, excluded, options_.exclude);
  std::vector<EventGroupSpec> groups;
  for (auto [id, name] : {std::pair{support.enter_id, "raw_syscalls:sys_enter"},
                          std::pair{support.exit_id, "raw_syscalls:sys_exit"}}) {
    EventSpec spec;
    spec.text = spec.name = name;
    // Tracepoints fire in the kernel: the event must not exclude it.
    spec.attr = EventAttr::tracepoint(id).set_sample_period(1).set_sample_type(sf::tid | sf::time |
                                                                               sf::raw);
    spec.filter = filter;
    groups.push_back(EventGroupSpec{{std::move(spec)}, false});
  }
  SamplingOptions sampling;
  sampling.inherit = options_.inherit;
  sampling.enable_at_start = options_.enable_at_start;
  sampling.data_pages = options_.data_pages;
  // Two events per call: a program making calls in a loop fills the default buffer in
  // microseconds, so root (whose buffers are not bounded by perf_event_mlock_kb) gets larger ones.
  if (sampling.data_pages == 0 && ::geteuid() == 0) sampling.data_pages = 1024;
  session_ = std::make_unique<RecordingSession>(std::move(groups), target_, sampling);
  reader_ = std::make_unique<Reader>(*this);
}

SyscallTracer::SyscallTracer(Recorded, SyscallTraceOptions options)
    : target_(Target::cpus()),
      options_(std::move(options)),
      table_(SyscallTable::for_this_machine()),
      signatures_(table_) {
  replayed_numbers_ = syscall_numbers(table_, options_.syscalls);
  replay_selects_ = !options_.syscalls.empty();
  reader_ = std::make_unique<Reader>(*this);
}

void SyscallTracer::replay(const PerfDataReader& reader, SyscallCallSink& sink) {
  // Each event's part: 0 the enters, 1 the exits, by the name the recording gives it.
  std::vector<int> part(reader.events().size(), -1);
  bool any = false;
  for (std::size_t i = 0; i < reader.events().size(); ++i) {
    std::string_view name = reader.events()[i].name;
    name = name.substr(0, name.find(':', name.find(':') + 1));  // "raw_syscalls:sys_enter:u"
    if (name == "raw_syscalls:sys_enter") part[i] = 0;
    if (name == "raw_syscalls:sys_exit") part[i] = 1;
    any |= part[i] >= 0;
  }
  if (!any) {
    throw std::runtime_error(fmt::format(
        "{} has no raw_syscalls:sys_enter or sys_exit samples: record the calls with trace "
        "record -- COMMAND",
        reader.source()));
  }
  // The recording's own formats place the fields (those of this machine when it has none).
  if (const auto& section = reader.features().tracing_data) {
    TracepointCatalog catalog;
    std::string error;
    for (const auto& format : tracing_data_formats(*section, &error)) {
      if (format.system != "raw_syscalls") continue;
      try {
        const TracepointFormat& loaded = catalog.load_text(format.system, format.text);
        auto offset = [&](std::string_view field, std::size_t& into) {
          if (const TracepointField* found = loaded.field(field)) into = found->offset;
        };
        if (loaded.name() == "sys_enter") {
          offset("id", enter_id_offset_);
          offset("args", enter_args_offset_);
        } else if (loaded.name() == "sys_exit") {
          offset("id", exit_id_offset_);
          offset("ret", exit_ret_offset_);
        }
      } catch (const Error&) {
        // The standard offsets stand.
      }
    }
  }
  reader_->sink = &sink;
  auto error = reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    const auto& config = reader.events()[record.event].config;
    if (record.view.header.type == static_cast<std::uint32_t>(RecordType::sample)) {
      if (part[record.event] >= 0) {
        reader_->record(record.view, static_cast<std::size_t>(part[record.event]), config);
      }
    } else if (record.view.header.type < 64) {
      reader_->record(record.view, 0, config);
      // What the recorder lost, as a live trace counts it.
      auto type = static_cast<RecordType>(record.view.header.type);
      if (type == RecordType::lost || type == RecordType::lost_samples) {
        Record decoded;
        DecodeError decode_error;
        if (!decode_record(record.view, config, decoded, decode_error)) return;
        if (const auto* lost = std::get_if<LostRecord>(&decoded)) replayed_lost_ += lost->lost;
        if (const auto* lost = std::get_if<LostSamplesRecord>(&decoded)) {
          replayed_lost_samples_ += lost->lost;
        }
      }
    }
  });
  finish_open_calls(sink);
  reader_->sink = nullptr;
  if (error) throw *error;
}

void SyscallTracer::finish_open_calls(SyscallCallSink& sink) {
  struct Summarize : SyscallCallSink {
    Summarize(SyscallSummary& into, SyscallCallSink& then) : summary(into), next(then) {}
    void call(const SyscallCall& call) override {
      summary.add(call);
      next.call(call);
    }
    SyscallSummary& summary;
    SyscallCallSink& next;
  } summarize(summary_, sink);
  pairer_.finish(summarize);
}

SyscallTracer::~SyscallTracer() = default;

void SyscallTracer::open() {
  session_->open();
  if (session_->sampling().opened_attr(0).has(abi::attr_flag::exclude_kernel)) {
    throw Error(EACCES,
                "cannot trace system calls: this user may sample user space only "
                "(perf_event_paranoid 2 without CAP_PERFMON), and the syscall tracepoints fire "
                "in the kernel",
                "Fix: run as root, or grant CAP_PERFMON (sudo setcap cap_perfmon+ep $(command -v "
                "perfscope)), or sudo sysctl kernel.perf_event_paranoid=1.");
  }
  // The names of the threads there already (a command has none yet: its COMM comes at exec).
  session_->synthesize(*reader_);
}

void SyscallTracer::start() {
  session_->start();
  target_watch_ = target_.exit_watch();
}

void SyscallTracer::enable() { session_->sampling().enable(); }

std::size_t SyscallTracer::poll(SyscallCallSink& sink, int timeout_ms) {
  reader_->sink = &sink;
  std::size_t records = session_->poll(*reader_, timeout_ms);
  reader_->sink = nullptr;
  return records;
}

void SyscallTracer::stop(SyscallCallSink& sink) {
  reader_->sink = &sink;
  session_->stop(*reader_);
  finish_open_calls(sink);
  reader_->sink = nullptr;
}

bool SyscallTracer::target_ended() {
  if (session_->command_exited()) return true;
  return target_watch_.exited();
}

bool SyscallTracer::terminate_command() noexcept { return session_->terminate_command(); }

int SyscallTracer::wait_for_command() { return session_->wait_for_command(); }

void SyscallTracer::interrupt_poll() noexcept { session_->interrupt_poll(); }

std::string_view SyscallTracer::comm(pid_t tid) const noexcept {
  auto found = comms_.find(tid);
  return found == comms_.end() ? std::string_view{} : std::string_view(found->second);
}

SyscallTraceStats SyscallTracer::stats() const noexcept {
  SyscallTraceStats stats;
  stats.events = summary_.events();
  if (session_) {
    RecordingStats recorded = session_->stats();
    stats.lost = recorded.totals.lost;
    stats.lost_samples = recorded.totals.lost_samples;
  } else {
    stats.lost = replayed_lost_;
    stats.lost_samples = replayed_lost_samples_;
  }
  stats.malformed = malformed_;
  return stats;
}

std::vector<std::string> SyscallTracer::notices() const {
  std::vector<std::string> notices = session_->sampling().notices();
  if (!missing_calls_.empty()) {
    std::string names;
    for (const auto& name : missing_calls_) names += (names.empty() ? "" : ", ") + name;
    notices.push_back(fmt::format(
        "this kernel has {} system call{} newer than perfscope's {} table ({}): they print as "
        "syscall_NUMBER",
        missing_calls_.size(), missing_calls_.size() == 1 ? "" : "s", table_.architecture(),
        names));
  }
  return notices;
}

}  // namespace perfscope
