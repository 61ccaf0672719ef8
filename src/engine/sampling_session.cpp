#include "perfscope/engine/sampling_session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/core/sample_size.hpp"
#include "perfscope/engine/target_units.hpp"
#include "perfscope/sys/child_process.hpp"
#include "perfscope/sys/event_poll.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace flag = abi::attr_flag;
namespace sf = abi::sample_format;
using abi::RecordType;

namespace {

// Every event of a session carries the same identity fields, so that any record can be ordered
// (TIME) and, with several events, attributed (IDENTIFIER) before its event is known. Like perf
// record, nothing more: each field costs 8 bytes in every sample and every sample_id trailer.
constexpr std::uint64_t identity_fields = sf::tid | sf::time;

// Token of the command's pidfd in the epoll set; buffers use their index.
constexpr std::uint64_t command_token = ~0ULL;
constexpr std::uint64_t waker_token = ~0ULL - 1;

std::uint64_t read_u64(const RecordView& view, std::size_t offset) noexcept {
  std::uint64_t value = 0;
  if (offset + sizeof value <= view.header.size) {
    std::memcpy(&value, view.bytes.data() + offset, sizeof value);
  }
  return value;
}

}  // namespace

std::string SampleMisfit::summary() const {
  std::string parts;
  if (sample.stack_dump != 0) parts = fmt::format("{} bytes of user stack dump", sample.stack_dump);
  if (sample.registers != 0) {
    parts += fmt::format("{}{} bytes of registers", parts.empty() ? "" : ", ", sample.registers);
  }
  return fmt::format(
      "event '{}': each sample takes at least {} bytes{}, but a ring buffer of {} page{} ({} "
      "bytes) holds records of at most {} bytes: the kernel would drop every sample",
      event, sample.bytes, parts.empty() ? "" : " (" + parts + ")", data_pages,
      data_pages == 1 ? "" : "s", data_bytes, largest_record);
}

BufferStats& BufferStats::operator+=(const BufferStats& other) noexcept {
  records += other.records;
  samples += other.samples;
  bytes += other.bytes;
  lost_records += other.lost_records;
  lost += other.lost;
  lost_samples += other.lost_samples;
  throttles += other.throttles;
  unthrottles += other.unthrottles;
  corrupt += other.corrupt;
  aux_bytes += other.aux_bytes;
  aux_overwritten += other.aux_overwritten;
  aux_truncated += other.aux_truncated;
  return *this;
}

SamplingSession::SamplingSession(std::vector<EventGroupSpec> groups, Target target,
                                 SamplingOptions options)
    : groups_(std::move(groups)), target_(std::move(target)), options_(options) {
  std::uint64_t identity = identity_fields;
  std::size_t event_count = 0;
  for (const auto& group : groups_) {
    for (const auto& spec : group.events) {
      identity |= spec.attr.raw().sample_type & (sf::id | sf::stream_id | sf::cpu);
      ++event_count;
    }
  }
  // With one event every record is its own; a task target's per-CPU buffer knows its CPU (see
  // SessionRecord::cpu), while CPU-wide buffers mix tasks and readers of the file need the field.
  identified_ = event_count > 1;
  if (identified_) identity |= sf::identifier;
  if (target_.kind() == Target::Kind::cpus || target_.kind() == Target::Kind::cgroup)
    identity |= sf::cpu;
  for (auto& group : groups_) {
    for (auto& spec : group.events) {
      spec.attr.set_sample_type(spec.attr.raw().sample_type | identity);
      spec.attr.set_flag(flag::sample_id_all);
      events_.push_back(spec);
      configs_.push_back(ParseConfig::from_attr(spec.attr.raw()));
    }
  }
}

SamplingSession::~SamplingSession() {
  buffers_.clear();
  open_events_.clear();
  sys::close_fd(pidfd_);
}

pid_t SamplingSession::command_pid() const noexcept { return child_ ? child_->pid() : -1; }

