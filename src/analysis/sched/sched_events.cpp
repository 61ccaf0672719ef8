#include "perfscope/analysis/sched/sched_events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <unordered_map>
#include <variant>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/tracepoint_format.hpp"
#include "perfscope/analysis/perf_data/tracing_data.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

enum class Kind : std::uint8_t { none, switch_, waking, wakeup, wakeup_new, migrate, runtime };

Kind kind_of(std::string_view name) {
  if (name == "sched_switch") return Kind::switch_;
  if (name == "sched_waking") return Kind::waking;
  if (name == "sched_wakeup") return Kind::wakeup;
  if (name == "sched_wakeup_new") return Kind::wakeup_new;
  if (name == "sched_migrate_task") return Kind::migrate;
  if (name == "sched_stat_runtime") return Kind::runtime;
  return Kind::none;
}

// The fields each kind reads, in the order of its Slot::fields.
constexpr std::array<std::array<std::string_view, 7>, 7> field_names{{
    {},
    {"prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio"},
    {"comm", "pid", "target_cpu"},
    {"comm", "pid", "target_cpu"},
    {"comm", "pid", "target_cpu"},
    {"pid", "orig_cpu", "dest_cpu"},
    {"pid", "runtime"},
}};

// The names a kind cannot do without (the others may be missing in old or new kernels).
constexpr std::array<std::size_t, 7> required_fields{0, 7, 2, 2, 2, 1, 2};

// The sched tracepoints of this machine by id (tracefs events/sched/NAME/id); empty without
// tracefs.
std::unordered_map<std::uint64_t, std::string> local_sched_tracepoints() {
  std::unordered_map<std::uint64_t, std::string> names;
  auto root = sys::tracefs_root();
  if (!root) return names;
  std::string directory = *root + "/events/sched";
  for (const auto& name : sys::list_directory(directory)) {
    auto id = sys::read_integer_file(directory + "/" + name + "/id");
    if (id && *id >= 0) names.emplace(static_cast<std::uint64_t>(*id), name);
  }
  return names;
}

}  // namespace

struct SchedTrace::Decoder {
  struct Slot {
    Kind kind = Kind::none;
    const TracepointFormat* format = nullptr;
    std::array<const TracepointField*, 7> fields{};
  };
  TracepointCatalog catalog;
  std::vector<Slot> slots;  // by the reader's event index

  std::int64_t number(const Slot& slot, std::size_t at, std::span<const std::byte> raw,
                      bool& ok) const noexcept {
    const TracepointField* field = slot.fields[at];
    if (field == nullptr) return -1;
    auto value = TracepointFormat::integer(raw, *field);
    if (!value) {
      ok = false;
      return 0;
    }
    return *value;
  }
  std::string_view text(const Slot& slot, std::size_t at, std::span<const std::byte> raw,
                        bool& ok) const noexcept {
    const TracepointField* field = slot.fields[at];
    if (field == nullptr) return {};
    auto value = slot.format->value(raw, *field);
    if (!value) {
      ok = false;
      return {};
    }
    return value->text;
  }
};

std::string missing_sched_events_message(const PerfDataReader& reader) {
  std::string names;
  for (const auto& event : reader.events()) {
    if (!names.empty()) names += ", ";
    names += event.name;
  }
  return fmt::format(
      "the recording has no sched:sched_switch events (it has: {}); perfscope sched needs the "
      "scheduler tracepoints: record them with 'perfscope sched record -- COMMAND' (or 'perf "
      "sched record'), or add -e sched:sched_switch,sched:sched_waking to a CPU-wide record "
      "(-a)",
      names.empty() ? std::string("no events") : names);
}

