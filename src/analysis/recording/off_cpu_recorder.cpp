#include "perfscope/analysis/recording/off_cpu_recorder.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "analysis/record_bytes.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/tracepoint_format.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_attr.hpp"
#include "perfscope/core/event_spec.hpp"

namespace perfscope {

namespace {

namespace sf = abi::sample_format;
namespace flag = abi::attr_flag;
namespace misc = abi::record_misc;
using abi::RecordType;

// What the offcpu-time samples carry beyond the session's identity fields: the stack fields are
// added when the switch event samples them.
using record_bytes::put_bytes;
using record_bytes::put_u64;

constexpr std::uint64_t own_fields = sf::ip | sf::tid | sf::time | sf::period | sf::raw;
constexpr std::uint64_t stack_fields = sf::callchain | sf::regs_user | sf::stack_user;
constexpr std::uint64_t identity_bits =
    sf::identifier | sf::tid | sf::time | sf::id | sf::stream_id | sf::cpu;

std::int64_t read_prev_state(std::span<const std::byte> payload, std::size_t offset,
                             std::size_t size) {
  if (size != 4 && size != 8) return 0;
  if (offset + size > payload.size()) return 0;
  if (size == 4) {
    std::int32_t value = 0;
    std::memcpy(&value, payload.data() + offset, sizeof value);
    return value;
  }
  std::int64_t value = 0;
  std::memcpy(&value, payload.data() + offset, sizeof value);
  return value;
}

}  // namespace

PerfDataEvent off_cpu_file_event(const OffCpuSource& source) {
  const abi::PerfEventAttr& model = source.model;
  EventAttr attr = EventAttr::software(abi::SoftwareEvent::bpf_output);
  std::uint64_t sample_type = own_fields | (source.identity_fields & identity_bits);
  if (source.switch_event) sample_type |= model.sample_type & stack_fields;
  attr.set_sample_type(sample_type);
  attr.set_sample_period(1);
  attr.set_flag(flag::sample_id_all);
  if ((model.flags & flag::use_clockid) != 0) attr.set_clockid(model.clockid);
  if ((sample_type & sf::regs_user) != 0) attr.set_sample_regs_user(model.sample_regs_user);
  if ((sample_type & sf::stack_user) != 0) attr.set_sample_stack_user(model.sample_stack_user);
  if ((model.flags & flag::exclude_callchain_user) != 0)
    attr.set_flag(flag::exclude_callchain_user);
  if ((model.flags & flag::exclude_kernel) != 0) attr.set_flag(flag::exclude_kernel);
  return PerfDataEvent{attr.raw(), std::string(off_cpu_event_name), {OffCpuRecorder::sample_id}};
}

OffCpuRecorder::OffCpuRecorder(RecordingSink& next, OffCpuSource source, OffCpuOptions options)
    : next_(next), source_(source), options_(options) {
  if (options_.every == 0) options_.every = 1;
  attr_ = off_cpu_file_event(source_).attr;
  config_ = ParseConfig::from_attr(attr_);
  model_config_ = ParseConfig::from_attr(source_.model);
  out_.reserve(512);
}

void OffCpuRecorder::record(const RecordView& view, std::size_t event, const ParseConfig& config) {
  auto type = static_cast<RecordType>(view.header.type);
  Switch change;
  switch (type) {
    case RecordType::sample: {
      if (!source_.switch_event || event != *source_.switch_event) break;
      DecodeError error;
      if (!decode_sample(view, config, decoded_, error)) return;
      change.kind = SwitchKind::out_sample;
      change.time = decoded_.time;
      change.pid = decoded_.pid;
      change.tid = decoded_.tid;
      change.cpu = decoded_.has(sf::cpu) ? decoded_.cpu : 0;
      change.prev_state =
          read_prev_state(decoded_.raw, source_.prev_state_offset, source_.prev_state_size);
      // The idle task and a dying thread's last switch: nothing waits.
      if (change.tid == 0 || prev_state_is_exit(change.prev_state)) return;
      change.copy = keep_copy(view.bytes);
      last_time_ = std::max(last_time_, change.time);
      queue_.push_back(change);
      return;
    }
    case RecordType::switch_:
    case RecordType::switch_cpu_wide: {
      SampleId id;
      if (!decode_sample_id(view, config, id) || !id.has(sf::tid) || !id.has(sf::time)) return;
      last_time_ = std::max(last_time_, id.time);
      if (id.tid == 0) return;  // the idle task
      change.time = id.time;
      change.pid = id.pid;
      change.tid = id.tid;
      change.cpu = id.has(sf::cpu) ? id.cpu : 0;
      bool out = (view.header.misc & misc::switch_out) != 0;
      change.kind = out ? SwitchKind::out_record : SwitchKind::in;
      change.preempted = (view.header.misc & misc::switch_out_preempt) != 0;
      queue_.push_back(change);
      return;  // the intervals are what the switches were recorded for
    }
    case RecordType::fork: {
      // A new thread starts with a switch-in, not blocked since before the recording.
      constexpr std::size_t tid_at = sizeof(abi::RecordHeader) + 8;
      if (view.bytes.size() >= tid_at + 4) {
        std::uint32_t tid = 0;
        std::memcpy(&tid, view.bytes.data() + tid_at, sizeof tid);
        threads_.try_emplace(tid);
      }
      break;
    }
    case RecordType::exit: {
      // pid, ppid, tid, ptid, time: a thread that ended is not blocked, its last switch-out
      // has no switch-in.
      constexpr std::size_t tid_at = sizeof(abi::RecordHeader) + 8;
      constexpr std::size_t time_at = sizeof(abi::RecordHeader) + 16;
      if (view.bytes.size() >= time_at + 8) {
        change.kind = SwitchKind::exit;
        std::memcpy(&change.tid, view.bytes.data() + tid_at, sizeof change.tid);
        std::memcpy(&change.time, view.bytes.data() + time_at, sizeof change.time);
        queue_.push_back(change);
      }
      break;
    }
    default: break;
  }
  next_.record(view, event, config);
}

std::uint32_t OffCpuRecorder::keep_copy(std::span<const std::byte> bytes) {
  std::uint32_t index;
  if (!free_copies_.empty()) {
    index = free_copies_.back();
    free_copies_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(copies_.size());
    copies_.emplace_back();
  }
  copies_[index].assign(bytes.begin(), bytes.end());
  return index;
}

void OffCpuRecorder::release_copy(std::uint32_t& copy) noexcept {
  if (copy == no_copy) return;
  free_copies_.push_back(copy);
  copy = no_copy;
}

void OffCpuRecorder::end_round() {
  flush(round_start_);
  next_.end_round();
  round_start_ = last_time_;
}

void OffCpuRecorder::flush(std::uint64_t up_to) {
  if (queue_.empty()) return;
  // Switch-outs first at equal times: a switch-in at the same ns ends the interval just begun.
  auto earlier = [](const Switch& a, const Switch& b) {
    if (a.time != b.time) return a.time < b.time;
    return a.kind < b.kind;
  };
  std::sort(queue_.begin(), queue_.end(), earlier);
  std::size_t done = 0;
  while (done < queue_.size() && queue_[done].time <= up_to) apply(queue_[done++]);
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(done));
}