EventAttr SamplingSession::prepare_attr(const EventSpec& spec, bool leader,
                                        bool tracks_tasks) const {
  EventAttr attr = spec.attr;
  bool task_target =
      target_.kind() == Target::Kind::calling_thread || target_.kind() == Target::Kind::thread ||
      target_.kind() == Target::Kind::process || target_.kind() == Target::Kind::command;
  attr.set_flag(flag::inherit, options_.inherit && task_target);
  attr.set_flag(flag::disabled, leader);
  attr.set_flag(flag::enable_on_exec,
                leader && target_.kind() == Target::Kind::command && options_.enable_at_start);
  if (options_.wakeup_events != 0) {
    attr.set_wakeup_events(options_.wakeup_events);
  } else {
    std::size_t pages =
        options_.data_pages ? options_.data_pages : RingBuffer::default_data_pages();
    std::uint32_t watermark = options_.wakeup_watermark
                                  ? options_.wakeup_watermark
                                  : static_cast<std::uint32_t>(pages * sys::page_size() / 4);
    attr.set_wakeup_watermark(watermark);
  }
  if (tracks_tasks && options_.track_tasks) {
    attr.set_flag(flag::comm)
        .set_flag(flag::comm_exec)
        .set_flag(flag::mmap2)
        .set_flag(flag::mmap)
        .set_flag(flag::task)
        .set_flag(flag::mmap_data, options_.data_mmaps);
  }
  if (tracks_tasks && options_.context_switches) attr.set_flag(flag::context_switch);
  if (tracks_tasks && options_.namespaces) attr.set_flag(flag::namespaces);
  if (tracks_tasks && options_.cgroups) attr.set_flag(flag::cgroup);
  if (tracks_tasks && options_.track_tasks && options_.build_id_mmaps)
    attr.set_flag(flag::build_id);
  // The kernel's own count of what it could not write (see kernel_lost). Not with READ samples:
  // it would change their layout. The opener drops it where the kernel is older than 6.0.
  if (!(attr.raw().sample_type & sf::read)) {
    attr.set_read_format(attr.raw().read_format | abi::read_format::lost);
  }
  return attr;
}

// The kernel writes a sample whole or not at all: a ring buffer too small for the smallest sample
// an event writes records nothing but LOST records (perf then says "lost 100.00%" at the end).
std::optional<SampleMisfit> SamplingSession::sample_that_cannot_fit() const {
  SampleMisfit misfit;
  misfit.data_pages = options_.data_pages ? options_.data_pages : RingBuffer::default_data_pages();
  const std::size_t page = sys::page_size();
  misfit.data_bytes = misfit.data_pages * page;
  misfit.largest_record = largest_record_for(misfit.data_bytes);
  for (const auto& group : groups_) {
    for (const auto& spec : group.events) {
      misfit.sample = smallest_user_sample(spec.attr.raw(), group.events.size());
      if (misfit.sample.bytes <= misfit.largest_record) continue;
      misfit.event = spec.name;
      misfit.pages_needed = std::bit_ceil((misfit.sample.bytes + 8 + page - 1) / page);
      misfit.pages_advised = std::max<std::size_t>(misfit.pages_needed * 4, 16);
      return misfit;
    }
  }
  return std::nullopt;
}

