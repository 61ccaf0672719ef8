#include "perfscope/analysis/unwinding/recording_unwinding.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"

namespace perfscope {

namespace {

namespace sf = abi::sample_format;
using abi::UserRecordType;

// Records that describe the stream itself rather than what was recorded: the writer makes its
// own (rounds, the init mark) or writes them as feature sections (pipe mode's headers).
bool written_by_the_writer(std::uint32_t type) noexcept {
  switch (static_cast<UserRecordType>(type)) {
    case UserRecordType::header_attr:
    case UserRecordType::header_event_type:
    case UserRecordType::header_tracing_data:
    case UserRecordType::header_build_id:
    case UserRecordType::finished_round:
    case UserRecordType::header_feature:
    case UserRecordType::finished_init:
    case UserRecordType::compressed:
    case UserRecordType::compressed2: return true;
    default: return false;
  }
}

// A FINISHED_ROUND every this many records: the walk hands them out in time order, so any
// place is a valid round's end; readers then sort small rounds.
constexpr std::uint64_t records_per_round = 65536;

}  // namespace

bool has_stack_copies(const PerfDataReader& reader) noexcept {
  for (const auto& event : reader.events()) {
    if ((event.attr.sample_type & (sf::regs_user | sf::stack_user)) ==
        (sf::regs_user | sf::stack_user)) {
      return true;
    }
  }
  return false;
}

RecordingUnwinding unwind_recording(const PerfDataReader& reader, const std::string& output) {
  if (!has_stack_copies(reader)) {
    throw std::invalid_argument(
        "the recording has no stack copies to unwind: inject --unwind reads recordings made with "
        "--call-graph dwarf (perf record --call-graph dwarf, or perfscope record --call-graph "
        "dwarf --keep-stacks); perfscope record --call-graph dwarf unwinds while recording");
  }
  std::vector<PerfDataEvent> events;
  for (const auto& event : reader.events()) {
    events.push_back(
        PerfDataEvent{StackCompleter::output_attr(event.attr, StackCompletion::unwind_dwarf),
                      event.name, event.ids});
  }
  PerfDataWriter writer(output, std::move(events));
  TaskMaps maps;
  StackCompleter completer(maps, StackCompletion::unwind_dwarf);
  RecordingUnwinding result;
  std::vector<std::byte> completed;
  std::uint64_t since_round = 0;
  auto error = reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    const RecordView& view = record.view;
    result.bytes_in += view.bytes.size();
    if (view.header.type >= 64 && written_by_the_writer(view.header.type)) return;
    const ParseConfig& config = reader.events()[record.event].config;
    if (view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample) &&
        completer.complete(view, config, completed)) {
      writer.append(std::span<const std::byte>(completed));
      result.bytes_out += completed.size();
    } else {
      if (TaskMaps::observes(view.header.type)) maps.observe(view, config);
      writer.append(view);
      if (!record.trailing.empty()) writer.append(record.trailing);
      result.bytes_out += view.bytes.size() + record.trailing.size();
    }
    ++result.records;
    if (++since_round == records_per_round) {
      writer.end_round();
      since_round = 0;
    }
  });
  writer.end_round();
  writer.finish(reader.features());
  result.stacks = completer.statistics();
  if (error) throw *error;
  return result;
}

}  // namespace perfscope