void OffCpuRecorder::apply(const Switch& change) {
  switch (change.kind) {
    case SwitchKind::out_sample:
    case SwitchKind::out_record: {
      auto [found, added] = threads_.try_emplace(change.tid);
      Pending& pending = found->second;
      if (change.kind == SwitchKind::out_record && source_.switch_event) {
        // The switch-out event's sample came first; this record, right after it, gives the
        // state where the sample has none (context-switches).
        if (pending.active && !pending.state_known && pending.out_time <= change.time) {
          pending.state = change.preempted ? ThreadState::preempted : ThreadState::blocked;
          pending.state_known = true;
        }
        return;
      }
      if (pending.active) ++stats_.lost_switch_ins;
      release_copy(pending.copy);
      pending.active = true;
      pending.pid = change.pid;
      pending.cpu = change.cpu;
      pending.out_time = change.time;
      if (change.kind == SwitchKind::out_sample) {
        pending.copy = change.copy;
        pending.state_known = source_.prev_state_size != 0;
        pending.state = pending.state_known ? thread_state_from_prev_state(change.prev_state)
                                            : ThreadState::blocked;
      } else {
        pending.state_known = true;
        pending.state = change.preempted ? ThreadState::preempted : ThreadState::blocked;
      }
      return;
    }
    case SwitchKind::in: {
      auto [found, added] = threads_.try_emplace(change.tid);
      if (added) ++stats_.before_recording;
      if (found->second.active) interval(change.tid, found->second, change.time);
      return;
    }
    case SwitchKind::exit: {
      auto found = threads_.find(change.tid);
      if (found != threads_.end()) {
        found->second.active = false;
        release_copy(found->second.copy);
      }
      return;
    }
  }
}

