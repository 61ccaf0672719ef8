#include "perfscope/analysis/perf_data_writer.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "perfscope/core/error.hpp"
#include "perfscope/core/event_attr.hpp"

namespace perfscope {

namespace {

using perf_data::Feature;

// Writes are batched: one write(2) per round, or per this many bytes in a long round.
constexpr std::size_t flush_threshold = 1 << 20;

class Encoder {
 public:
  std::vector<std::byte> bytes;
  void put(const void* data, std::size_t size) {
    // resize + memcpy: g++-12 misreads insert() of a raw range as an overflow.
    std::size_t at = bytes.size();
    bytes.resize(at + size);
    if (size != 0) std::memcpy(bytes.data() + at, data, size);
  }
  void u32(std::uint32_t value) { put(&value, sizeof value); }
  void u64(std::uint64_t value) { put(&value, sizeof value); }
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

std::uint32_t portable_attr_size(const abi::PerfEventAttr& attr) {
  return EventAttr(attr).fields_set_beyond(perf_data::portable_attr_size).empty()
             ? perf_data::portable_attr_size
             : static_cast<std::uint32_t>(sizeof(abi::PerfEventAttr));
}

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
    case Feature::clockid:
      if (features.clockid_res_ns) out.u64(*features.clockid_res_ns);
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
    default: break;
  }
  return std::move(out.bytes);
}

PerfDataWriter::PerfDataWriter(const std::string& path, std::vector<PerfDataEvent> events)
    : path_(path), events_(std::move(events)) {
  if (events_.empty()) throw std::invalid_argument("a recording needs at least one event");
  attr_size_ = perf_data::portable_attr_size;
  for (const auto& event : events_)
    attr_size_ = std::max(attr_size_, portable_attr_size(event.attr));
  // Like perf: keep the previous recording as PATH.old rather than overwrite it.
  if (::access(path.c_str(), F_OK) == 0) ::rename(path.c_str(), (path + ".old").c_str());
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    int errnum = errno;
    throw Error(errnum, fmt::format("cannot create {}: {}", path, std::strerror(errnum)),
                "choose another output file with -o FILE.");
  }
  // The umask may have narrowed it; it can never have widened it.
  ::fchmod(fd_, 0600);

  perf_data::FileHeader header;
  header.size = sizeof header;
  header.attr_size = attr_size_ + sizeof(perf_data::FileSection);
  header.attrs = {sizeof header, events_.size() * header.attr_size};
  Encoder body;
  std::uint64_t ids_offset = header.attrs.offset + header.attrs.size;
  for (const auto& event : events_) {
    abi::PerfEventAttr attr = event.attr;
    attr.size = attr_size_;
    body.put(&attr, attr_size_);
    perf_data::FileSection ids{ids_offset, event.ids.size() * sizeof(std::uint64_t)};
    body.put(&ids, sizeof ids);
    ids_offset += ids.size;
  }
  for (const auto& event : events_) {
    for (auto id : event.ids) body.u64(id);
  }
  data_offset_ = ids_offset;
  header.data = {data_offset_, 0};
  write_at(0, &header, sizeof header);
  write_at(sizeof header, body.bytes.data(), body.bytes.size());
  buffer_.reserve(flush_threshold + 65536);
}

PerfDataWriter::~PerfDataWriter() {
  if (fd_ < 0) return;
  if (!finished_) {
    // Unwinding from an error: keep what was recorded readable.
    try {
      write_out();
      update_data_size();
    } catch (...) {
    }
  }
  ::close(fd_);
}

void PerfDataWriter::write_at(std::uint64_t offset, const void* bytes, std::size_t size) {
  const auto* at = static_cast<const char*>(bytes);
  while (size > 0) {
    ssize_t written = ::pwrite(fd_, at, size, static_cast<off_t>(offset));
    if (written < 0) {
      if (errno == EINTR) continue;
      int errnum = errno;
      throw Error(errnum, fmt::format("cannot write {}: {}", path_, std::strerror(errnum)),
                  errnum == ENOSPC ? "the disk is full; free space or write elsewhere (-o)." : "");
    }
    at += written;
    offset += static_cast<std::uint64_t>(written);
    size -= static_cast<std::size_t>(written);
  }
}

void PerfDataWriter::append(std::span<const std::byte> record) {
  buffer_.insert(buffer_.end(), record.begin(), record.end());
  if (buffer_.size() >= flush_threshold) write_out();
}

void PerfDataWriter::write_out() {
  if (buffer_.empty()) return;
  write_at(data_offset_ + data_size_, buffer_.data(), buffer_.size());
  data_size_ += buffer_.size();
  buffer_.clear();
}

void PerfDataWriter::update_data_size() {
  write_at(perf_data::data_size_offset, &data_size_, sizeof data_size_);
}

void PerfDataWriter::end_round() {
  abi::RecordHeader round{static_cast<std::uint32_t>(abi::UserRecordType::finished_round), 0,
                          sizeof(abi::RecordHeader)};
  append(std::as_bytes(std::span(&round, 1)));
  write_out();
  update_data_size();
}

void PerfDataWriter::finish(const PerfDataFeatures& features) {
  write_out();
  perf_data::FileHeader header;
  header.size = sizeof header;
  header.attr_size = attr_size_ + sizeof(perf_data::FileSection);
  header.attrs = {sizeof header, events_.size() * header.attr_size};
  header.data = {data_offset_, data_size_};
  std::vector<std::pair<unsigned, std::vector<std::byte>>> sections;
  for (unsigned bit = 1; bit <= perf_data::feature_last_known; ++bit) {
    auto contents = encode_feature(bit, features, events_, attr_size_);
    if (contents.empty()) continue;
    header.set_feature(bit);
    sections.emplace_back(bit, std::move(contents));
  }
  std::uint64_t table = data_offset_ + data_size_;
  std::uint64_t at = table + sections.size() * sizeof(perf_data::FileSection);
  std::vector<perf_data::FileSection> entries;
  for (const auto& [bit, contents] : sections) {
    entries.push_back({at, contents.size()});
    write_at(at, contents.data(), contents.size());
    at += contents.size();
  }
  write_at(table, entries.data(), entries.size() * sizeof(perf_data::FileSection));
  // Last: until here the file reads as an unfinished recording, which it still was.
  write_at(0, &header, sizeof header);
  finished_ = true;
}

}  // namespace perfscope