void SamplingSession::open() {
  if (opened_) return;
  if (auto misfit = sample_that_cannot_fit()) {
    throw Error(
        EINVAL, misfit->summary(),
        fmt::format("Fix: ring buffers of {} data pages or more (at least {}: one that "
                    "holds a single sample loses the next while it is read){}.",
                    misfit->pages_advised, misfit->pages_needed,
                    misfit->sample.stack_dump != 0 ? ", or a smaller user stack dump" : ""));
  }
  check_aux_events();
  if (target_.has_command()) {
    child_ = std::make_unique<sys::GatedChild>(target_.argv());
    if (child_->pid() < 0) {
      throw Error(child_->error(), fmt::format("cannot start '{}': {}", target_.argv().front(),
                                               std::strerror(child_->error())));
    }
  }
  // An inherited per-task event cannot be mmap'd with cpu -1: sample tasks per CPU then.
  TargetUnits units;
  units.resolve(target_, command_pid(), options_.inherit);
  OpenerPolicy policy;
  policy.skip_unsupported = options_.skip_unsupported;
  policy.task_may_exit = target_.kind() == Target::Kind::process;
  opener_ = EventOpener(policy);
  // Out of descriptors: give back the ones held before explaining (the explanation, and
  // whatever prints it, may need one).
  opener_.on_descriptors_exhausted([this] {
    buffers_.clear();
    open_events_.clear();
  });
  opener_.reserve_descriptors(units.units().size() * events_.size());
  poll_ = std::make_unique<sys::EventPoll>();
  if (poll_->error()) throw Error(poll_->error(), "epoll_create1 failed");
  waker_ = std::make_unique<sys::PollWaker>();
  if (waker_->error()) throw Error(waker_->error(), "eventfd failed");
  if (int r = poll_->add(waker_->fd(), waker_token); r < 0) {
    throw Error(-r, "cannot watch an eventfd with epoll");
  }

  std::vector<bool> unsupported(events_.size(), false);
  // One buffer per CPU (or per thread without inherit): the first event opened there owns it.
  struct BufferOwner {
    std::pair<pid_t, int> key;
    std::size_t owner_event;  // index in open_events_
  };
  std::vector<BufferOwner> owners;
  std::size_t data_pages =
      options_.data_pages ? options_.data_pages : RingBuffer::default_data_pages();
  try {
    for (const auto& unit : units.units()) {
      std::pair<pid_t, int> key = unit.cpu >= 0 ? std::pair{-1, unit.cpu} : std::pair{unit.pid, -1};
      std::size_t event_index = 0;
      bool unit_tracked = false;  // task records come from one event per thread or CPU
      for (const auto& group : groups_) {
        bool has_leader = false;
        std::size_t leader_slot = 0;
        for (std::size_t member = 0; member < group.events.size(); ++member, ++event_index) {
          if (unsupported[event_index]) continue;
          auto found = std::find_if(owners.begin(), owners.end(),
                                    [&](const BufferOwner& owner) { return owner.key == key; });
          bool first_in_buffer = found == owners.end();
          // Pointers into open_events_ are taken only here: the vector grows below.
          const Event* leader = has_leader ? &open_events_[leader_slot] : nullptr;
          OpenSite site{unit.pid,  unit.cpu, unit.flags, leader, events_[event_index].name,
                        member + 1};
          OpenOutcome outcome = opener_.open(
              prepare_attr(events_[event_index], leader == nullptr, !unit_tracked), site);
          if (outcome.status == OpenStatus::task_gone) break;
          if (outcome.status == OpenStatus::unsupported) {
            unsupported[event_index] = true;
            unsupported_.push_back(
                fmt::format("{}: {}", events_[event_index].name, outcome.diagnosis));
            continue;
          }
          Event event = std::move(outcome.event);
          if (!events_[event_index].filter.empty()) event.set_filter(events_[event_index].filter);
          id_to_event_.emplace_back(event.id(), event_index);
          if (first_in_buffer) {
            Buffer buffer;
            buffer.ring = RingBuffer::map(event, data_pages);
            if (event_index == 0 && aux_event_) {
              buffer.ring.map_aux(options_.aux_pages * sys::page_size());
              buffer.aux = true;
            }
            buffer.fd = event.fd();
            buffer.stats.cpu = unit.cpu;
            buffer.stats.tid = unit.cpu >= 0 ? -1 : unit.pid;
            owners.push_back({key, open_events_.size()});
            if (int r = poll_->add(event.fd(), buffers_.size()); r < 0) {
              throw Error(-r, "cannot watch a ring buffer with epoll");
            }
            buffers_.push_back(std::move(buffer));
          } else {
            event.set_output(open_events_[found->owner_event]);
          }
          open_events_.push_back(std::move(event));
          unit_tracked = true;
          if (!has_leader) {
            has_leader = true;
            leader_slot = open_events_.size() - 1;
          }
        }
      }
    }
  } catch (...) {
    if (child_) child_->abandon();
    throw;
  }
  std::sort(id_to_event_.begin(), id_to_event_.end());
  // Named as perf names them (in the recording too): the label says what was sampled.
  for (auto& spec : events_) spec.name = opener_.label(spec.name, spec.attr);
  if (child_) {
    pidfd_ = sys::open_pidfd(child_->pid());
    if (pidfd_ >= 0) poll_->add(pidfd_, command_token);
  }
  opened_ = true;
}

