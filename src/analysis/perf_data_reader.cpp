#include "perfscope/analysis/perf_data_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/error.hpp"

namespace perfscope {

namespace {

namespace sf = abi::sample_format;
using perf_data::Feature;

constexpr std::size_t record_header_size = sizeof(abi::RecordHeader);

std::string_view feature_label(unsigned bit) {
  std::string_view name = perf_data::feature_name(bit);
  return name.empty() ? std::string_view("unknown feature") : name;
}

// Bounds-checked reads from a byte range: every accessor fails (sets `ok` false) instead of
// reading past `end`.
class ByteCursor {
 public:
  ByteCursor(const std::vector<std::byte>& bytes, std::uint64_t begin, std::uint64_t end)
      : bytes_(bytes), position_(begin), end_(std::min<std::uint64_t>(end, bytes.size())) {}
  bool ok() const noexcept { return ok_; }
  std::uint64_t position() const noexcept { return position_; }
  std::uint64_t left() const noexcept { return position_ < end_ ? end_ - position_ : 0; }
  bool take(void* out, std::size_t size) noexcept {
    if (!ok_ || left() < size) {
      ok_ = false;
      return false;
    }
    if (size == 0) return true;  // an empty file has no data pointer to copy from
    std::memcpy(out, bytes_.data() + position_, size);
    position_ += size;
    return true;
  }
  std::uint32_t u32() noexcept {
    std::uint32_t value = 0;
    take(&value, sizeof value);
    return value;
  }
  std::uint64_t u64() noexcept {
    std::uint64_t value = 0;
    take(&value, sizeof value);
    return value;
  }
  // perf_header_string: u32 length (NUL and padding included), then the bytes.
  std::string string() noexcept {
    std::uint32_t length = u32();
    if (!ok_ || left() < length) {
      ok_ = false;
      return {};
    }
    const char* text = reinterpret_cast<const char*>(bytes_.data() + position_);
    position_ += length;
    return std::string(text, strnlen(text, length));
  }
  std::vector<std::string> string_list() {
    std::uint32_t count = u32();
    std::vector<std::string> out;
    // Each string takes at least its 4-byte length: a count beyond that is corrupt.
    if (!ok_ || count > left() / sizeof(std::uint32_t)) {
      ok_ = false;
      return out;
    }
    out.reserve(count);
    for (std::uint32_t i = 0; i < count && ok_; ++i) out.push_back(string());
    return out;
  }

 private:
  const std::vector<std::byte>& bytes_;
  std::uint64_t position_;
  std::uint64_t end_;
  bool ok_ = true;
};

std::uint64_t load_u64(const std::byte* at) noexcept {
  std::uint64_t value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

std::vector<std::byte> read_stream(std::FILE* file, const std::string& path) {
  std::vector<std::byte> bytes;
  std::size_t used = 0;
  // A regular file is read in one piece: growing by doubling copied and cleared the bytes of a
  // large file several times over.
  std::size_t initial = 1 << 20;
  if (std::fseek(file, 0, SEEK_END) == 0) {  // fails on pipes
    long size = std::ftell(file);
    if (size > 0) initial = static_cast<std::size_t>(size) + 1;  // + 1: sees the end at once
    std::fseek(file, 0, SEEK_SET);
  }
  bytes.resize(initial);
  for (;;) {
    std::size_t got = std::fread(bytes.data() + used, 1, bytes.size() - used, file);
    used += got;
    if (got == 0) break;
    if (used == bytes.size()) bytes.resize(bytes.size() * 2);
  }
  if (std::ferror(file)) throw Error(errno, fmt::format("cannot read {}", path));
  bytes.resize(used);
  return bytes;
}

}  // namespace

PerfDataError::PerfDataError(std::uint64_t offset, const std::string& what)
    : std::runtime_error(fmt::format("perf.data offset {:#x}: {}", offset, what)),
      offset_(offset) {}

PerfDataReader PerfDataReader::open(const std::string& path) {
  if (path == "-") return from_bytes(read_stream(stdin, "standard input"));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) {
    int errnum = errno;
    throw Error(errnum, fmt::format("cannot open {}: {}", path, std::strerror(errnum)),
                errnum == ENOENT ? "record one first (perfscope record -- COMMAND), or give the "
                                   "file with -i FILE."
                                 : "");
  }
  return from_bytes(read_stream(file.get(), path));
}

PerfDataReader PerfDataReader::from_bytes(std::vector<std::byte> bytes) {
  PerfDataReader reader;
  reader.bytes_ = std::move(bytes);
  reader.parse_file_header();
  if (reader.pipe_mode_) {
    reader.parse_pipe();
  } else {
    reader.parse_attrs();
    // A truncated file lost its feature sections with the end of its data.
    if (!reader.truncated_) reader.parse_features();
  }
  reader.finish_events();
  return reader;
}

void PerfDataReader::parse_file_header() {
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
                                             "truncated; the records before the cut were read",
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
                                          feature_label(bit)));
    }
    perf_data::FileSection section;
    std::memcpy(&section, bytes_.data() + at, sizeof section);
    if (section.offset > bytes_.size() || section.size > bytes_.size() - section.offset) {
      throw PerfDataError(at, fmt::format("feature {} ({} bytes at offset {}) is outside the file",
                                          feature_label(bit), section.size, section.offset));
    }
    parse_feature(bit, section.offset, section.size);
  }
}