void OffCpuRecorder::interval(std::uint32_t tid, Pending& pending, std::uint64_t in_time) {
  pending.active = false;
  std::uint64_t duration = in_time - pending.out_time;
  if (duration < options_.min_blocked_ns) {
    ++stats_.below_threshold;
    stats_.below_threshold_ns += duration;
  } else {
    write_sample(tid, pending, in_time, duration);
  }
  release_copy(pending.copy);
}

void OffCpuRecorder::write_sample(std::uint32_t tid, const Pending& pending, std::uint64_t end_time,
                                  std::uint64_t duration) {
  const std::uint64_t type = attr_.sample_type;
  // The stack comes from the switch-out sample, decoded again (only its copy lives this long).
  bool from_sample = false;
  std::uint16_t cpumode = misc::user;
  std::uint64_t ip = 0;
  if (pending.copy != no_copy && source_.switch_event) {
    DecodeError error;
    RecordView view = record_view(copies_[pending.copy]);
    from_sample = decode_sample(view, model_config_, decoded_, error);
    if (from_sample) {
      cpumode = view.header.misc & misc::cpumode_mask;
      ip = decoded_.ip;
    }
  }
  std::uint64_t period = duration * options_.every;
  out_.clear();
  abi::RecordHeader header{};
  header.type = static_cast<std::uint32_t>(RecordType::sample);
  header.misc = cpumode;
  put_bytes(out_, &header, sizeof header);
  if (type & sf::identifier) put_u64(out_, sample_id);
  put_u64(out_, ip);
  put_u64(out_, std::uint64_t{tid} << 32 | pending.pid);
  put_u64(out_, end_time);
  if (type & sf::id) put_u64(out_, sample_id);
  if (type & sf::stream_id) put_u64(out_, sample_id);
  if (type & sf::cpu) put_u64(out_, pending.cpu);
  put_u64(out_, period);
  if (type & sf::callchain) {
    if (from_sample && decoded_.has(sf::callchain)) {
      put_u64(out_, decoded_.callchain.size());
      put_bytes(out_, decoded_.callchain.data(), decoded_.callchain.size_bytes());
    } else {
      put_u64(out_, 0);
    }
  }
  // RAW: a u32 size, then the state's letter; the size makes the record 8-byte aligned.
  std::uint32_t raw_size = 4;
  char raw[4] = {thread_state_letter(pending.state), 0, 0, 0};
  put_bytes(out_, &raw_size, sizeof raw_size);
  put_bytes(out_, raw, sizeof raw);
  if (type & sf::regs_user) {
    if (from_sample && decoded_.regs_user.abi != 0) {
      put_u64(out_, decoded_.regs_user.abi);
      put_bytes(out_, decoded_.regs_user.values.data(), decoded_.regs_user.values.size_bytes());
    } else {
      put_u64(out_, 0);
    }
  }
  if (type & sf::stack_user) {
    // The kernel writes a size of 0 (and no dyn_size) when there were no user registers.
    if (from_sample && !decoded_.stack_user.empty()) {
      put_u64(out_, decoded_.stack_user.size());
      put_bytes(out_, decoded_.stack_user.data(), decoded_.stack_user.size());
      put_u64(out_, decoded_.stack_user_dyn_size);
    } else {
      put_u64(out_, 0);
    }
  }
  header.size = static_cast<std::uint16_t>(out_.size());
  std::memcpy(out_.data(), &header, sizeof header);
  ++stats_.written;
  stats_.written_ns += period;
  next_.record(record_view(out_), 0, config_);
}

