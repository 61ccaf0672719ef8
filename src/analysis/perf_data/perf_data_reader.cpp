// PerfDataReader: the header, attrs, features and records of a perf.data file or pipe-mode
// stream, checked as they are walked. The file and pipe walks share their record checks and
// error offsets here; the parts that stand alone are their own files (opening, feature codec,
// zstd stream, round-ordering queue, event naming).
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "analysis/perf_data/round_queue.hpp"
#include "analysis/perf_data/walk_tuning.hpp"
#include "analysis/perf_data/zstd_record_stream.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/event_naming.hpp"
#include "perfscope/analysis/perf_data/feature_codec.hpp"
#include "perfscope/analysis/perf_data/tracing_data.hpp"
#include "perfscope/core/error.hpp"

namespace perfscope {

namespace {

namespace sf = abi::sample_format;

// The largest record: its size is a u16.
constexpr std::size_t record_size_max = 0xffff;
using perf_data::cache_line;
using perf_data::drop_step;
using perf_data::prefetch_distance;
using perf_data::type_of;

std::uint64_t load_u64(const std::byte* at) noexcept {
  std::uint64_t value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

template <class T>
T load(const std::byte* at) noexcept {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

// perf_record_cpu_map_data (packed: a u16 type, then its encoding at offset 2), as CPU numbers;
// -1 stands for "any CPU". Empty optional when the encoding is unknown or does not fit.
std::optional<std::vector<int>> decode_cpu_map(std::span<const std::byte> data) {
  constexpr std::uint16_t cpus_list = 0, cpus_mask = 1, cpus_range = 2;
  if (data.size() < 4) return std::nullopt;
  auto type = load<std::uint16_t>(data.data());
  std::vector<int> cpus;
  if (type == cpus_list) {
    auto count = load<std::uint16_t>(data.data() + 2);
    if (4 + std::size_t{count} * 2 > data.size()) return std::nullopt;
    for (std::size_t i = 0; i < count; ++i) {
      auto cpu = load<std::uint16_t>(data.data() + 4 + i * 2);
      cpus.push_back(cpu == 0xffff ? -1 : cpu);
    }
  } else if (type == cpus_mask) {
    if (data.size() < 6) return std::nullopt;
    auto words = load<std::uint16_t>(data.data() + 2);
    auto word_size = load<std::uint16_t>(data.data() + 4);
    // 32-bit words follow at once; 64-bit ones after 4 bytes of padding.
    std::size_t first = word_size == 4 ? 6 : 10;
    if ((word_size != 4 && word_size != 8) || first + std::size_t{words} * word_size > data.size())
      return std::nullopt;
    for (std::size_t word = 0; word < words; ++word) {
      std::uint64_t bits = word_size == 4 ? load<std::uint32_t>(data.data() + first + word * 4)
                                          : load<std::uint64_t>(data.data() + first + word * 8);
      for (unsigned bit = 0; bit < word_size * 8u; ++bit) {
        if ((bits >> bit) & 1) cpus.push_back(static_cast<int>(word * word_size * 8 + bit));
      }
    }
  } else if (type == cpus_range) {
    if (data.size() < 8) return std::nullopt;
    bool any_cpu = std::to_integer<std::uint8_t>(data[2]) != 0;
    auto start = load<std::uint16_t>(data.data() + 4);
    auto end = load<std::uint16_t>(data.data() + 6);
    if (any_cpu) cpus.push_back(-1);
    for (unsigned cpu = start; cpu <= end; ++cpu) cpus.push_back(static_cast<int>(cpu));
  } else {
    return std::nullopt;
  }
  return cpus;
}

}  // namespace

void PerfDataReader::parse() {
  parse_file_header();
  if (pipe_mode_) {
    parse_pipe();
  } else {
    parse_attrs();
    // A truncated file lost its feature sections with the end of its data.
    if (!truncated_) parse_features();
    parse_leading_records();
  }
  if (!features_.simpleperf_meta_info.empty() ||
      std::any_of(features_.present.begin(), features_.present.end(),
                  [](unsigned bit) { return bit >= perf_data::simpleperf_feature_first; })) {
    std::string version;
    for (const auto& [key, value] : features_.simpleperf_meta_info) {
      if (key == "simpleperf_version") version = " " + value;
    }
    notes_.push_back(fmt::format(
        "written by simpleperf{}: its own feature sections (bits 128 and up) and record types "
        "(32768 and up: KERNEL_SYMBOL, DSO, SYMBOL, CALLCHAIN, UNWINDING_RESULT, ...) are "
        "skipped (perf stops at them); events are named from their attrs, as perf names them",
        version));
  }
  finish_events();
}

std::uint64_t PerfDataReader::user_records_seen(abi::UserRecordType type) const noexcept {
  auto index = static_cast<std::uint32_t>(type) - 64;
  return index < user_records_.size() ? user_records_[index] : 0;
}

void PerfDataReader::parse_file_header() {
  if (bytes_.empty()) {
    throw PerfDataError(0, "the file is empty (the recording stopped before writing anything)");
  }
  if (bytes_.size() < sizeof(perf_data::PipeHeader)) {
    throw PerfDataError(0, fmt::format("only {} bytes: too short for a perf.data header (the "
                                       "recording stopped before writing anything)",
                                       bytes_.size()));
  }
  std::uint64_t magic = load_u64(bytes_.data());
  if (magic == perf_data::file_magic_swapped) {
    throw PerfDataError(0,
                        "the file was written on a machine of the other byte order; "
                        "perfscope reads native-endian files only");
  }
  if (magic != perf_data::file_magic) {
    throw PerfDataError(0, "not a perf.data file (the magic is not PERFILE2)");
  }
  std::uint64_t size = load_u64(bytes_.data() + 8);
  if (size == sizeof(perf_data::PipeHeader)) {
    pipe_mode_ = true;
    data_begin_ = sizeof(perf_data::PipeHeader);
    data_end_ = bytes_.size();
    return;
  }
  if (size != sizeof(perf_data::FileHeader)) {
    throw PerfDataError(8, fmt::format("header size {} is neither 104 (file) nor 16 (pipe)", size));
  }
  if (bytes_.size() < sizeof(perf_data::FileHeader)) {
    throw PerfDataError(bytes_.size(), "the file ends inside its 104-byte header");
  }
  std::memcpy(&header_, bytes_.data(), sizeof header_);
  std::uint64_t file_size = bytes_.size();
  data_begin_ = header_.data.offset;
  if (data_begin_ < sizeof(perf_data::FileHeader) || data_begin_ > file_size) {
    throw PerfDataError(offsetof(perf_data::FileHeader, data),
                        fmt::format("data section offset {} is outside the file ({} bytes)",
                                    data_begin_, file_size));
  }
  bool has_features = false;
  for (auto word : header_.features) has_features |= word != 0;
  if (header_.data.size == 0) {
    // The recorder never finished its header: the records run to the end of the file.
    data_end_ = file_size;
    notes_.push_back(
        "the header's data size is 0 (the recorder did not finish the file): reading the "
        "records up to the end of the file");
  } else if (header_.data.size > file_size - data_begin_) {
    // A truncated copy: what is left of the data section is still worth reading.
    data_error_ =
        PerfDataError(file_size, fmt::format("the data section ({} bytes at offset {}) runs past "
                                             "the end of the file ({} bytes): the file is "
                                             "cut short",
                                             header_.data.size, data_begin_, file_size));
    truncated_ = true;
    data_end_ = file_size;
  } else {
    data_end_ = data_begin_ + header_.data.size;
    if (!has_features && data_end_ < file_size) {
      // A perfscope recording updates the data size after each round; records flushed after
      // the last update (a recorder killed in between) follow it.
      notes_.push_back(fmt::format(
          "the file has no feature sections (the recorder did not finish it): reading {} bytes "
          "past the data size the header gives",
          file_size - data_end_));
      data_end_ = file_size;
    } else if (!has_features) {
      notes_.push_back("the file has no feature sections: the recorder did not finish it");
    }
  }
  if (data_end_ == file_size && (!has_features || truncated_)) {
    // Cut a torn last record off: everything before it is sound.
    std::uint64_t offset = data_begin_;
    RecordView view;
    std::uint64_t next = 0;
    while (offset < data_end_) {
      auto error = record_at(offset, data_end_, view, next);
      if (error) {
        if (!truncated_) {
          notes_.push_back(
              fmt::format("the last record (at offset {:#x}) is incomplete and was "
                          "left out",
                          offset));
        }
        data_end_ = offset;
        break;
      }
      offset = next;
    }
  }
}

void PerfDataReader::parse_attrs() {
  const auto& section = header_.attrs;
  if (header_.attr_size < abi::attr_size::ver0 + sizeof(perf_data::FileSection)) {
    throw PerfDataError(offsetof(perf_data::FileHeader, attr_size),
                        fmt::format("attr entry size {} is smaller than the first attr version "
                                    "plus its ids section",
                                    header_.attr_size));
  }
  if (section.offset > bytes_.size() || section.size > bytes_.size() - section.offset) {
    throw PerfDataError(offsetof(perf_data::FileHeader, attrs),
                        fmt::format("attr section ({} bytes at offset {}) is outside the file",
                                    section.size, section.offset));
  }
  std::uint64_t count = section.size / header_.attr_size;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t at = section.offset + i * header_.attr_size;
    PerfDataEventInfo info;
    std::uint32_t attr_size = 0;
    std::memcpy(&attr_size, bytes_.data() + at + 4, sizeof attr_size);
    if (attr_size == 0) attr_size = abi::attr_size::ver0;
    if (attr_size + sizeof(perf_data::FileSection) > header_.attr_size) {
      throw PerfDataError(at + 4, fmt::format("attr {} says it is {} bytes, more than the {} its "
                                              "entry holds",
                                              i, attr_size, header_.attr_size));
    }
    std::memcpy(&info.attr, bytes_.data() + at,
                std::min<std::size_t>(attr_size, sizeof(abi::PerfEventAttr)));
    info.file_attr_size = attr_size;
    perf_data::FileSection ids;
    std::memcpy(&ids, bytes_.data() + at + attr_size, sizeof ids);
    if (ids.offset > bytes_.size() || ids.size > bytes_.size() - ids.offset ||
        ids.size % sizeof(std::uint64_t) != 0) {
      throw PerfDataError(at + attr_size,
                          fmt::format("the ids of attr {} ({} bytes at offset {}) are outside the "
                                      "file or not whole u64s",
                                      i, ids.size, ids.offset));
    }
    info.ids.resize(ids.size / sizeof(std::uint64_t));
    if (!info.ids.empty()) std::memcpy(info.ids.data(), bytes_.data() + ids.offset, ids.size);
    events_.push_back(std::move(info));
  }
}

void PerfDataReader::parse_features() {
  // The section table follows the data: one FileSection per feature bit set, in bit order.
  std::uint64_t table = header_.data.offset + header_.data.size;
  unsigned index = 0;
  for (unsigned bit = 1; bit < perf_data::feature_bits; ++bit) {
    if (!header_.has_feature(bit)) continue;
    std::uint64_t at = table + index * sizeof(perf_data::FileSection);
    ++index;
    features_.present.push_back(bit);
    if (at > bytes_.size() || bytes_.size() - at < sizeof(perf_data::FileSection)) {
      throw PerfDataError(at, fmt::format("the section table entry of feature {} is past the "
                                          "end of the file: the file is truncated",
                                          perf_data::feature_label(bit)));
    }
    perf_data::FileSection section;
    std::memcpy(&section, bytes_.data() + at, sizeof section);
    if (section.offset > bytes_.size() || section.size > bytes_.size() - section.offset) {
      throw PerfDataError(at,
                          fmt::format("feature {} ({} bytes at offset {}) is outside the file",
                                      perf_data::feature_label(bit), section.size, section.offset));
    }
    parse_feature(bit, section.offset, section.size);
  }
}

void PerfDataReader::parse_feature(unsigned bit, std::uint64_t offset, std::uint64_t size) {
  std::vector<PerfDataEvent> described;
  decode_feature(bit, bytes_, offset, size, {features_, described, notes_});
  for (std::size_t i = 0; i < described.size(); ++i) {
    if (i < events_.size()) {
      events_[i].name = std::move(described[i].name);
    } else if (pipe_mode_) {
      // Pipe files have no attr section: EVENT_DESC alone describes their events.
      PerfDataEventInfo info;
      info.attr = described[i].attr;
      info.file_attr_size = described[i].attr.size;
      info.ids = std::move(described[i].ids);
      info.name = std::move(described[i].name);
      events_.push_back(std::move(info));
    }
  }
}

void PerfDataReader::parse_pipe() {
  // Walk the stream once: the attrs and features come as records before (or among) the data.
  std::uint64_t offset = data_begin_;
  RecordView view;
  std::uint64_t next = 0;
  while (offset < data_end_) {
    if (auto error = record_at(offset, data_end_, view, next)) {
      data_error_ = error;
      data_end_ = offset;
      break;
    }
    auto type = static_cast<abi::UserRecordType>(view.header.type);
    if (type == abi::UserRecordType::header_attr) {
      std::uint64_t payload = offset + abi::record_header_size;
      std::uint32_t attr_size = 0;
      if (view.header.size >= abi::record_header_size + 8) {
        std::memcpy(&attr_size, bytes_.data() + payload + 4, sizeof attr_size);
      }
      if (attr_size == 0) attr_size = abi::attr_size::ver0;
      if (attr_size > view.header.size - abi::record_header_size) {
        data_error_ = PerfDataError(offset, fmt::format("HEADER_ATTR record of {} bytes holds an "
                                                        "attr of {} bytes",
                                                        view.header.size, attr_size));
        data_end_ = offset;
        break;
      }
      PerfDataEventInfo info;
      std::memcpy(&info.attr, bytes_.data() + payload,
                  std::min<std::size_t>(attr_size, sizeof(abi::PerfEventAttr)));
      info.file_attr_size = attr_size;
      std::uint64_t id_bytes = view.header.size - abi::record_header_size - attr_size;
      info.ids.resize(id_bytes / sizeof(std::uint64_t));
      if (!info.ids.empty()) {
        std::memcpy(info.ids.data(), bytes_.data() + payload + attr_size,
                    info.ids.size() * sizeof(std::uint64_t));
      }
      events_.push_back(std::move(info));
    } else if (type == abi::UserRecordType::header_feature && view.header.size > 16) {
      // (A record with no contents is the end-of-features mark.)
      std::uint64_t feature = load_u64(bytes_.data() + offset + abi::record_header_size);
      if (feature < perf_data::feature_bits) {
        features_.present.push_back(static_cast<unsigned>(feature));
        try {
          parse_feature(static_cast<unsigned>(feature), offset + 16, view.header.size - 16u);
        } catch (const PerfDataError& error) {
          data_error_ = error;
          data_end_ = offset;
          break;
        }
      }
    } else if (type == abi::UserRecordType::header_tracing_data) {
      std::uint32_t size = 0;
      std::memcpy(&size, bytes_.data() + offset + abi::record_header_size, sizeof size);
      auto begin = bytes_.begin() + static_cast<std::ptrdiff_t>(offset + view.header.size);
      features_.tracing_data.emplace(begin, begin + size);
    }
    if (!take_user_record(offset, view.header)) break;
    offset = next;
  }
}

void PerfDataReader::parse_leading_records() {
  // perf writes its user-space records (ID_INDEX, EVENT_UPDATE, TIME_CONV, THREAD_MAP, ...) with
  // the synthesized ones, before FINISHED_INIT and the first sample: a short walk finds them.
  std::uint64_t offset = data_begin_;
  RecordView view;
  std::uint64_t next = 0;
  while (offset < data_end_) {
    if (record_at(offset, data_end_, view, next)) return;  // the walk reports it
    std::uint32_t type = view.header.type;
    if (type == static_cast<std::uint32_t>(abi::RecordType::sample) ||
        type == type_of(abi::UserRecordType::compressed) ||
        type == type_of(abi::UserRecordType::compressed2)) {
      return;
    }
    if (!take_user_record(offset, view.header)) return;
    if (type == type_of(abi::UserRecordType::finished_init)) return;
    offset = next;
  }
}

bool PerfDataReader::take_user_record(std::uint64_t offset, const abi::RecordHeader& header) {
  if (header.type < 64) return true;
  if (header.type - 64 < user_records_.size()) ++user_records_[header.type - 64];
  std::span<const std::byte> record = bytes_.subspan(offset, header.size);
  auto malformed = [&](const std::string& what) {
    data_error_ = PerfDataError(offset, what);
    data_end_ = offset;
    return false;
  };
  switch (static_cast<abi::UserRecordType>(header.type)) {
    case abi::UserRecordType::header_build_id: {
      if (record.size() < sizeof(perf_data::BuildIdHead)) {
        return malformed(
            fmt::format("HEADER_BUILD_ID record of {} bytes is shorter than its "
                        "{}-byte head",
                        record.size(), sizeof(perf_data::BuildIdHead)));
      }
      auto head = load<perf_data::BuildIdHead>(record.data());
      BuildIdEntry entry = build_id_entry(head, record.subspan(sizeof head));
      features_.build_ids.push_back(std::move(entry));
      return true;
    }
    case abi::UserRecordType::id_index: {
      constexpr std::size_t entry_size = sizeof(perf_data::IdIndexEntry);
      std::uint64_t count = record.size() >= 16 ? load_u64(record.data() + 8) : ~0ULL;
      if (count > (record.size() - std::min<std::size_t>(record.size(), 16)) / entry_size) {
        return malformed(
            fmt::format("ID_INDEX record of {} bytes cannot hold its entries", record.size()));
      }
      // (Newer perf appends a machine_pid and vcpu per entry after them.)
      for (std::uint64_t i = 0; i < count; ++i) {
        id_index_.push_back(load<perf_data::IdIndexEntry>(record.data() + 16 + i * entry_size));
      }
      return true;
    }
    case abi::UserRecordType::event_update: return take_event_update(offset, record);
    case abi::UserRecordType::header_tracing_data: {
      if (pipe_mode_ || features_.tracing_data) return true;
      // simpleperf writes its tracing data as this record in a file's data section, the data
      // inside the record (a u32 size, then the bytes) where perf's pipe mode puts it after.
      std::uint32_t size = record.size() >= 12 ? load<std::uint32_t>(record.data() + 8) : ~0U;
      if (size > record.size() - std::min<std::size_t>(record.size(), 12)) {
        return malformed(
            fmt::format("HEADER_TRACING_DATA record of {} bytes cannot hold its {} "
                        "bytes of tracing data",
                        record.size(), size));
      }
      features_.tracing_data.emplace(record.begin() + 12, record.begin() + 12 + size);
      return true;
    }
    case abi::UserRecordType::time_conv: {
      if (record.size() < 32) {
        return malformed(
            fmt::format("TIME_CONV record of {} bytes is shorter than 32", record.size()));
      }
      TimeConversion conversion;
      conversion.time_shift = load_u64(record.data() + 8);
      conversion.time_mult = load_u64(record.data() + 16);
      conversion.time_zero = load_u64(record.data() + 24);
      if (record.size() >= 56) {
        conversion.time_cycles = load_u64(record.data() + 32);
        conversion.time_mask = load_u64(record.data() + 40);
        conversion.cap_user_time_zero = std::to_integer<std::uint8_t>(record[48]) != 0;
        conversion.cap_user_time_short = std::to_integer<std::uint8_t>(record[49]) != 0;
      }
      time_conv_ = conversion;
      return true;
    }
    default: return true;  // counted; nothing in it changes how records are read
  }
}

bool PerfDataReader::take_event_update(std::uint64_t offset, std::span<const std::byte> record) {
  // PERF_EVENT_UPDATE__*
  enum : std::uint64_t { update_unit = 0, update_scale = 1, update_name = 2, update_cpus = 3 };
  constexpr std::size_t payload_at = 24;  // after the header, the update type and the event id
  if (record.size() < payload_at) {
    data_error_ =
        PerfDataError(offset, fmt::format("EVENT_UPDATE record of {} bytes is shorter than {}",
                                          record.size(), payload_at));
    data_end_ = offset;
    return false;
  }
  std::uint64_t type = load_u64(record.data() + 8);
  std::uint64_t id = load_u64(record.data() + 16);
  auto event = std::find_if(events_.begin(), events_.end(), [&](const PerfDataEventInfo& info) {
    return std::find(info.ids.begin(), info.ids.end(), id) != info.ids.end();
  });
  if (event == events_.end()) return true;  // of an event this file does not describe
  auto payload = record.subspan(payload_at);
  auto text = [&] {
    const char* chars = reinterpret_cast<const char*>(payload.data());
    return std::string(chars, strnlen(chars, payload.size()));
  };
  switch (type) {
    case update_unit: event->unit = text(); break;
    case update_name: event->name = text(); break;
    case update_scale:
      if (payload.size() >= sizeof(double)) event->scale = load<double>(payload.data());
      break;
    case update_cpus:
      if (auto list = decode_cpu_map(payload)) event->cpus = std::move(list);
      break;
    default: break;  // a newer update type
  }
  return true;
}

void PerfDataReader::finish_events() {
  all_identifier_ = !events_.empty();
  std::vector<TracingDataEvent> tracepoints;
  bool tracepoints_read = false;
  for (auto& event : events_) {
    if (event.name.empty()) {
      // No EVENT_DESC or EVENT_UPDATE named it: the name perf gives it.
      if (!tracepoints_read && features_.tracing_data &&
          event.attr.type == static_cast<std::uint32_t>(abi::EventType::tracepoint)) {
        std::string error;
        tracepoints = tracing_data_events(*features_.tracing_data, &error);
        if (!error.empty()) notes_.push_back(error + ": tracepoints after it stay unnamed");
        tracepoints_read = true;
      }
      event.name = derived_event_name(event.attr, tracepoints);
    }
    event.config = ParseConfig::from_attr(event.attr);
    all_identifier_ &= event.config.has(sf::identifier);
    for (auto id : event.ids) id_to_event_.emplace_back(id, &event - events_.data());
  }
  std::sort(id_to_event_.begin(), id_to_event_.end());
  if (events_.empty()) {
    throw PerfDataError(pipe_mode_ ? data_begin_ : offsetof(perf_data::FileHeader, attrs),
                        "the file describes no events");
  }
}

std::optional<PerfDataError> PerfDataReader::record_at(std::uint64_t offset, std::uint64_t end,
                                                       RecordView& view,
                                                       std::uint64_t& next) const noexcept {
  try {
    if (end - offset < abi::record_header_size) {
      return PerfDataError(offset,
                           fmt::format("{} bytes left: too few for a record header", end - offset));
    }
    std::memcpy(&view.header, bytes_.data() + offset, abi::record_header_size);
    if (view.header.size < abi::record_header_size) {
      return PerfDataError(
          offset, fmt::format("record size {} is smaller than its header", view.header.size));
    }
    if (view.header.size > end - offset) {
      return PerfDataError(offset, fmt::format("a {}-byte record (type {}) runs past the end of "
                                               "the data at offset {:#x}",
                                               view.header.size, view.header.type, end));
    }
    view.bytes = std::span<const std::byte>(bytes_.data() + offset, view.header.size);
    next = offset + view.header.size;
    if (view.header.type == type_of(abi::UserRecordType::auxtrace)) {
      // The trace data follows the record, `size` bytes that header.size does not count.
      if (view.header.size < abi::record_header_size + 8) {
        return PerfDataError(
            offset, fmt::format("AUXTRACE record of {} bytes has no data size", view.header.size));
      }
      std::uint64_t size = load_u64(bytes_.data() + offset + abi::record_header_size);
      if (size > end - next) {
        return PerfDataError(offset, fmt::format("the {} bytes of AUX trace data after the "
                                                 "AUXTRACE record run past the end of the data "
                                                 "at offset {:#x}",
                                                 size, end));
      }
      next += size;
    }
    if (pipe_mode_ &&
        view.header.type == static_cast<std::uint32_t>(abi::UserRecordType::header_tracing_data)) {
      // The tracing data follows its record, padded to 8 bytes.
      if (view.header.size < abi::record_header_size + 4) {
        return PerfDataError(offset, "HEADER_TRACING_DATA record too short");
      }
      std::uint32_t size = 0;
      std::memcpy(&size, bytes_.data() + offset + abi::record_header_size, sizeof size);
      std::uint64_t padded = (std::uint64_t{size} + 7) & ~std::uint64_t{7};
      if (padded > end - next) {
        return PerfDataError(offset,
                             fmt::format("tracing data of {} bytes runs past the end", size));
      }
      next += padded;
    }
    return std::nullopt;
  } catch (...) {
    return PerfDataError(offset, "out of memory formatting an error");
  }
}

std::size_t PerfDataReader::event_of(const RecordView& view) const noexcept {
  if (events_.size() <= 1) return 0;
  std::optional<std::uint64_t> id;
  bool sample = view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample);
  if (view.header.type >= 64) return 0;
  if (all_identifier_) {
    id = record_identifier(view);
  } else {
    // PERF_SAMPLE_ID: after IP, TID, TIME and ADDR in a sample; before STREAM_ID, CPU and
    // IDENTIFIER at the end of other records. The first event's layout is the file's.
    const ParseConfig& config = events_[0].config;
    if (!config.has(sf::id)) return 0;
    std::size_t offset;
    if (sample) {
      offset = abi::record_header_size +
               8 * ((config.has(sf::identifier) ? 1 : 0) + (config.has(sf::ip) ? 1 : 0) +
                    (config.has(sf::tid) ? 1 : 0) + (config.has(sf::time) ? 1 : 0) +
                    (config.has(sf::addr) ? 1 : 0));
    } else {
      if (!config.sample_id_all) return 0;
      std::size_t from_end =
          8 * (1 + (config.has(sf::stream_id) ? 1 : 0) + (config.has(sf::cpu) ? 1 : 0) +
               (config.has(sf::identifier) ? 1 : 0));
      if (view.header.size < from_end + abi::record_header_size) return 0;
      offset = view.header.size - from_end;
    }
    if (offset + 8 > view.bytes.size()) return 0;
    id = load_u64(view.bytes.data() + offset);
  }
  if (!id || *id == 0) return 0;
  auto found = std::lower_bound(id_to_event_.begin(), id_to_event_.end(),
                                std::pair<std::uint64_t, std::size_t>{*id, 0});
  if (found == id_to_event_.end() || found->first != *id) return 0;
  return found->second;
}

std::uint64_t PerfDataReader::time_of(const RecordView& view, std::size_t event) const noexcept {
  if (view.header.type >= 64 || event >= events_.size()) return 0;
  const ParseConfig& config = events_[event].config;
  if (!config.has(sf::time)) return 0;
  std::size_t offset;
  if (view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample)) {
    offset = abi::record_header_size +
             8 * ((config.has(sf::identifier) ? 1 : 0) + (config.has(sf::ip) ? 1 : 0) +
                  (config.has(sf::tid) ? 1 : 0));
  } else {
    if (!config.sample_id_all) return 0;
    std::size_t from_end =
        8 * (1 + (config.has(sf::id) ? 1 : 0) + (config.has(sf::stream_id) ? 1 : 0) +
             (config.has(sf::cpu) ? 1 : 0) + (config.has(sf::identifier) ? 1 : 0));
    if (view.header.size < from_end + abi::record_header_size) return 0;
    offset = view.header.size - from_end;
  }
  if (offset + 8 > view.bytes.size()) return 0;
  return load_u64(view.bytes.data() + offset);
}