void SamplingSession::start() {
  if (!opened_) open();
  if (target_.kind() != Target::Kind::command && options_.enable_at_start) enable();
  if (child_) {
    int exec_error = child_->release();
    if (exec_error != 0) {
      child_->wait();
      command_exited_ = true;
      throw Error(
          exec_error,
          fmt::format("cannot run '{}': {}", target_.argv().front(), std::strerror(exec_error)),
          exec_error == ENOENT ? "the command was not found in PATH; give its path."
                               : "check that the file is an executable you may run.");
    }
  }
}

void SamplingSession::enable() noexcept {
  for (auto& event : open_events_) {
    if (event.attr().has(flag::disabled)) event.enable();
  }
}

void SamplingSession::stop() noexcept {
  for (auto& event : open_events_) {
    if (event.attr().has(flag::disabled)) event.disable();
  }
}

std::size_t SamplingSession::event_for_record(const RecordView& view) const noexcept {
  if (!identified_) return 0;
  auto id = record_identifier(view);
  if (!id) return 0;
  auto found = std::lower_bound(id_to_event_.begin(), id_to_event_.end(),
                                std::pair<std::uint64_t, std::size_t>{*id, 0});
  if (found == id_to_event_.end() || found->first != *id) return 0;
  return found->second;
}

std::uint64_t SamplingSession::time_of(const RecordView& view, std::size_t event) const noexcept {
  const ParseConfig& config = configs_[event];
  if (view.header.type == static_cast<std::uint32_t>(RecordType::sample)) {
    // [IDENTIFIER], [IP] and TID come before TIME.
    std::size_t offset = sizeof(abi::RecordHeader);
    if (config.has(sf::identifier)) offset += sizeof(std::uint64_t);
    if (config.has(sf::ip)) offset += sizeof(std::uint64_t);
    offset += sizeof(std::uint64_t);  // TID is always requested
    return read_u64(view, offset);
  }
  // In the sample_id trailer TIME follows TID: TID, TIME, [ID], [STREAM_ID], [CPU], [IDENTIFIER].
  std::size_t from_end = sizeof(std::uint64_t);  // TIME
  for (std::uint64_t field : {sf::id, sf::stream_id, sf::cpu, sf::identifier}) {
    if (config.has(field)) from_end += sizeof(std::uint64_t);
  }
  if (view.header.size < from_end + sizeof(abi::RecordHeader)) return 0;
  return read_u64(view, view.header.size - from_end);
}

void SamplingSession::account(Buffer& buffer, const RecordView& view) noexcept {
  BufferStats& stats = buffer.stats;
  ++stats.records;
  stats.bytes += view.header.size;
  switch (static_cast<RecordType>(view.header.type)) {
    case RecordType::sample: ++stats.samples; break;
    case RecordType::lost:
      ++stats.lost_records;
      stats.lost += read_u64(view, sizeof(abi::RecordHeader) + sizeof(std::uint64_t));
      break;
    case RecordType::lost_samples:
      stats.lost_samples += read_u64(view, sizeof(abi::RecordHeader));
      break;
    case RecordType::throttle: ++stats.throttles; break;
    case RecordType::unthrottle: ++stats.unthrottles; break;
    case RecordType::aux:
      // aux_offset, aux_size, flags: a full area made the PMU drop trace data.
      if (read_u64(view, sizeof(abi::RecordHeader) + 2 * sizeof(std::uint64_t)) &
          abi::aux_flag::truncated) {
        ++stats.aux_truncated;
      }
      break;
    default: break;
  }
}