void PerfDataReader::parse_feature(unsigned bit, std::uint64_t offset, std::uint64_t size) {
  ByteCursor in(bytes_, offset, offset + size);
  auto fail = [&](const char* what) {
    throw PerfDataError(in.position(), fmt::format("feature {}: {}", feature_label(bit), what));
  };
  switch (static_cast<Feature>(bit)) {
    case Feature::hostname: features_.hostname = in.string(); break;
    case Feature::osrelease: features_.osrelease = in.string(); break;
    case Feature::version: features_.version = in.string(); break;
    case Feature::arch: features_.arch = in.string(); break;
    case Feature::cpudesc: features_.cpudesc = in.string(); break;
    case Feature::cpuid: features_.cpuid = in.string(); break;
    case Feature::nrcpus:
      features_.nr_cpus_available = in.u32();
      features_.nr_cpus_online = in.u32();
      break;
    case Feature::total_mem: features_.total_mem_kb = in.u64(); break;
    case Feature::clockid: features_.clockid_res_ns = in.u64(); break;
    case Feature::sample_time: {
      std::uint64_t first = in.u64();
      std::uint64_t last = in.u64();
      features_.sample_time = {first, last};
      break;
    }
    case Feature::cmdline: features_.cmdline = in.string_list(); break;
    case Feature::event_desc: {
      std::uint32_t count = in.u32();
      std::uint32_t attr_size = in.u32();
      if (!in.ok()) break;
      if (attr_size < abi::attr_size::ver0 || count > in.left() / attr_size) {
        fail("event count or attr size is inconsistent with the section size");
      }
      for (std::uint32_t i = 0; i < count && in.ok(); ++i) {
        abi::PerfEventAttr attr{};
        std::vector<std::byte> raw(attr_size);
        in.take(raw.data(), attr_size);
        std::memcpy(&attr, raw.data(), std::min<std::size_t>(attr_size, sizeof attr));
        std::uint32_t id_count = in.u32();
        std::string name = in.string();
        if (!in.ok() || id_count > in.left() / sizeof(std::uint64_t)) fail("truncated event");
        std::vector<std::uint64_t> ids(id_count);
        for (auto& id : ids) id = in.u64();
        // Pipe files have no attr section: EVENT_DESC alone describes their events.
        if (i < events_.size()) {
          events_[i].name = name;
        } else if (pipe_mode_) {
          PerfDataEventInfo info;
          info.attr = attr;
          info.file_attr_size = attr.size;
          info.ids = std::move(ids);
          info.name = name;
          events_.push_back(std::move(info));
        }
      }
      break;
    }
    case Feature::cpu_topology: {
      CpuTopology topology;
      topology.core_siblings = in.string_list();
      topology.thread_siblings = in.string_list();
      if (!in.ok()) break;
      std::uint32_t cpus = features_.nr_cpus_available.value_or(0);
      if (in.left() >= std::uint64_t{cpus} * 8) {
        topology.cpus.resize(cpus);
        for (auto& cpu : topology.cpus) {
          cpu.core_id = in.u32();
          cpu.socket_id = in.u32();
        }
        if (in.left() > 0) {
          topology.die_siblings = in.string_list();
          if (in.left() >= std::uint64_t{cpus} * 4) {
            for (auto& cpu : topology.cpus) cpu.die_id = in.u32();
          }
        }
      }
      features_.cpu_topology = std::move(topology);
      break;
    }
    case Feature::build_id: {
      while (in.ok() && in.left() > 0) {
        std::uint64_t at = in.position();
        perf_data::BuildIdHead head{};
        if (!in.take(&head, sizeof head)) fail("truncated build-id entry");
        if (head.header.size < sizeof head || head.header.size - sizeof head > in.left()) {
          throw PerfDataError(
              at, fmt::format("feature BUILD_ID: entry size {} is inconsistent", head.header.size));
        }
        BuildIdEntry entry;
        entry.misc = head.header.misc & abi::record_misc::cpumode_mask;
        entry.pid = head.pid;
        std::size_t id_size = (head.header.misc & perf_data::build_id_size_misc)
                                  ? std::min<std::size_t>(head.build_id[20], 20)
                                  : perf_data::build_id_max;
        entry.build_id.assign(head.build_id, head.build_id + id_size);
        std::size_t name_size = head.header.size - sizeof head;
        std::string name(name_size, '\0');
        in.take(name.data(), name_size);
        name.resize(strnlen(name.data(), name.size()));
        entry.filename = std::move(name);
        features_.build_ids.push_back(std::move(entry));
      }
      break;
    }
    case Feature::tracing_data: {
      std::vector<std::byte> data(size);
      in.take(data.data(), data.size());
      features_.tracing_data = std::move(data);
      break;
    }
    default: break;  // present in features_.present; its contents are not decoded
  }
  if (!in.ok()) fail("the section ends in the middle of a field");
}