template <class Visit, class Held>
std::optional<PerfDataError> PerfDataReader::walk(Visit&& visit, Held&& held, bool samples,
                                                  std::uint64_t from, std::uint64_t to,
                                                  std::uint64_t* stopped) const {
  PerfDataRecord record;
  // Records the views cannot point at in place: those a COMPRESSED record or an odd-sized one
  // before them left off an 8-byte boundary.
  std::vector<std::byte> realigned;
  std::optional<perf_data::ZstdRecordStream> zstd;
  std::uint64_t last_compressed = 0;
  auto deliver = [&](std::span<const std::byte> bytes, std::uint64_t offset, bool stable,
                     bool decompressed) {
    std::memcpy(&record.view.header, bytes.data(), abi::record_header_size);
    if (!samples &&
        record.view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample)) {
      return;
    }
    if (reinterpret_cast<std::uintptr_t>(bytes.data()) % 8 != 0) {
      if (realigned.empty()) realigned.resize(record_size_max + 1);
      std::memcpy(realigned.data(), bytes.data(), bytes.size());
      bytes = std::span<const std::byte>(realigned.data(), bytes.size());
      stable = false;
    }
    record.view.bytes = bytes;
    record.offset = offset;
    record.decompressed = decompressed;
    record.event = event_of(record.view);
    record.time = time_of(record.view, record.event);
    visit(record, stable);
  };
  std::uint64_t offset = from == 0 ? data_begin_ : from;
  const std::uint64_t end = std::min(to, data_end_);
  std::uint64_t next = 0;
  RecordView view;
  // The pages of a mapped file count toward the process's resident memory once read: those the
  // walk is done with go back in large steps (a madvise per step), so a report's peak memory
  // does not grow with the file.
  std::uint64_t dropped = offset;
  std::uint64_t next_drop = offset + drop_step;
  // The next step's pages are mapped in one call as the walk enters it: a page fault per 64 KiB
  // cost more than reading the records of a dwarf recording (8 KiB stack copies) did.
  bool populate = map_.mapped();
  auto populate_step = [&](std::uint64_t at) {
    if (populate && map_.populate_pages(at, drop_step) != 0) populate = false;
  };
  populate_step(offset);
  std::uint64_t prefetched = offset & ~(cache_line - 1);
  while (offset < end) {
    // (Data a record skips, as AUX trace data, is not read.)
    prefetched = std::max(prefetched, offset & ~(cache_line - 1));
    for (std::uint64_t ahead = std::min(offset + prefetch_distance, end); prefetched < ahead;
         prefetched += cache_line) {
      __builtin_prefetch(bytes_.data() + prefetched);
    }
    if (offset >= next_drop && map_.mapped()) {
      std::uint64_t until = std::min(offset, held());
      if (until > dropped) {
        map_.drop_pages(dropped, until - dropped);
        dropped = until;
      }
      next_drop = offset + drop_step;
      populate_step(offset);
    }
    if (auto error = record_at(offset, data_end_, view, next)) return error;
    std::uint32_t type = view.header.type;
    if (type == type_of(abi::UserRecordType::compressed) ||
        type == type_of(abi::UserRecordType::compressed2)) {
      std::span<const std::byte> payload = view.bytes.subspan(abi::record_header_size);
      if (type == type_of(abi::UserRecordType::compressed2)) {
        // A data size, then the data padded to 8 bytes.
        std::uint64_t size = payload.size() >= 8 ? load_u64(payload.data()) : ~0ULL;
        if (size > payload.size() - std::min<std::size_t>(payload.size(), 8)) {
          return PerfDataError(offset, fmt::format("COMPRESSED2 record of {} bytes says it holds "
                                                   "{} bytes of data",
                                                   view.header.size, size));
        }
        payload = payload.subspan(8, size);
      }
      if (features_.compression && features_.compression->type != CompressionInfo::zstd) {
        return PerfDataError(offset, fmt::format("the records are compressed with method {}; "
                                                 "perfscope decompresses zstd (1) only",
                                                 features_.compression->type));
      }
      if (!zstd) zstd.emplace();
      last_compressed = offset;
      auto failure = zstd->feed(
          payload, [&](std::span<const std::byte> bytes) { deliver(bytes, offset, false, true); });
      if (failure) return PerfDataError(offset, *failure);
    } else {
      // What follows a record outside its size (AUXTRACE's trace data, pipe-mode tracing data).
      record.trailing = bytes_.subspan(offset + view.header.size, next - offset - view.header.size);
      deliver(view.bytes, offset, true, false);
      record.trailing = {};
    }
    offset = next;
  }
  if (stopped) *stopped = offset;
  if (end < data_end_) return std::nullopt;  // a part of the data: its end is not the file's
  if (!data_error_ && zstd && zstd->pending() != 0) {
    return PerfDataError(last_compressed,
                         fmt::format("the compressed data ends {} bytes into a record (the "
                                     "recording was cut short)",
                                     zstd->pending()));
  }
  return data_error_;
}