bool SamplingSession::load_next(Buffer& buffer) noexcept {
  buffer.has_record = buffer.ring.next(buffer.current);
  if (buffer.has_record) {
    account(buffer, buffer.current);
    buffer.current_event = event_for_record(buffer.current);
    buffer.current_time = time_of(buffer.current, buffer.current_event);
  }
  return buffer.has_record;
}

std::size_t SamplingSession::drain(RecordConsumer& consumer) {
  return drain_passes(consumer, std::numeric_limits<std::size_t>::max());
}

std::size_t SamplingSession::drain_passes(RecordConsumer& consumer, std::size_t passes) {
  std::size_t delivered = 0;
  for (bool more = true; more && passes != 0; --passes) {
    more = false;
    fullest_fill_ = 0;
    for (auto& buffer : buffers_) {
      if (buffer.ring.begin_batch()) {
        more = true;
        fullest_fill_ = std::max(fullest_fill_, static_cast<double>(buffer.ring.unread_bytes()) /
                                                    static_cast<double>(buffer.ring.data_size()));
        load_next(buffer);
      } else {
        buffer.has_record = false;
      }
    }
    if (!more) {
      drain_aux(consumer);
      break;
    }
    if (!options_.time_ordered) {
      // Buffer by buffer: no merge to pick the earliest record, each buffer's records delivered
      // as they lie (a reader orders them by round, as perf's files).
      for (std::size_t i = 0; i < buffers_.size(); ++i) {
        Buffer& buffer = buffers_[i];
        while (buffer.has_record) {
          SessionRecord record{buffer.current,       configs_[buffer.current_event],
                               buffer.current_event, i,
                               buffer.current_time,  buffer.stats.cpu};
          consumer.consume(record);
          ++delivered;
          load_next(buffer);
        }
      }
    }
    for (;;) {
      Buffer* earliest = nullptr;
      std::size_t earliest_index = 0;
      for (std::size_t i = 0; i < buffers_.size(); ++i) {
        Buffer& candidate = buffers_[i];
        if (!candidate.has_record) continue;
        if (!earliest || candidate.current_time < earliest->current_time) {
          earliest = &candidate;
          earliest_index = i;
        }
      }
      if (!earliest) break;
      SessionRecord record{earliest->current,       configs_[earliest->current_event],
                           earliest->current_event, earliest_index,
                           earliest->current_time,  earliest->stats.cpu};
      consumer.consume(record);
      ++delivered;
      load_next(*earliest);
    }
    for (auto& buffer : buffers_) {
      buffer.ring.end_batch();
      buffer.stats.corrupt = buffer.ring.stats().corrupt;
    }
    // After the records: the AUX records among them announced this data.
    drain_aux(consumer);
  }
  return delivered;
}

bool SamplingSession::drain_aux(RecordConsumer& consumer) {
  if (!aux_event_) return false;
  bool any = false;
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    Buffer& buffer = buffers_[i];
    AuxChunk chunk;
    if (!buffer.aux || !buffer.ring.read_aux(chunk)) continue;
    consumer.consume_aux(SessionAuxData{chunk, i, buffer.stats.cpu, buffer.stats.tid});
    buffer.ring.release_aux(chunk);
    buffer.stats.aux_bytes += chunk.size();
    buffer.stats.aux_overwritten += chunk.overwritten;
    any = true;
  }
  return any;
}