void PerfDataReader::parse_pipe() {
  // Walk the stream once: the attrs and features come as records before (or among) the data.
  bool misaligned = false;
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
      std::uint64_t payload = offset + record_header_size;
      std::uint32_t attr_size = 0;
      if (view.header.size >= record_header_size + 8) {
        std::memcpy(&attr_size, bytes_.data() + payload + 4, sizeof attr_size);
      }
      if (attr_size == 0) attr_size = abi::attr_size::ver0;
      if (attr_size > view.header.size - record_header_size) {
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
      std::uint64_t id_bytes = view.header.size - record_header_size - attr_size;
      info.ids.resize(id_bytes / sizeof(std::uint64_t));
      if (!info.ids.empty()) {
        std::memcpy(info.ids.data(), bytes_.data() + payload + attr_size,
                    info.ids.size() * sizeof(std::uint64_t));
      }
      events_.push_back(std::move(info));
    } else if (type == abi::UserRecordType::header_feature && view.header.size > 16) {
      // (A record with no contents is the end-of-features mark.)
      std::uint64_t feature = load_u64(bytes_.data() + offset + record_header_size);
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
      std::memcpy(&size, bytes_.data() + offset + record_header_size, sizeof size);
      auto begin = bytes_.begin() + static_cast<std::ptrdiff_t>(offset + view.header.size);
      features_.tracing_data.emplace(begin, begin + size);
    }
    if (offset % 8 != 0) misaligned = true;
    pipe_records_.push_back({offset, 0});
    offset = next;
  }
  if (!misaligned) {
    pipe_records_.clear();
    return;
  }
  // Pipe streams carry records whose sizes are not multiples of 8 (feature strings), which
  // leaves later records misaligned: copies at aligned places let them be decoded in place.
  for (auto& entry : pipe_records_) {
    RecordView copied;
    std::uint64_t after = 0;
    record_at(entry.file_offset, data_end_, copied, after);
    entry.aligned_offset = aligned_.size();
    aligned_.resize(aligned_.size() + copied.header.size);
    std::memcpy(aligned_.data() + entry.aligned_offset, bytes_.data() + entry.file_offset,
                copied.header.size);
    aligned_.resize((aligned_.size() + 7) & ~std::size_t{7});
  }
}