std::optional<PerfDataError> PerfDataReader::for_each_record(const Visitor& visit) const {
  return walk([&](const PerfDataRecord& record, bool) { visit(record); },
              [] { return std::numeric_limits<std::uint64_t>::max(); });
}

std::optional<PerfDataError> PerfDataReader::for_each_record_but_samples(
    const Visitor& visit, std::uint64_t from, std::uint64_t to, std::uint64_t* stopped) const {
  return walk([&](const PerfDataRecord& record, bool) { visit(record); },
              [] { return std::numeric_limits<std::uint64_t>::max(); }, false, from, to, stopped);
}

std::optional<PerfDataError> PerfDataReader::for_each_record_ordered(
    const Visitor& visit, const RecordSieve& keep) const {
  return ordered_walk(
      visit, [] { return std::numeric_limits<std::uint64_t>::max(); }, keep);
}

std::optional<PerfDataError> PerfDataReader::ordered_walk(
    const Visitor& visit, const std::function<std::uint64_t()>& also_held,
    const RecordSieve& keep) const {
  perf_data::RoundQueue queue(bytes_);
  auto error = walk(
      [&](const PerfDataRecord& record, bool stable) {
        if (keep && !keep(record)) return;
        queue.take(record, stable, visit);
      },
      [&] { return std::min(queue.held(), also_held()); });
  queue.flush_all(visit);
  return error;
}

}  // namespace perfscope
