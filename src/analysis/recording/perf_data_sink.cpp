#include "perfscope/analysis/recording/perf_data_sink.hpp"

#include <time.h>

#include <algorithm>
#include <cstring>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"

namespace perfscope {

namespace {

namespace sf = abi::sample_format;
namespace misc = abi::record_misc;

constexpr auto sample_record_type = static_cast<std::uint32_t>(abi::RecordType::sample);

}  // namespace

void PerfDataSink::record(const RecordView& view, std::size_t, const ParseConfig& config) {
  writer_.append(view.bytes);
  if (view.header.type == sample_record_type) {
    note_hit(view, config);
  } else if (TaskMaps::observes(view.header.type)) {
    maps_.observe(view, config);
    last_hits_.fill(LastHit{});
    jit_files_.observe(view, config);
  } else if (view.header.type == static_cast<std::uint32_t>(abi::RecordType::exit)) {
    jit_files_.observe(view, config);
  }
}

void PerfDataSink::aux_data(const SessionAuxData& data) {
  perf_data::AuxtraceRecord record{};
  record.offset = data.chunk.offset;
  // perf's reference tells apart buffers of one area read at different times (snapshots): a
  // raw monotonic timestamp does that.
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC_RAW, &now);
  record.reference = static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u +
                     static_cast<std::uint64_t>(now.tv_nsec);
  record.idx = static_cast<std::uint32_t>(data.buffer);
  record.tid = static_cast<std::uint32_t>(data.tid);
  record.cpu = static_cast<std::uint32_t>(data.cpu);
  writer_.append_auxtrace(record, data.chunk.first, data.chunk.second);
}

// Reads the three fields it needs where the sample layout puts them: [IDENTIFIER] IP PID/TID TIME
// (the recorder always samples IP, TID and TIME), without decoding the rest (call chains, stacks).
void PerfDataSink::note_hit(const RecordView& view, const ParseConfig& config) noexcept {
  if (!config.has(sf::ip) || !config.has(sf::tid) || !config.has(sf::time)) return;
  std::size_t at = sizeof(abi::RecordHeader) + (config.has(sf::identifier) ? 8 : 0);
  if (at + 24 > view.bytes.size()) return;
  std::uint64_t ip = 0, time = 0;
  std::uint32_t pid = 0;
  std::memcpy(&ip, view.bytes.data() + at, sizeof ip);
  std::memcpy(&pid, view.bytes.data() + at + 8, sizeof pid);
  std::memcpy(&time, view.bytes.data() + at + 16, sizeof time);
  if (first_time_ == 0) first_time_ = time;
  last_time_ = std::max(last_time_, time);
  auto cpumode = static_cast<std::uint16_t>(view.header.misc & misc::cpumode_mask);
  // By process and 1 MiB of address space: a process's code and the kernel's, apart.
  std::size_t slot =
      (pid * 0x9e3779b1u ^ static_cast<std::uint32_t>(ip >> 20) ^ cpumode) % last_hit_slots;
  LastHit& last = last_hits_[slot];
  if (pid == last.pid && cpumode == last.cpumode && ip >= last.start && ip < last.end) {
    return;  // that file is noted already
  }
  if (!maps_.dso_of(pid, ip, cpumode)) return;
  if (auto mapping = maps_.mapping_of(pid, ip, cpumode)) {
    last = LastHit{pid, cpumode, mapping->start, mapping->end};
  }
}

std::vector<BuildIdEntry> PerfDataSink::build_ids(bool every_mapped_file) const {
  return build_id_entries(every_mapped_file ? maps_.mapped_files() : maps_.hit_files());
}

std::vector<BuildIdEntry> build_id_entries(const std::vector<TaskMaps::Hit>& files) {
  std::vector<BuildIdEntry> entries;
  for (const auto& hit : files) {
    BuildIdEntry entry;
    entry.filename = hit.filename;
    entry.misc = hit.kernel ? misc::kernel : misc::user;
    std::optional<std::vector<std::uint8_t>> id;
    if (hit.kernel && hit.filename == "[kernel.kallsyms]") {
      id = kernel_build_id();
    } else if (!hit.filename.empty() && hit.filename.front() == '/') {
      id = read_build_id(hit.filename);
    }
    if (!id) continue;
    entry.build_id = std::move(*id);
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace perfscope
