#include "report_statistics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "perf_task_table.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope::cli {

// perf_event__names: the kernel's record types, then perf's own (64 and up) as perf names them.
std::string_view perf_record_name(std::uint32_t type) noexcept {
  static constexpr std::array<std::string_view, 19> user_names = {
      "ATTR",      "EVENT_TYPE",    "TRACING_DATA", "BUILD_ID",       "FINISHED_ROUND",
      "ID_INDEX",  "AUXTRACE_INFO", "AUXTRACE",     "AUXTRACE_ERROR", "THREAD_MAP",
      "CPU_MAP",   "STAT_CONFIG",   "STAT",         "STAT_ROUND",     "EVENT_UPDATE",
      "TIME_CONV", "FEATURE",       "COMPRESSED",   "FINISHED_INIT"};
  if (type >= 64) return type - 64 < user_names.size() ? user_names[type - 64] : "";
  return record_type_name(type);
}

std::optional<PerfDataError> print_record_statistics(
    const PerfDataReader& reader, std::FILE* out, bool skip_empty, bool lost_samples_lines,
    const std::vector<std::uint64_t>* sample_counts) {
  std::map<std::uint32_t, std::uint64_t> by_type;
  std::uint64_t total = 0;
  std::vector<std::uint64_t> samples(reader.events().size()), lost_samples(samples.size());
  std::uint64_t last_carrier = ~std::uint64_t{0};
  const auto compressed = static_cast<std::uint32_t>(abi::UserRecordType::compressed);
  auto count = [&](std::uint32_t type) {
    ++by_type[type];
    ++total;
  };
  auto error = reader.for_each_record([&](const PerfDataRecord& record) {
    const std::uint32_t type = record.view.header.type;
    // A COMPRESSED record is counted once, with every record it carried.
    if (record.decompressed) {
      if (record.offset != last_carrier) count(compressed);
      last_carrier = record.offset;
    }
    count(type);
    if (type == static_cast<std::uint32_t>(abi::RecordType::sample)) {
      ++samples[record.event];
    } else if (type == static_cast<std::uint32_t>(abi::RecordType::lost_samples) &&
               record.view.bytes.size() >= 16) {
      std::uint64_t lost = 0;  // after the header
      std::memcpy(&lost, record.view.bytes.data() + 8, sizeof lost);
      lost_samples[record.event] += lost;
    }
  });
  if (sample_counts != nullptr && sample_counts->size() == samples.size()) samples = *sample_counts;
  const auto& present = reader.features().present;
  const bool aux = std::find(present.begin(), present.end(),
                             static_cast<unsigned>(perf_data::Feature::auxtrace)) != present.end();
  fmt::print(
      out, "\nAggregated stats:{}\n",
      aux ? " (excludes AUX area (e.g. instruction trace) decoded / synthesized events)" : "");
  fmt::print(out, "{:>16} events: {:>10}\n", "TOTAL", total);
  if (!skip_empty) {
    // Every type perf 6.1 names: the kernel's up to AUX_OUTPUT_HW_ID, perf's own after.
    for (std::uint32_t type = 1; type <= 21; ++type) by_type.try_emplace(type, 0);
    for (std::uint32_t type = 64; type <= 82; ++type) by_type.try_emplace(type, 0);
  }
  for (const auto& [type, n] : by_type) {
    std::string_view name = perf_record_name(type);
    if (name.empty()) continue;
    fmt::print(out, "{:>16} events: {:>10}  ({:4.1f}%)\n", name, n,
               100.0 * static_cast<double>(n) / static_cast<double>(total));
  }
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (skip_empty && samples[i] == 0 && (!lost_samples_lines || lost_samples[i] == 0)) continue;
    fmt::print(out, "{} stats:\n", reader.events()[i].name);
    if (samples[i] != 0) fmt::print(out, "{:>16} events: {:>10}\n", "SAMPLE", samples[i]);
    if (lost_samples_lines && lost_samples[i] != 0) {
      fmt::print(out, "{:>16} events: {:>10}\n", "LOST_SAMPLES", lost_samples[i]);
    }
  }
  return error;
}

std::optional<PerfDataError> print_task_tree(const PerfDataReader& reader, std::FILE* out,
                                             bool maps) {
  PerfTaskTable tasks;
  Record decoded;
  using abi::RecordType;
  auto error = reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    const auto type = static_cast<RecordType>(record.view.header.type);
    bool mmap = type == RecordType::mmap || type == RecordType::mmap2;
    if (type != RecordType::fork && type != RecordType::comm && !(maps && mmap)) return;
    DecodeError decode_error;
    if (!decode_record(record.view, reader.events()[record.event].config, decoded, decode_error)) {
      return;
    }
    const std::uint16_t misc = record.view.header.misc;
    if (type == RecordType::fork) {
      tasks.fork(std::get<TaskRecord>(decoded), (misc & abi::record_misc::fork_exec) == 0);
    } else if (type == RecordType::comm) {
      tasks.comm(std::get<CommRecord>(decoded));
    } else if (type == RecordType::mmap) {
      tasks.mmap(std::get<MmapRecord>(decoded), (misc & abi::record_misc::mmap_data) != 0);
    } else {
      tasks.mmap(std::get<Mmap2Record>(decoded));
    }
  });
  auto tree = tasks.render(maps);
  if (!tree) {
    throw std::runtime_error(
        "the recording's tasks do not form a tree: a FORK names a parent that no record "
        "created (perf says: failed to process tasks)");
  }
  std::fputs(tree->c_str(), out);
  return error;
}

}  // namespace perfscope::cli
