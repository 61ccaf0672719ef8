#include "perfscope/analysis/perf_data/perf_data_writer.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "perfscope/analysis/perf_data/byte_writer.hpp"
#include "perfscope/analysis/perf_data/feature_codec.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event_attr.hpp"

namespace perfscope {

namespace {

using perf_data::Feature;

// Writes are batched: one write(2) per round, or per this many bytes in a long round.
constexpr std::size_t flush_threshold = 1 << 20;

// PERF_EVENT_UPDATE__NAME: an EVENT_UPDATE record carrying the event's name.
constexpr std::uint64_t event_update_name = 2;

// A HEADER_FEATURE record: header, the feature bit as u64, the section's contents. Like perf, the
// size is not rounded to 8 bytes (perf's readers take the contents to end with the record).
void append_feature_record(PerfDataWriter& writer, unsigned bit,
                           const std::vector<std::byte>& contents) {
  // A record's size is 16 bits: perf has the same limit, and no feature perfscope writes nears it.
  if (contents.size() > 0xffff - 16) return;
  struct {
    abi::RecordHeader header;
    std::uint64_t feature;
  } record{{static_cast<std::uint32_t>(abi::UserRecordType::header_feature), 0,
            static_cast<std::uint16_t>(16 + contents.size())},
           bit};
  static_assert(sizeof record == 16);
  writer.append(std::as_bytes(std::span(&record, 1)));
  writer.append(contents);
}

}  // namespace

std::uint32_t portable_attr_size(const abi::PerfEventAttr& attr) {
  return EventAttr(attr).fields_set_beyond(perf_data::portable_attr_size).empty()
             ? perf_data::portable_attr_size
             : static_cast<std::uint32_t>(sizeof(abi::PerfEventAttr));
}

PerfDataWriter::PerfDataWriter(const std::string& path, std::vector<PerfDataEvent> events)
    : path_(path), events_(std::move(events)) {
  if (events_.empty()) throw std::invalid_argument("a recording needs at least one event");
  attr_size_ = perf_data::portable_attr_size;
  for (const auto& event : events_)
    attr_size_ = std::max(attr_size_, portable_attr_size(event.attr));
  buffer_.reserve(flush_threshold + 65536);
  if (path == "-") {
    pipe_ = true;
    if (::isatty(STDOUT_FILENO)) {
      throw std::invalid_argument(
          "-o -: standard output is a terminal; pipe the recording into a reader "
          "(| perf script -i -) or redirect it to a file");
    }
    fd_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
    if (fd_ < 0) {
      int errnum = errno;
      throw Error(errnum,
                  fmt::format("cannot use standard output for -o -: {}", std::strerror(errnum)));
    }
    perf_data::PipeHeader header;
    append(std::as_bytes(std::span(&header, 1)));
    for (const auto& event : events_) {
      abi::PerfEventAttr attr = event.attr;
      attr.size = attr_size_;
      abi::RecordHeader record{
          static_cast<std::uint32_t>(abi::UserRecordType::header_attr), 0,
          static_cast<std::uint16_t>(sizeof(abi::RecordHeader) + attr_size_ +
                                     event.ids.size() * sizeof(std::uint64_t))};
      append(std::as_bytes(std::span(&record, 1)));
      append(std::as_bytes(std::span(reinterpret_cast<const std::byte*>(&attr), attr_size_)));
      append(std::as_bytes(std::span(event.ids)));
    }
    // perf names events in streams by EVENT_UPDATE: without it perf script calls a tracepoint
    // "unknown tracepoint" (it names the event from the attr before the formats arrive).
    for (const auto& event : events_) {
      if (event.name.empty() || event.ids.empty()) continue;
      std::size_t name_size = (event.name.size() + 1 + 7) & ~std::size_t{7};
      struct {
        abi::RecordHeader header;
        std::uint64_t type;
        std::uint64_t id;
      } update{{static_cast<std::uint32_t>(abi::UserRecordType::event_update), 0,
                static_cast<std::uint16_t>(24 + name_size)},
               event_update_name,
               event.ids.front()};
      static_assert(sizeof update == 24);
      append(std::as_bytes(std::span(&update, 1)));
      std::vector<std::byte> name(name_size);
      std::memcpy(name.data(), event.name.data(), event.name.size());
      append(name);
    }
    return;
  }
  // Like perf: keep the previous recording as PATH.old rather than overwrite it (a regular file
  // with something in it: never a device such as /dev/null).
  struct stat previous {};
  const bool keep_previous =
      ::stat(path.c_str(), &previous) == 0 && S_ISREG(previous.st_mode) && previous.st_size > 0;
  if (keep_previous) ::rename(path.c_str(), (path + ".old").c_str());
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    int errnum = errno;
    throw Error(errnum, fmt::format("cannot create {}: {}", path, std::strerror(errnum)),
                "choose another output file with -o FILE.");
  }
  // The umask may have narrowed it; it can never have widened it. (A device keeps its mode.)
  if (struct stat info{}; ::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode)) ::fchmod(fd_, 0600);

  perf_data::FileHeader header;
  header.size = sizeof header;
  header.attr_size = attr_size_ + sizeof(perf_data::FileSection);
  header.attrs = {sizeof header, events_.size() * header.attr_size};
  ByteWriter body;
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