void PerfDataReader::finish_events() {
  all_identifier_ = !events_.empty();
  for (auto& event : events_) {
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
    if (end - offset < record_header_size) {
      return PerfDataError(offset,
                           fmt::format("{} bytes left: too few for a record header", end - offset));
    }
    std::memcpy(&view.header, bytes_.data() + offset, record_header_size);
    if (view.header.size < record_header_size) {
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
    if (pipe_mode_ &&
        view.header.type == static_cast<std::uint32_t>(abi::UserRecordType::header_tracing_data)) {
      // The tracing data follows its record, padded to 8 bytes.
      if (view.header.size < record_header_size + 4) {
        return PerfDataError(offset, "HEADER_TRACING_DATA record too short");
      }
      std::uint32_t size = 0;
      std::memcpy(&size, bytes_.data() + offset + record_header_size, sizeof size);
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
      offset = record_header_size +
               8 * ((config.has(sf::identifier) ? 1 : 0) + (config.has(sf::ip) ? 1 : 0) +
                    (config.has(sf::tid) ? 1 : 0) + (config.has(sf::time) ? 1 : 0) +
                    (config.has(sf::addr) ? 1 : 0));
    } else {
      if (!config.sample_id_all) return 0;
      std::size_t from_end =
          8 * (1 + (config.has(sf::stream_id) ? 1 : 0) + (config.has(sf::cpu) ? 1 : 0) +
               (config.has(sf::identifier) ? 1 : 0));
      if (view.header.size < from_end + record_header_size) return 0;
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
    offset =
        record_header_size + 8 * ((config.has(sf::identifier) ? 1 : 0) +
                                  (config.has(sf::ip) ? 1 : 0) + (config.has(sf::tid) ? 1 : 0));
  } else {
    if (!config.sample_id_all) return 0;
    std::size_t from_end =
        8 * (1 + (config.has(sf::id) ? 1 : 0) + (config.has(sf::stream_id) ? 1 : 0) +
             (config.has(sf::cpu) ? 1 : 0) + (config.has(sf::identifier) ? 1 : 0));
    if (view.header.size < from_end + record_header_size) return 0;
    offset = view.header.size - from_end;
  }
  if (offset + 8 > view.bytes.size()) return 0;
  return load_u64(view.bytes.data() + offset);
}

std::optional<PerfDataError> PerfDataReader::for_each_record(const Visitor& visit) const {
  PerfDataRecord record;
  if (!pipe_records_.empty()) {
    for (const auto& entry : pipe_records_) {
      std::memcpy(&record.view.header, aligned_.data() + entry.aligned_offset, record_header_size);
      record.view.bytes = std::span<const std::byte>(aligned_.data() + entry.aligned_offset,
                                                     record.view.header.size);
      record.offset = entry.file_offset;
      record.event = event_of(record.view);
      record.time = time_of(record.view, record.event);
      visit(record);
    }
    return data_error_;
  }
  std::uint64_t offset = data_begin_;
  std::uint64_t next = 0;
  while (offset < data_end_) {
    if (auto error = record_at(offset, data_end_, record.view, next)) return error;
    record.offset = offset;
    record.event = event_of(record.view);
    record.time = time_of(record.view, record.event);
    visit(record);
    offset = next;
  }
  return data_error_;
}

std::optional<PerfDataError> PerfDataReader::for_each_record_ordered(const Visitor& visit) const {
  std::vector<PerfDataRecord> queue;
  std::uint64_t round_limit = 0;  // the latest time of the previous round
  std::uint64_t max_time = 0;
  bool limit_set = false;
  auto flush = [&](bool everything) {
    std::stable_sort(
        queue.begin(), queue.end(),
        [](const PerfDataRecord& a, const PerfDataRecord& b) { return a.time < b.time; });
    std::size_t delivered = 0;
    for (; delivered < queue.size(); ++delivered) {
      if (!everything && (!limit_set || queue[delivered].time > round_limit)) break;
      visit(queue[delivered]);
    }
    queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(delivered));
  };
  auto error = for_each_record([&](const PerfDataRecord& record) {
    if (record.view.header.type ==
        static_cast<std::uint32_t>(abi::UserRecordType::finished_round)) {
      flush(false);
      round_limit = max_time;
      limit_set = true;
      visit(record);
      return;
    }
    if (record.time == 0) {
      visit(record);
      return;
    }
    max_time = std::max(max_time, record.time);
    queue.push_back(record);
  });
  flush(true);
  return error;
}

}  // namespace perfscope
