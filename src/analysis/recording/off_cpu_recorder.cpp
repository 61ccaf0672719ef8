#include "perfscope/analysis/recording/off_cpu_recorder.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

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
constexpr std::uint64_t own_fields = sf::ip | sf::tid | sf::time | sf::period | sf::raw;
constexpr std::uint64_t stack_fields = sf::callchain | sf::regs_user | sf::stack_user;
constexpr std::uint64_t identity_bits =
    sf::identifier | sf::tid | sf::time | sf::id | sf::stream_id | sf::cpu;

void put_u64(std::vector<std::byte>& out, std::uint64_t value) {
  std::size_t at = out.size();
  out.resize(at + sizeof value);
  std::memcpy(out.data() + at, &value, sizeof value);
}

void put_bytes(std::vector<std::byte>& out, const void* bytes, std::size_t size) {
  std::size_t at = out.size();
  out.resize(at + size);
  if (size != 0) std::memcpy(out.data() + at, bytes, size);
}

RecordView view_of(std::span<const std::byte> bytes) {
  RecordView view;
  std::memcpy(&view.header, bytes.data(), sizeof view.header);
  view.bytes = bytes;
  return view;
}

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
  switch (type) {
    case RecordType::sample:
      if (source_.switch_event && event == *source_.switch_event) {
        switch_out_sample(view, config);
        return;
      }
      break;
    case RecordType::switch_:
    case RecordType::switch_cpu_wide: switch_record(view, config); return;
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
      // A thread that ended is not blocked: its last switch-out has no switch-in.
      constexpr std::size_t tid_at = sizeof(abi::RecordHeader) + 8;
      if (view.bytes.size() >= tid_at + 4) {
        std::uint32_t tid = 0;
        std::memcpy(&tid, view.bytes.data() + tid_at, sizeof tid);
        if (auto found = threads_.find(tid); found != threads_.end()) {
          found->second.active = false;
        }
      }
      break;
    }
    default: break;
  }
  next_.record(view, event, config);
}

void OffCpuRecorder::switch_out_sample(const RecordView& view, const ParseConfig& config) {
  DecodeError error;
  if (!decode_sample(view, config, decoded_, error)) return;
  last_time_ = std::max(last_time_, decoded_.time);
  std::int64_t prev_state =
      read_prev_state(decoded_.raw, source_.prev_state_offset, source_.prev_state_size);
  // The idle task and a dying thread's last switch: nothing waits.
  if (decoded_.tid == 0 || prev_state_is_exit(prev_state)) return;
  Pending& pending = threads_[decoded_.tid];
  if (pending.active) ++stats_.lost_switch_ins;
  pending.active = true;
  pending.pid = decoded_.pid;
  pending.out_time = decoded_.time;
  pending.state_known = source_.prev_state_size != 0;
  pending.state =
      pending.state_known ? thread_state_from_prev_state(prev_state) : ThreadState::blocked;
  pending.sample.assign(view.bytes.begin(), view.bytes.end());
  // A switch-in read before this switch-out ends it now.
  std::uint64_t earliest = 0;
  for (std::uint64_t& in : pending.early_ins) {
    if (in != 0 && in < pending.out_time) in = 0;  // of an earlier interval
    if (in != 0 && (earliest == 0 || in < earliest)) earliest = in;
  }
  if (earliest != 0) {
    for (std::uint64_t& in : pending.early_ins) {
      if (in == earliest) in = 0;
    }
    interval(decoded_.tid, pending, earliest, decoded_.has(sf::cpu) ? decoded_.cpu : 0);
  }
}

void OffCpuRecorder::switch_record(const RecordView& view, const ParseConfig& config) {
  SampleId id;
  if (!decode_sample_id(view, config, id) || !id.has(sf::tid) || !id.has(sf::time)) return;
  last_time_ = std::max(last_time_, id.time);
  if (id.tid == 0) return;  // the idle task
  bool out = (view.header.misc & misc::switch_out) != 0;
  if (out) {
    bool preempted = (view.header.misc & misc::switch_out_preempt) != 0;
    // With a switch-out event, its sample is the switch-out (with the stack); this record, right
    // after it, gives the state when the sample has none.
    if (source_.switch_event) {
      auto found = threads_.find(id.tid);
      if (found != threads_.end() && found->second.active && !found->second.state_known) {
        found->second.state = preempted ? ThreadState::preempted : ThreadState::blocked;
        found->second.state_known = true;
      }
      return;
    }
    Pending& pending = threads_[id.tid];
    if (pending.active) ++stats_.lost_switch_ins;
    pending.active = true;
    pending.pid = id.pid;
    pending.out_time = id.time;
    pending.state_known = true;
    pending.state = preempted ? ThreadState::preempted : ThreadState::blocked;
    pending.sample.clear();
    for (std::uint64_t& in : pending.early_ins) in = 0;
    return;
  }
  auto [found, added] = threads_.try_emplace(id.tid);
  Pending& pending = found->second;
  if (added) ++stats_.before_recording;
  if (pending.active && pending.out_time <= id.time) {
    interval(id.tid, pending, id.time, id.has(sf::cpu) ? id.cpu : 0);
    return;
  }
  // Its switch-out may still be in a buffer not read yet: keep the switch-in for it, in place
  // of the oldest kept.
  std::uint64_t* slot = &pending.early_ins[0];
  for (std::uint64_t& in : pending.early_ins) {
    if (in < *slot) slot = &in;
  }
  *slot = id.time;
}

void OffCpuRecorder::interval(std::uint32_t tid, Pending& pending, std::uint64_t in_time,
                              std::uint32_t cpu) {
  pending.active = false;
  std::uint64_t duration = in_time - pending.out_time;
  if (duration < options_.min_blocked_ns) {
    ++stats_.below_threshold;
    stats_.below_threshold_ns += duration;
    return;
  }
  write_sample(tid, pending, in_time, duration, cpu);
}

void OffCpuRecorder::write_sample(std::uint32_t tid, const Pending& pending, std::uint64_t end_time,
                                  std::uint64_t duration, std::uint32_t cpu) {
  const std::uint64_t type = attr_.sample_type;
  // The stack and the CPU come from the switch-out sample, decoded again (only its copy lives
  // this long).
  bool from_sample = false;
  std::uint16_t cpumode = misc::user;
  std::uint64_t ip = 0;
  if (!pending.sample.empty() && source_.switch_event) {
    DecodeError error;
    RecordView view = view_of(pending.sample);
    from_sample = decode_sample(view, model_config_, decoded_, error);
    if (from_sample) {
      cpumode = view.header.misc & misc::cpumode_mask;
      ip = decoded_.ip;
      if (decoded_.has(sf::cpu)) cpu = decoded_.cpu;
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
  if (type & sf::cpu) put_u64(out_, cpu);
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
  next_.record(view_of(out_), 0, config_);
}

void OffCpuRecorder::finish() {
  bool wrote = false;
  for (auto& [tid, pending] : threads_) {
    if (!pending.active || last_time_ <= pending.out_time) continue;
    ++stats_.still_blocked;
    interval(static_cast<std::uint32_t>(tid), pending, last_time_, 0);
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