void PerfDataWriter::write_sequential(const void* bytes, std::size_t size) {
  const auto* at = static_cast<const char*>(bytes);
  while (size > 0) {
    ssize_t written = ::write(fd_, at, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      int errnum = errno;
      throw Error(
          errnum,
          fmt::format("cannot write the recording to standard output: {}", std::strerror(errnum)),
          errnum == EPIPE ? "the reader at the other end of the pipe exited early." : "");
    }
    at += written;
    size -= static_cast<std::size_t>(written);
  }
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

void PerfDataWriter::append_auxtrace(perf_data::AuxtraceRecord record,
                                     std::span<const std::byte> data,
                                     std::span<const std::byte> more) {
  static constexpr std::byte zeros[8] = {};
  std::size_t total = data.size() + more.size();
  std::size_t padding = (8 - total % 8) % 8;
  record.header = {static_cast<std::uint32_t>(abi::UserRecordType::auxtrace), 0,
                   sizeof(perf_data::AuxtraceRecord)};
  record.size = total + padding;
  if (!pipe_) auxtrace_index_.push_back({file_size(), sizeof record + record.size});
  append(std::as_bytes(std::span(&record, 1)));
  append(data);
  append(more);
  append(std::span(zeros, padding));
}

void PerfDataWriter::write_out() {
  if (buffer_.empty()) return;
  if (pipe_) {
    write_sequential(buffer_.data(), buffer_.size());
    data_size_ += buffer_.size();
    buffer_.clear();
    return;
  }
  write_at(data_offset_ + data_size_, buffer_.data(), buffer_.size());
  data_size_ += buffer_.size();
  buffer_.clear();
}

void PerfDataWriter::update_data_size() {
  if (pipe_) return;  // a stream has no header to go back to
  write_at(perf_data::data_size_offset, &data_size_, sizeof data_size_);
}

void PerfDataWriter::end_round() {
  abi::RecordHeader round{static_cast<std::uint32_t>(abi::UserRecordType::finished_round), 0,
                          sizeof(abi::RecordHeader)};
  append(std::as_bytes(std::span(&round, 1)));
  write_out();
  update_data_size();
}

void PerfDataWriter::begin_pipe(const PerfDataFeatures& features) {
  if (!pipe_) return;
  for (unsigned bit = 1; bit <= perf_data::feature_last_known; ++bit) {
    // perf reads these from a seekable file only (BUILD_ID, TRACING_DATA), or they are known at
    // the end only (SAMPLE_TIME).
    if (bit == perf_data::bit(Feature::build_id) || bit == perf_data::bit(Feature::tracing_data) ||
        bit == perf_data::bit(Feature::sample_time)) {
      continue;
    }
    auto contents = encode_feature(bit, features, events_, attr_size_);
    if (contents.empty()) continue;
    append_feature_record(*this, bit, contents);
  }
  // perf ends the features with a record for one past its last feature bit.
  append_feature_record(*this, perf_data::feature_last_known + 1, {});
  if (features.tracing_data) {
    // The blob follows the record, padded to 8 bytes; the record's size field holds the padded
    // size, which is what perf checks its parse against.
    const auto& data = *features.tracing_data;
    std::uint32_t padded = static_cast<std::uint32_t>((data.size() + 7) & ~std::size_t{7});
    struct {
      abi::RecordHeader header;
      std::uint32_t size;
      std::uint32_t pad;
    } record{
        {static_cast<std::uint32_t>(abi::UserRecordType::header_tracing_data), 0, 16}, padded, 0};
    static_assert(sizeof record == 16);
    append(std::as_bytes(std::span(&record, 1)));
    append(data);
    std::vector<std::byte> zeros(padded - data.size());
    append(zeros);
  }
}

void PerfDataWriter::end_init() {
  if (!pipe_) return;
  abi::RecordHeader record{static_cast<std::uint32_t>(abi::UserRecordType::finished_init), 0,
                           sizeof(abi::RecordHeader)};
  append(std::as_bytes(std::span(&record, 1)));
}

void PerfDataWriter::finish(const PerfDataFeatures& features) {
  write_out();
  if (pipe_) {
    // The BUILD_ID feature's entries are HEADER_BUILD_ID records already.
    append(encode_feature(perf_data::bit(Feature::build_id), features, events_, attr_size_));
    write_out();
    finished_ = true;
    return;
  }
  perf_data::FileHeader header;
  header.size = sizeof header;
  header.attr_size = attr_size_ + sizeof(perf_data::FileSection);
  header.attrs = {sizeof header, events_.size() * header.attr_size};
  header.data = {data_offset_, data_size_};
  std::vector<std::pair<unsigned, std::vector<std::byte>>> sections;
  // The index is of this file's offsets: one read from another file would point elsewhere.
  PerfDataFeatures with_index;
  const PerfDataFeatures* described = &features;
  if (auxtrace_index_ != features.auxtrace_index) {
    with_index = features;
    with_index.auxtrace_index = auxtrace_index_;
    described = &with_index;
  }
  for (unsigned bit = 1; bit <= perf_data::feature_last_known; ++bit) {
    auto contents = encode_feature(bit, *described, events_, attr_size_);
    // STAT has no contents: its bit alone marks a `stat record` file.
    bool stat_mark = bit == perf_data::bit(perf_data::Feature::stat) && described->stat_file;
    if (contents.empty() && !stat_mark) continue;
    header.set_feature(bit);
    sections.emplace_back(bit, std::move(contents));
  }
  // perfscope's own, after perf's: perf skips the sections of the bits it does not know.
  if (auto contents = encode_feature(perf_data::perfscope_feature_embedded_files, *described,
                                     events_, attr_size_);
      !contents.empty()) {
    header.set_feature(perf_data::perfscope_feature_embedded_files);
    sections.emplace_back(perf_data::perfscope_feature_embedded_files, std::move(contents));
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
