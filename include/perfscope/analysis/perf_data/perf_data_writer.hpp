// PerfDataWriter: writes a perf.data file (PERFILE2) that Linux perf reads. Crash safety comes
// from the order of the writes: the header and the attr section go first, with a data size of 0;
// records are appended in rounds, and after each round the header's data size is updated to
// cover it. A recorder killed at any moment leaves a file whose header describes every whole
// round written (perf reads it), and whose bytes after that are whole records up to the last
// write (perfscope reads those too). finish() appends the feature sections and the final header.
//
// Pipe mode (path "-", standard output): perf's stream format, which needs no seeks. A 16-byte
// header, the events as HEADER_ATTR records, then (begin_pipe) the features as HEADER_FEATURE
// records and the tracepoint formats as HEADER_TRACING_DATA, then the records; finish() adds the
// build ids as HEADER_BUILD_ID records, since they are known only at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/feature_codec.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

class PerfDataWriter {
 public:
  // Creates `path` with mode 0600 (an existing file is renamed to PATH.old first, as perf does);
  // "-" writes pipe mode to standard output.
  PerfDataWriter(const std::string& path, std::vector<PerfDataEvent> events);
  ~PerfDataWriter();
  PerfDataWriter(const PerfDataWriter&) = delete;
  PerfDataWriter& operator=(const PerfDataWriter&) = delete;

  bool pipe_mode() const noexcept { return pipe_; }
  // Pipe mode, before the first record: the features known at the start (all but BUILD_ID and
  // SAMPLE_TIME) as HEADER_FEATURE records, and TRACING_DATA as a HEADER_TRACING_DATA record.
  void begin_pipe(const PerfDataFeatures& features);
  // Marks the end of the synthesized records (FINISHED_INIT); pipe readers wait for it before
  // treating the stream as live.
  void end_init();

  void append(std::span<const std::byte> record);
  void append(const RecordView& view) { append(view.bytes); }
  // An AUXTRACE record and its trace data (the record's size field is set here: the data's size
  // padded to 8 bytes, the padding written as zeros, as perf writes it). Copying a record read
  // from a file is append(record.view) then append(record.trailing).
  void append_auxtrace(perf_data::AuxtraceRecord record, std::span<const std::byte> data,
                       std::span<const std::byte> more = {});
  // Ends a round: a FINISHED_ROUND record, the buffered bytes written out, and the header's
  // data size moved past them.
  void end_round();
  // Writes the feature sections (those `features` has; AUXTRACE: the index of the records
  // append_auxtrace wrote, whatever `features` says) and the final header.
  void finish(const PerfDataFeatures& features);

  const std::string& path() const noexcept { return path_; }
  std::uint64_t data_size() const noexcept { return data_size_ + buffer_.size(); }
  // Bytes of the whole file so far.
  std::uint64_t file_size() const noexcept { return data_offset_ + data_size(); }

 private:
  void write_out();
  void write_at(std::uint64_t offset, const void* bytes, std::size_t size);
  void write_sequential(const void* bytes, std::size_t size);
  void update_data_size();

  std::string path_;
  bool pipe_ = false;
  int fd_ = -1;
  std::vector<PerfDataEvent> events_;
  std::uint32_t attr_size_ = 0;
  std::uint64_t data_offset_ = 0;
  std::uint64_t data_size_ = 0;  // written to the file
  std::vector<std::byte> buffer_;
  std::vector<AuxtraceIndexEntry> auxtrace_index_;
  bool finished_ = false;
};

// The attr size to write: perf 6.1's own when nothing beyond it is set, else ours.
std::uint32_t portable_attr_size(const abi::PerfEventAttr& attr);

}  // namespace perfscope
