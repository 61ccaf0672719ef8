#include "perfscope/analysis/perf_data/feature_codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "perfscope/analysis/perf_data/byte_writer.hpp"

namespace perfscope {

namespace {

using perf_data::Feature;

// Bounds-checked reads from a byte range: every accessor fails (sets `ok` false) instead of
// reading past `end`.
class ByteCursor {
 public:
  ByteCursor(std::span<const std::byte> bytes, std::uint64_t begin, std::uint64_t end)
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
  bool skip(std::uint64_t size) noexcept {
    if (!ok_ || left() < size) {
      ok_ = false;
      return false;
    }
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
  std::span<const std::byte> bytes_;
  std::uint64_t position_;
  std::uint64_t end_;
  bool ok_ = true;
};

class Encoder : public ByteWriter {
 public:
  void string(const std::string& text) {
    std::size_t padded = (text.size() + 1 + perf_data::string_align - 1) / perf_data::string_align *
                         perf_data::string_align;
    u32(static_cast<std::uint32_t>(padded));
    put(text.data(), text.size());
    bytes.resize(bytes.size() + padded - text.size());
  }
  void string_list(const std::vector<std::string>& list) {
    u32(static_cast<std::uint32_t>(list.size()));
    for (const auto& text : list) string(text);
  }
};

}  // namespace

std::vector<std::byte> encode_feature(unsigned bit, const PerfDataFeatures& features,
                                      const std::vector<PerfDataEvent>& events,
                                      std::uint32_t attr_size) {
  Encoder out;
  auto string = [&](const std::optional<std::string>& value) {
    if (value) out.string(*value);
  };
  switch (static_cast<Feature>(bit)) {
    case Feature::hostname: string(features.hostname); break;
    case Feature::osrelease: string(features.osrelease); break;
    case Feature::version: string(features.version); break;
    case Feature::arch: string(features.arch); break;
    case Feature::cpudesc: string(features.cpudesc); break;
    case Feature::cpuid: string(features.cpuid); break;
    case Feature::nrcpus:
      if (features.nr_cpus_available && features.nr_cpus_online) {
        out.u32(*features.nr_cpus_available);
        out.u32(*features.nr_cpus_online);
      }
      break;
    case Feature::total_mem:
      if (features.total_mem_kb) out.u64(*features.total_mem_kb);
      break;
    case Feature::group_desc:
      if (!features.groups.empty()) {
        out.u32(static_cast<std::uint32_t>(features.groups.size()));
        for (const EventGroupDesc& group : features.groups) {
          out.string(group.name);
          out.u32(group.leader);
          out.u32(group.members);
        }
      }
      break;
    case Feature::clockid:
      if (features.clockid_res_ns) out.u64(*features.clockid_res_ns);
      break;
    case Feature::clock_data:
      if (features.clock_data) {
        out.u32(ClockData::version);
        out.u32(features.clock_data->clockid);
        out.u64(features.clock_data->wall_clock_ns);
        out.u64(features.clock_data->clockid_time_ns);
      }
      break;
    case Feature::sample_time:
      if (features.sample_time) {
        out.u64(features.sample_time->first);
        out.u64(features.sample_time->second);
      }
      break;
    case Feature::cmdline:
      if (features.cmdline) out.string_list(*features.cmdline);
      break;
    case Feature::event_desc:
      out.u32(static_cast<std::uint32_t>(events.size()));
      out.u32(attr_size);
      for (const auto& event : events) {
        abi::PerfEventAttr attr = event.attr;
        attr.size = attr_size;
        out.put(&attr, attr_size);
        out.u32(static_cast<std::uint32_t>(event.ids.size()));
        out.string(event.name);
        for (auto id : event.ids) out.u64(id);
      }
      break;
    case Feature::cpu_topology:
      if (features.cpu_topology) {
        const CpuTopology& topology = *features.cpu_topology;
        out.string_list(topology.core_siblings);
        out.string_list(topology.thread_siblings);
        for (const auto& cpu : topology.cpus) {
          out.u32(cpu.core_id);
          out.u32(cpu.socket_id);
        }
        if (!topology.die_siblings.empty()) {
          out.string_list(topology.die_siblings);
          for (const auto& cpu : topology.cpus) out.u32(cpu.die_id);
        }
      }
      break;
    case Feature::build_id:
      for (const auto& entry : features.build_ids) {
        std::size_t name_size = (entry.filename.size() + 1 + perf_data::string_align - 1) /
                                perf_data::string_align * perf_data::string_align;
        perf_data::BuildIdHead head{};
        head.header.type = static_cast<std::uint32_t>(abi::UserRecordType::header_build_id);
        head.header.misc = static_cast<std::uint16_t>(entry.misc | perf_data::build_id_size_misc);
        head.header.size = static_cast<std::uint16_t>(sizeof head + name_size);
        head.pid = entry.pid;
        std::size_t id_size = std::min(entry.build_id.size(), perf_data::build_id_max);
        std::memcpy(head.build_id, entry.build_id.data(), id_size);
        head.build_id[20] = static_cast<std::uint8_t>(id_size);
        out.put(&head, sizeof head);
        out.put(entry.filename.data(), entry.filename.size());
        out.bytes.resize(out.bytes.size() + name_size - entry.filename.size());
      }
      break;
    case Feature::tracing_data:
      if (features.tracing_data)
        out.put(features.tracing_data->data(), features.tracing_data->size());
      break;
    case Feature::auxtrace:
      if (!features.auxtrace_index.empty()) {
        out.u64(features.auxtrace_index.size());
        for (const auto& entry : features.auxtrace_index) {
          out.u64(entry.file_offset);
          out.u64(entry.size);
        }
      }
      break;
    default:
      if (bit == perf_data::perfscope_feature_embedded_files && !features.embedded_files.empty()) {
        out.u32(static_cast<std::uint32_t>(features.embedded_files.size()));
        for (const EmbeddedFile& file : features.embedded_files) {
          out.string(file.kind);
          out.string(file.name);
          out.u32(static_cast<std::uint32_t>(file.build_id.size()));
          out.put(file.build_id.data(), file.build_id.size());
          out.u64(file.bytes.size());
          out.put(file.bytes.data(), file.bytes.size());
          out.bytes.resize((out.bytes.size() + 7) & ~std::size_t{7});
        }
      }
      break;
  }
  return std::move(out.bytes);
}

BuildIdEntry build_id_entry(const perf_data::BuildIdHead& head, std::span<const std::byte> name) {
  BuildIdEntry entry;
  entry.misc = head.header.misc & abi::record_misc::cpumode_mask;
  entry.pid = head.pid;
  std::size_t id_size = (head.header.misc & perf_data::build_id_size_misc)
                            ? std::min<std::size_t>(head.build_id[20], 20)
                            : perf_data::build_id_max;
  entry.build_id.assign(head.build_id, head.build_id + id_size);
  // An entry may end where its name would begin (a damaged or truncated section).
  if (name.empty()) return entry;
  const char* text = reinterpret_cast<const char*>(name.data());
  entry.filename.assign(text, strnlen(text, name.size()));
  return entry;
}

std::vector<std::byte> build_id_record(const BuildIdEntry& entry) {
  perf_data::BuildIdHead head{};
  std::size_t name_size = (entry.filename.size() + 1 + 63) / 64 * 64;
  std::size_t size = sizeof head + name_size;
  size = (size + 7) / 8 * 8;
  head.header.type = static_cast<std::uint32_t>(abi::UserRecordType::header_build_id);
  head.header.misc = static_cast<std::uint16_t>(entry.misc | perf_data::build_id_size_misc);
  head.header.size = static_cast<std::uint16_t>(size);
  head.pid = entry.pid;
  std::size_t id_size = std::min(entry.build_id.size(), perf_data::build_id_max);
  // An entry without an id (possible in a damaged file) has no data pointer to copy from.
  if (id_size != 0) std::memcpy(head.build_id, entry.build_id.data(), id_size);
  head.build_id[20] = static_cast<std::uint8_t>(id_size);
  std::vector<std::byte> bytes(size);
  std::memcpy(bytes.data(), &head, sizeof head);
  std::memcpy(bytes.data() + sizeof head, entry.filename.data(), entry.filename.size());
  return bytes;
}

void decode_feature(unsigned bit, std::span<const std::byte> file, std::uint64_t offset,
                    std::uint64_t size, const FeatureDecodeTarget& into) {
  // An empty section is a feature the recorder had nothing for (perf 3.x wrote CPUDESC so where
  // /proc/cpuinfo lacked the line): absent, like one whose bit is clear.
  if (size == 0) return;
  PerfDataFeatures& features = into.features;
  ByteCursor in(file, offset, offset + size);
  auto fail = [&](const char* what) {
    throw PerfDataError(in.position(),
                        fmt::format("feature {}: {}", perf_data::feature_label(bit), what));
  };
  switch (static_cast<Feature>(bit)) {
    case Feature::hostname: features.hostname = in.string(); break;
    case Feature::osrelease: features.osrelease = in.string(); break;
    case Feature::version: features.version = in.string(); break;
    case Feature::arch: features.arch = in.string(); break;
    case Feature::cpudesc: features.cpudesc = in.string(); break;
    case Feature::cpuid: features.cpuid = in.string(); break;
    case Feature::nrcpus:
      features.nr_cpus_available = in.u32();
      features.nr_cpus_online = in.u32();
      break;
    case Feature::total_mem: features.total_mem_kb = in.u64(); break;
    case Feature::clockid: features.clockid_res_ns = in.u64(); break;
    case Feature::sample_time: {
      std::uint64_t first = in.u64();
      std::uint64_t last = in.u64();
      features.sample_time = {first, last};
      break;
    }
    case Feature::cmdline: features.cmdline = in.string_list(); break;
    case Feature::group_desc: {
      std::uint32_t count = in.u32();
      for (std::uint32_t i = 0; i < count && in.ok(); ++i) {
        EventGroupDesc group;
        group.name = in.string();
        group.leader = in.u32();
        group.members = in.u32();
        if (in.ok()) features.groups.push_back(std::move(group));
      }
      if (!in.ok()) fail("truncated group");
      break;
    }
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
        into.event_desc.push_back({attr, std::move(name), std::move(ids)});
      }
      break;
    }
    case Feature::cpu_topology: {
      CpuTopology topology;
      topology.core_siblings = in.string_list();
      topology.thread_siblings = in.string_list();
      if (!in.ok()) break;
      std::uint32_t cpus = features.nr_cpus_available.value_or(0);
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
      features.cpu_topology = std::move(topology);
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
        std::vector<std::byte> name(head.header.size - sizeof head);
        in.take(name.data(), name.size());
        BuildIdEntry entry = build_id_entry(head, name);
        features.build_ids.push_back(std::move(entry));
      }
      break;
    }
    case Feature::compressed: {
      CompressionInfo info;
      info.version = in.u32();
      info.type = in.u32();
      info.level = in.u32();
      info.ratio = in.u32();
      info.mmap_len = in.u32();
      features.compression = info;
      break;
    }
    case Feature::clock_data: {
      std::uint32_t version = in.u32();
      if (in.ok() && version != ClockData::version) {
        // perf rejects other versions too; the rest of the file is still good.
        into.notes.push_back(
            fmt::format("feature CLOCK_DATA has version {}; only version {} is "
                        "known, so sample times are not tied to wall-clock time",
                        version, ClockData::version));
        return;
      }
      ClockData clock;
      clock.clockid = in.u32();
      clock.wall_clock_ns = in.u64();
      clock.clockid_time_ns = in.u64();
      if (in.ok()) features.clock_data = clock;
      break;
    }
    case Feature::auxtrace: {
      // A count, then that many entries (perf writes one table; a second would follow).
      while (in.ok() && in.position() < offset + size) {
        std::uint64_t count = in.u64();
        if (count > size / 16) fail("AUXTRACE index has more entries than its size holds");
        for (std::uint64_t i = 0; i < count && in.ok(); ++i) {
          AuxtraceIndexEntry entry;
          entry.file_offset = in.u64();
          entry.size = in.u64();
          if (in.ok()) features.auxtrace_index.push_back(entry);
        }
      }
      break;
    }
    case Feature::tracing_data: {
      std::vector<std::byte> data(size);
      in.take(data.data(), data.size());
      features.tracing_data = std::move(data);
      break;
    }
    default:
      if (bit == perf_data::perfscope_feature_embedded_files) {
        std::uint32_t count = in.u32();
        if (count > size / 16) fail("more embedded files than the section holds");
        for (std::uint32_t i = 0; i < count && in.ok(); ++i) {
          EmbeddedFile embedded;
          embedded.kind = in.string();
          embedded.name = in.string();
          std::uint32_t id_size = in.u32();
          if (id_size > perf_data::build_id_max) fail("an embedded file's build id is too long");
          embedded.build_id.resize(id_size);
          in.take(embedded.build_id.data(), id_size);
          std::uint64_t bytes = in.u64();
          if (!in.ok() || bytes > offset + size - in.position()) {
            fail("an embedded file is larger than the section");
          }
          embedded.bytes.resize(bytes);
          in.take(embedded.bytes.data(), embedded.bytes.size());
          // The padding to 8 (the last file's may be cut by the section's end).
          in.skip(std::min<std::uint64_t>((8 - (in.position() - offset) % 8) % 8, in.left()));
          if (in.ok()) features.embedded_files.push_back(std::move(embedded));
        }
      } else if (bit == perf_data::simpleperf_feature_meta_info) {
        // NUL-terminated key, NUL-terminated value, to the end of the section.
        std::string text(size, '\0');
        in.take(text.data(), text.size());
        std::vector<std::string> strings;
        for (std::size_t at = 0; at < text.size();) {
          std::size_t end = text.find('\0', at);
          if (end == std::string::npos) end = text.size();
          strings.push_back(text.substr(at, end - at));
          at = end + 1;
        }
        for (std::size_t i = 0; i + 1 < strings.size(); i += 2) {
          features.simpleperf_meta_info.emplace_back(strings[i], strings[i + 1]);
        }
      }
      break;  // others: present in features.present; their contents are not decoded
  }
  if (!in.ok()) fail("the section ends in the middle of a field");
}

}  // namespace perfscope