void OffCpuRecorder::finish() {
  flush(~std::uint64_t{0});
  bool wrote = false;
  for (auto& [tid, pending] : threads_) {
    if (!pending.active || last_time_ <= pending.out_time) continue;
    ++stats_.still_blocked;
    interval(tid, pending, last_time_);
    wrote = true;
  }
  if (wrote) next_.end_round();
}

std::string_view off_cpu_method_name(OffCpuMethod method) noexcept {
  switch (method) {
    case OffCpuMethod::sched_switch: return "sched:sched_switch";
    case OffCpuMethod::context_switches: return "context-switches";
    case OffCpuMethod::switch_records: return "switch records";
  }
  return "";
}

OffCpuCapability probe_off_cpu_capability() {
  OffCpuCapability capability;
  auto opens = [](EventAttr attr) {
    attr.set_sample_period(1).set_flag(flag::disabled);
    attr.set_sample_type(
        sf::ip | sf::tid | sf::time | sf::callchain |
        (attr.raw().type == static_cast<std::uint32_t>(abi::EventType::tracepoint) ? sf::raw : 0));
    int errnum = 0;
    Event event = Event::try_open(attr, 0, -1, nullptr, 0, errnum);
    return event.valid();
  };
  long long id = tracepoint_id("sched", "sched_switch");
  if (id >= 0 && opens(EventAttr::tracepoint(static_cast<std::uint64_t>(id)))) {
    try {
      TracepointCatalog catalog;
      const TracepointField* field = catalog.load("sched", "sched_switch").field("prev_state");
      if (field && (field->size == 4 || field->size == 8)) {
        capability.method = OffCpuMethod::sched_switch;
        capability.prev_state_offset = field->offset;
        capability.prev_state_size = field->size;
        return capability;
      }
    } catch (const Error&) {
      // The format cannot be read: fall through to the methods without it.
    }
  }
  if (opens(EventAttr::software(abi::SoftwareEvent::context_switches))) {
    capability.method = OffCpuMethod::context_switches;
    capability.limitation =
        "sched:sched_switch cannot be sampled here (its payload says why a thread left the CPU): "
        "the off-CPU states are only preempted (R) or blocked (B), sleeping and I/O waits not "
        "told apart. Fix: run as root or grant CAP_PERFMON (with read access to "
        "/sys/kernel/tracing), or `sysctl kernel.perf_event_paranoid=-1`.";
    return capability;
  }
  capability.method = OffCpuMethod::switch_records;
  capability.limitation =
      "no kernel context for this user (perf_event_paranoid >= 2 without CAP_PERFMON): the "
      "stacks where threads blocked cannot be recorded (the switch happens in the kernel), only "
      "each thread's off-CPU time from its own switch records, preempted (R) or blocked (B). "
      "Fix: run as root or grant CAP_PERFMON for stacks and states, or `sysctl "
      "kernel.perf_event_paranoid=1` for stacks.";
  return capability;
}

MachineCheck off_cpu_machine_check() {
  OffCpuCapability capability = probe_off_cpu_capability();
  MachineCheck check;
  check.id = "off_cpu";
  check.title = "off-CPU profiling (record --off-cpu, --wall)";
  switch (capability.method) {
    case OffCpuMethod::sched_switch:
      check.status = CheckStatus::ok;
      check.value = "blocked stacks and states (sched:sched_switch)";
      check.explanation =
          "each blocking interval is recorded with the stack where the thread blocked, why "
          "(sleeping, uninterruptible I/O, preempted) and how long";
      return check;
    case OffCpuMethod::context_switches:
      check.status = CheckStatus::warn;
      check.value = "blocked stacks, states preempted or blocked only (context-switches)";
      break;
    case OffCpuMethod::switch_records:
      check.status = CheckStatus::warn;
      check.value = "per-thread off-CPU time only, no stacks (switch records)";
      break;
  }
  auto fix = capability.limitation.find("Fix: ");
  check.explanation = capability.limitation.substr(0, fix);
  if (fix != std::string::npos) check.fix = capability.limitation.substr(fix + 5);
  while (!check.explanation.empty() && check.explanation.back() == ' ') {
    check.explanation.pop_back();
  }
  return check;
}

}  // namespace perfscope