SchedTrace::SchedTrace(const PerfDataReader& reader)
    : reader_(reader), decoder_(std::make_unique<Decoder>()) {
  Decoder& decoder = *decoder_;
  const auto tracepoint = static_cast<std::uint32_t>(abi::EventType::tracepoint);
  // A file without its features (a recorder killed before it wrote them) names no tracepoint:
  // its ids are this machine's if it was recorded here.
  std::unordered_map<std::uint64_t, std::string> local_names;
  if (!reader.features().tracing_data) local_names = local_sched_tracepoints();
  auto name_of = [&](const PerfDataEventInfo& event) -> std::string {
    if (std::string_view(event.name).starts_with("sched:")) return event.name;
    auto found = local_names.find(event.attr.config);
    return found != local_names.end() ? "sched:" + found->second : event.name;
  };
  bool any_sched = std::any_of(reader.events().begin(), reader.events().end(), [&](auto& event) {
    return event.attr.type == tracepoint && name_of(event).starts_with("sched:");
  });
  if (!any_sched) throw SchedTraceError(missing_sched_events_message(reader));

  // Only the sched system's formats: libtraceevent parses each print fmt, and a recording of
  // many tracepoints needs none of the others here.
  if (const auto& section = reader.features().tracing_data) {
    std::string error;
    for (const auto& format : tracing_data_formats(*section, &error)) {
      if (format.system != "sched") continue;
      try {
        decoder.catalog.load_text(format.system, format.text);
      } catch (const Error& failure) {
        notes_.push_back(failure.what());
      }
    }
    if (!error.empty()) notes_.push_back(error);
  }

  decoder.slots.resize(reader.events().size());
  for (std::size_t i = 0; i < reader.events().size(); ++i) {
    const auto& event = reader.events()[i];
    if (event.attr.type != tracepoint) continue;
    const TracepointFormat* format = decoder.catalog.find(event.attr.config);
    std::string full_name = name_of(event);
    std::string_view name = full_name;
    if (format == nullptr && name.starts_with("sched:")) {
      // A file without tracing data: this machine's format is the best guess, as perf's
      // tracepoint ids and layouts rarely change between kernels.
      try {
        format = &decoder.catalog.load("sched", name.substr(6, name.find(':', 6) - 6));
        notes_.push_back(fmt::format(
            "{}: the recording has no format for it (no tracing data); decoded with this "
            "machine's",
            name));
      } catch (const Error& failure) {
        notes_.push_back(failure.what());
      }
    }
    if (format == nullptr || format->system() != "sched") continue;
    Kind kind = kind_of(format->name());
    if (kind == Kind::none) continue;
    Decoder::Slot slot;
    slot.kind = kind;
    slot.format = format;
    const auto& names = field_names[static_cast<std::size_t>(kind)];
    std::size_t required = required_fields[static_cast<std::size_t>(kind)];
    bool complete = true;
    for (std::size_t f = 0; f < names.size() && !names[f].empty(); ++f) {
      slot.fields[f] = format->field(names[f]);
      if (slot.fields[f] == nullptr && f < required) complete = false;
    }
    if (!complete) {
      notes_.push_back(
          fmt::format("{}: its format lacks fields perfscope sched reads; its "
                      "events are left out",
                      event.name));
      continue;
    }
    decoder.slots[i] = slot;
  }
  bool has_switch = std::any_of(decoder.slots.begin(), decoder.slots.end(),
                                [](const auto& slot) { return slot.kind == Kind::switch_; });
  if (!has_switch) {
    std::string message = missing_sched_events_message(reader);
    for (const auto& note : notes_) message += "; " + note;
    throw SchedTraceError(message);
  }
}

SchedTrace::~SchedTrace() = default;

bool SchedTrace::has_event(std::string_view name) const noexcept {
  return std::any_of(decoder_->slots.begin(), decoder_->slots.end(), [&](const auto& slot) {
    return slot.format != nullptr && slot.format->name() == name;
  });
}

std::uint32_t SchedTrace::cpus_online() const noexcept {
  return reader_.features().nr_cpus_online.value_or(0);
}