void SamplingSession::check_aux_events() {
  aux_event_ = false;
  if (options_.aux_pages == 0) return;
  if (!std::has_single_bit(options_.aux_pages)) {
    throw Error(EINVAL,
                fmt::format("an AUX area of {} pages: the number must be a power of two",
                            options_.aux_pages),
                fmt::format("use {} pages", std::bit_ceil(options_.aux_pages)));
  }
  for (std::size_t i = 0; i < events_.size(); ++i) {
    if (!is_aux_tracing_pmu(events_[i].pmu)) continue;
    if (i != 0) {
      throw Error(
          EINVAL,
          fmt::format("'{}' traces into an AUX area but is not the first event", events_[i].name),
          "the AUX area belongs to the buffers of the first event: give the AUX-tracing "
          "event first, and only one of them (as perf requires)");
    }
    aux_event_ = true;
  }
}

std::optional<AuxTracing> SamplingSession::aux_tracing() const noexcept {
  for (const auto& buffer : buffers_) {
    if (buffer.aux) return AuxTracing{0, &buffer.ring.user_page(), buffer.stats.cpu >= 0};
  }
  return std::nullopt;
}

std::size_t SamplingSession::poll(RecordConsumer& consumer, int timeout_ms) {
  sys::PollEvent ready[16];
  int count = poll_->wait(ready, timeout_ms);
  if (count < 0 && count != -EINTR) {
    throw Error(-count, fmt::format("epoll_wait failed: {}", std::strerror(-count)));
  }
  bool data = false;
  for (int i = 0; i < count; ++i) {
    data = data || ready[i].token < buffers_.size();
    if (ready[i].token == command_token) {
      command_exited_ = true;
      poll_->remove(pidfd_);
    } else if (ready[i].token == waker_token) {
      waker_->clear();
    } else if (ready[i].hang_up && ready[i].token < buffers_.size()) {
      // The buffer's event belonged to a task that exited: its fd stays hung up, and epoll
      // would report it at once on every wait (a busy loop until the recording ends). The
      // buffer is still drained on every poll, and other tasks may still write into it.
      Buffer& buffer = buffers_[ready[i].token];
      if (buffer.fd >= 0) poll_->remove(buffer.fd);
      buffer.fd = -1;
    }
  }
  if (data) ++wakeups_;
  return drain_passes(consumer, 1);
}

void SamplingSession::interrupt_poll() noexcept {
  if (waker_) waker_->wake();
}

int SamplingSession::wait_for_command() {
  if (!child_) throw Error(ECHILD, "the session has no command to wait for");
  int status = child_->wait();
  command_exited_ = true;
  if (status < 0) throw Error(-status, "waiting for the command failed");
  return status;
}

std::vector<std::uint64_t> SamplingSession::event_ids(std::size_t event) const {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, index] : id_to_event_) {
    if (index == event) ids.push_back(id);
  }
  return ids;
}

EventAttr SamplingSession::opened_attr(std::size_t event) const {
  auto ids = event_ids(event);
  for (const auto& open_event : open_events_) {
    if (!ids.empty() && open_event.id() == ids.front()) return open_event.attr();
  }
  return events_.at(event).attr;
}

BufferStats SamplingSession::buffer_stats(std::size_t buffer) const noexcept {
  return buffers_[buffer].stats;
}

std::optional<std::uint64_t> SamplingSession::kernel_lost() const noexcept {
  if (!opener_.lost_format()) return std::nullopt;
  std::uint64_t lost = 0;
  for (const auto& event : open_events_) {
    if (!(event.attr().raw().read_format & abi::read_format::lost)) continue;
    Reading reading;
    if (event.read(reading)) lost += reading.lost;
  }
  return lost;
}

BufferStats SamplingSession::total_stats() const noexcept {
  BufferStats total;
  for (const auto& buffer : buffers_) total += buffer.stats;
  return total;
}

bool can_sample_cpu_cycles(std::uint64_t frequency) {
  auto attr = EventAttr::hardware(abi::HardwareEvent::cpu_cycles);
  attr.set_sample_freq(frequency).set_flag(flag::disabled);
  EventOpener opener;
  try {
    return opener.open(attr, OpenSite{}).status == OpenStatus::opened;
  } catch (const Error&) {
    return false;  // a probe: any refusal means no
  }
}

}  // namespace perfscope
