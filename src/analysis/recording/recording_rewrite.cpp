#include "perfscope/analysis/recording/recording_rewrite.hpp"

#include <stdexcept>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/recording/perf_data_sink.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

namespace {

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
  namespace sf = abi::sample_format;
  for (const auto& event : reader.events()) {
    if ((event.attr.sample_type & (sf::regs_user | sf::stack_user)) ==
        (sf::regs_user | sf::stack_user)) {
      return true;
    }
  }
  return false;
}

RecordingRewriteResult rewrite_recording(const PerfDataReader& reader, const std::string& output,
                                         const RecordingRewrite& rewrite) {
  if (rewrite.unwind && !has_stack_copies(reader)) {
    throw std::invalid_argument(
        "the recording has no stack copies to unwind: inject --unwind reads recordings made with "
        "--call-graph dwarf (perf record --call-graph dwarf, or perfscope record --call-graph "
        "dwarf --keep-stacks); perfscope record --call-graph dwarf unwinds while recording");
  }
  std::vector<PerfDataEvent> events;
  for (const auto& event : reader.events()) {
    events.push_back(PerfDataEvent{
        rewrite.unwind ? StackCompleter::output_attr(event.attr, StackCompletion::unwind_dwarf)
                       : event.attr,
        event.name, event.ids});
  }
  PerfDataWriter writer(output, std::move(events));
  writer.begin_pipe(reader.features());
  TaskMaps maps;
  StackCompleter completer(maps, StackCompletion::unwind_dwarf);
  const bool note_hits = rewrite.build_ids == RecordingRewrite::BuildIds::hit;
  RecordingRewriteResult result;
  std::vector<std::byte> completed;
  SampleRecord sample;
  DecodeError decode_error;
  std::uint64_t since_round = 0;
  auto error = reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    const RecordView& view = record.view;
    result.bytes_in += view.bytes.size();
    if (view.header.type >= 64 && written_by_the_writer(view.header.type)) return;
    const ParseConfig& config = reader.events()[record.event].config;
    const bool is_sample = view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample);
    if (is_sample && note_hits && decode_sample(view, config, sample, decode_error)) {
      maps.dso_of(sample.pid, sample.ip,
                  static_cast<std::uint16_t>(sample.misc & abi::record_misc::cpumode_mask));
    }
    if (is_sample && rewrite.unwind && completer.complete(view, config, completed)) {
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
  PerfDataFeatures features = reader.features();
  switch (rewrite.build_ids) {
    case RecordingRewrite::BuildIds::kept: break;
    case RecordingRewrite::BuildIds::hit:
      features.build_ids = build_id_entries(maps.hit_files());
      break;
    case RecordingRewrite::BuildIds::every_mapped:
      features.build_ids = build_id_entries(maps.mapped_files());
      break;
  }
  result.build_ids = features.build_ids.size();
  writer.finish(features);
  if (rewrite.unwind) result.stacks = completer.statistics();
  if (error) throw *error;
  return result;
}

}  // namespace perfscope