SchedWalkStats SchedTrace::walk(SchedEventHandler& handler, SchedInterest interest) {
  SchedWalkStats stats;
  const Decoder& decoder = *decoder_;
  std::array<bool, 7> wanted{};
  wanted[static_cast<std::size_t>(Kind::switch_)] = interest.switches;
  wanted[static_cast<std::size_t>(Kind::waking)] = interest.wakeups;
  wanted[static_cast<std::size_t>(Kind::wakeup)] = interest.wakeups;
  wanted[static_cast<std::size_t>(Kind::wakeup_new)] = interest.wakeups;
  wanted[static_cast<std::size_t>(Kind::migrate)] = interest.migrations;
  wanted[static_cast<std::size_t>(Kind::runtime)] = interest.runtime;
  SampleRecord sample;
  Record record;
  DecodeError error;
  SchedSwitchEvent switched;
  SchedWakeupEvent woken;
  SchedMigrateEvent migrated;
  SchedRuntimeEvent ran;
  auto visit = [&](const PerfDataRecord& item) {
    ++stats.records;
    const ParseConfig& config = reader_.events()[item.event].config;
    auto type = static_cast<abi::RecordType>(item.view.type());
    switch (type) {
      case abi::RecordType::sample: {
        const Decoder::Slot& slot = decoder.slots[item.event];
        if (!wanted[static_cast<std::size_t>(slot.kind)]) return;
        if (!decode_sample(item.view, config, sample, error)) {
          ++stats.malformed;
          return;
        }
        std::span<const std::byte> raw = sample.raw;
        bool ok = true;
        auto fill = [&](SchedEventContext& context) {
          context.time = sample.time;
          context.cpu = sample.cpu;
          context.pid = sample.pid;
          context.tid = sample.tid;
        };
        switch (slot.kind) {
          case Kind::switch_:
            fill(switched);
            if (interest.names) switched.prev_comm = decoder.text(slot, 0, raw, ok);
            switched.prev_pid = static_cast<std::int32_t>(decoder.number(slot, 1, raw, ok));
            switched.prev_prio = static_cast<std::int32_t>(decoder.number(slot, 2, raw, ok));
            switched.prev_state = decoder.number(slot, 3, raw, ok);
            if (interest.names) switched.next_comm = decoder.text(slot, 4, raw, ok);
            switched.next_pid = static_cast<std::int32_t>(decoder.number(slot, 5, raw, ok));
            switched.next_prio = static_cast<std::int32_t>(decoder.number(slot, 6, raw, ok));
            if (!ok) break;
            ++stats.sched_events;
            handler.on_switch(switched);
            return;
          case Kind::waking:
          case Kind::wakeup:
          case Kind::wakeup_new:
            fill(woken);
            woken.kind = slot.kind == Kind::waking   ? SchedWakeupKind::waking
                         : slot.kind == Kind::wakeup ? SchedWakeupKind::wakeup
                                                     : SchedWakeupKind::wakeup_new;
            if (interest.names) woken.target_comm = decoder.text(slot, 0, raw, ok);
            woken.target = static_cast<std::int32_t>(decoder.number(slot, 1, raw, ok));
            woken.target_cpu = static_cast<std::int32_t>(decoder.number(slot, 2, raw, ok));
            if (!ok) break;
            ++stats.sched_events;
            handler.on_wakeup(woken);
            return;
          case Kind::migrate:
            fill(migrated);
            migrated.target = static_cast<std::int32_t>(decoder.number(slot, 0, raw, ok));
            migrated.orig_cpu = static_cast<std::int32_t>(decoder.number(slot, 1, raw, ok));
            migrated.dest_cpu = static_cast<std::int32_t>(decoder.number(slot, 2, raw, ok));
            if (!ok) break;
            ++stats.sched_events;
            handler.on_migrate(migrated);
            return;
          case Kind::runtime:
            fill(ran);
            ran.target = static_cast<std::int32_t>(decoder.number(slot, 0, raw, ok));
            ran.runtime = static_cast<std::uint64_t>(decoder.number(slot, 1, raw, ok));
            if (!ok) break;
            ++stats.sched_events;
            handler.on_runtime(ran);
            return;
          case Kind::none: return;
        }
        ++stats.malformed;
        return;
      }
      case abi::RecordType::comm:
        tasks_.observe(item.view, config);
        if (decode_record(item.view, config, record, error)) {
          if (const auto* comm = std::get_if<CommRecord>(&record)) {
            handler.on_comm(comm->pid, comm->tid);
          }
        }
        return;
      case abi::RecordType::fork:
      case abi::RecordType::exit: {
        if (type == abi::RecordType::fork) tasks_.observe(item.view, config);
        if (!decode_record(item.view, config, record, error)) return;
        if (const auto* task = std::get_if<TaskRecord>(&record)) {
          handler.on_task(task->pid, task->tid, task->time, type == abi::RecordType::exit);
        }
        return;
      }
      case abi::RecordType::lost: {
        if (!decode_record(item.view, config, record, error)) return;
        if (const auto* lost = std::get_if<LostRecord>(&record)) {
          stats.lost += lost->lost;
          ++stats.lost_records;
          handler.on_lost(lost->lost, lost->sample_id.cpu, lost->sample_id.time);
        }
        return;
      }
      default: return;
    }
  };
  stats.error = reader_.for_each_record_ordered(visit);
  if (!stats.error && reader_.data_error()) stats.error = reader_.data_error();
  return stats;
}

}  // namespace perfscope
