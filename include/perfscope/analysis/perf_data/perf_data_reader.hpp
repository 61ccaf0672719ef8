// PerfDataReader: reads perf.data files, those Linux perf writes (file and pipe mode) and ours:
// the header, the events with their ids, every feature section perfscope writes, and the data
// records, in file order or in time order the way perf sorts them (by FINISHED_ROUND rounds).
// A recording whose header was never finished (a recorder killed by SIGKILL) is read up to its
// last whole record; a corrupt record stops the walk with an error naming its offset, after every
// record before it was delivered. Files are mapped, not copied: the heap holds the events, the
// features and the walk's own state, however large the file. The records of `perf record -z`
// (COMPRESSED, COMPRESSED2: one zstd stream across them) are decompressed as the walk meets them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_format.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/sys/memory_map.hpp"

namespace perfscope {

// Malformed input: what is wrong and at which byte offset of the file.
class PerfDataError : public std::runtime_error {
 public:
  PerfDataError(std::uint64_t offset, const std::string& what);
  // The same error, its text led by the file it is in ("FILE: perf.data offset ...").
  static PerfDataError in_file(const std::string& file, const PerfDataError& error);
  std::uint64_t offset() const noexcept { return offset_; }

 private:
  struct FullText {};
  PerfDataError(FullText, std::uint64_t offset, const std::string& text)
      : std::runtime_error(text), offset_(offset) {}
  std::uint64_t offset_;
};

struct PerfDataEventInfo {
  abi::PerfEventAttr attr{};         // zero-extended when the file's attr is shorter
  std::uint32_t file_attr_size = 0;  // attr.size as written in the file
  ParseConfig config;
  std::vector<std::uint64_t> ids;
  // From EVENT_DESC (or EVENT_UPDATE in pipe mode); else the name perf derives from the attr
  // (derived_event_name).
  std::string name;
  // From EVENT_UPDATE records: the unit and scale of its counts, and the CPUs it was opened on
  // (-1: any CPU). Empty when no record said.
  std::string unit;
  std::optional<double> scale;
  std::optional<std::vector<int>> cpus;
};

// PERF_RECORD_TIME_CONV: how the perf clock relates to the TSC (the user page's time_* fields).
struct TimeConversion {
  std::uint64_t time_shift = 0, time_mult = 0, time_zero = 0;
  // Newer perf adds these; absent in older records.
  std::optional<std::uint64_t> time_cycles, time_mask;
  bool cap_user_time_zero = false, cap_user_time_short = false;
};

// The HEADER_COMPRESSED feature of a `perf record -z` file.
struct CompressionInfo {
  static constexpr std::uint32_t zstd = 1;  // type: PERF_COMP_ZSTD
  std::uint32_t version = 0, type = 0, level = 0, ratio = 0, mmap_len = 0;
};

// The CLOCK_DATA feature (perf record -k, and every perfscope recording): one reading of the
// wall clock and one of the events' clock taken together, which ties sample times to dates.
struct ClockData {
  static constexpr std::uint32_t version = 1;  // the only layout perf defines
  std::uint32_t clockid = 0;                   // the events' clock (attr.clockid)
  std::uint64_t wall_clock_ns = 0;             // CLOCK_REALTIME, ns since the epoch
  std::uint64_t clockid_time_ns = 0;           // the events' clock at the same moment

  // CLOCK_REALTIME at time 0 of the events' clock: sample time t happened at this + t.
  std::uint64_t wall_clock_at_zero() const noexcept { return wall_clock_ns - clockid_time_ns; }
};

struct BuildIdEntry {
  std::uint16_t misc = 0;  // cpumode: abi::record_misc::kernel or user
  std::int32_t pid = perf_data::host_kernel_pid;
  std::vector<std::uint8_t> build_id;
  std::string filename;
};

struct CpuTopology {
  std::vector<std::string> core_siblings;    // CPUs of one package, as list strings ("0-3")
  std::vector<std::string> thread_siblings;  // CPUs of one core
  struct Cpu {
    std::uint32_t core_id = 0, socket_id = 0, die_id = 0;
  };
  std::vector<Cpu> cpus;                  // by CPU number
  std::vector<std::string> die_siblings;  // empty in files without die information
};

struct AuxtraceIndexEntry {
  std::uint64_t file_offset = 0;
  std::uint64_t size = 0;
  bool operator==(const AuxtraceIndexEntry&) const = default;
};

// A file a perfscope recording carries (perfscope_feature_embedded_files).
// The kinds of files perfscope carries for JIT code: /tmp/perf-PID.map, and a jit-PID.dump a
// process mapped (named by their paths on the recording's machine).
inline constexpr std::string_view perf_map_embedded_kind = "perf-map";
inline constexpr std::string_view jitdump_embedded_kind = "jitdump";

struct EmbeddedFile {
  std::string kind;  // "vdso", "perf-map", "jitdump"
  std::string name;  // "[vdso]"
  std::vector<std::uint8_t> build_id;
  std::vector<std::byte> bytes;
};

// GROUP_DESC: an event group of `members` events from the leader's index in the file's events.
struct EventGroupDesc {
  std::string name;  // "" unless the group was named ("{...}:name" style)
  std::uint32_t leader = 0;
  std::uint32_t members = 0;
};

struct PerfDataFeatures {
  std::optional<std::string> hostname, osrelease, version, arch, cpudesc, cpuid;
  std::optional<std::uint32_t> nr_cpus_available, nr_cpus_online;
  std::optional<std::uint64_t> total_mem_kb;
  std::optional<std::vector<std::string>> cmdline;
  std::optional<CpuTopology> cpu_topology;
  std::optional<std::uint64_t> clockid_res_ns;
  std::vector<BuildIdEntry> build_ids;
  std::vector<EventGroupDesc> groups;  // GROUP_DESC: the groups of more than one event
  std::optional<std::vector<std::byte>> tracing_data;  // the raw TRACING_DATA section
  std::optional<std::pair<std::uint64_t, std::uint64_t>> sample_time;  // first, last
  std::optional<CompressionInfo> compression;
  std::optional<ClockData> clock_data;
  // AUXTRACE: where each AUXTRACE record lies in the file (its header's offset) and its size
  // with its trace data, perf's index for reading the traces without a pass over the records.
  std::vector<AuxtraceIndexEntry> auxtrace_index;
  std::vector<unsigned> present;  // every feature bit the file has, decoded or not
  // simpleperf's META_INFO feature (bit 129): key/value pairs ("simpleperf_version",
  // "event_type_info", ...). Empty in files perf wrote.
  std::vector<std::pair<std::string, std::string>> simpleperf_meta_info;
  // perfscope's embedded files (the vDSO image of the recording machine). Not in pipe mode.
  std::vector<EmbeddedFile> embedded_files;
  // The STAT feature: counts of `stat record`, not samples (the writer sets the bit; the reader
  // lists it in `present`).
  bool stat_file = false;
};

// One data record as the reader delivers it.
struct PerfDataRecord {
  RecordView view;  // valid during the visit only
  // Of its header in the file; of the COMPRESSED record that carried it for a decompressed one.
  std::uint64_t offset = 0;
  bool decompressed = false;  // carried by a COMPRESSED record (at `offset`)
  std::size_t event = 0;      // index into events() of the event that wrote it
  std::uint64_t time = 0;     // its timestamp; 0 for records without one
  // Bytes that follow the record in the file but are not counted in its size: the trace data of
  // an AUXTRACE record, the tracing data of a pipe-mode HEADER_TRACING_DATA. Valid during the
  // visit only; empty for other records.
  std::span<const std::byte> trailing;
};

class PerfDataReader {
 public:
  // Maps a regular file; "-" (or a FIFO) reads standard input into memory (pipe mode, or a file
  // piped in).
  static PerfDataReader open(const std::string& path);
  // `source` names the bytes in errors ("standard input", a path); empty names none.
  static PerfDataReader from_bytes(std::vector<std::byte> bytes, std::string source = {});

  bool pipe_mode() const noexcept { return pipe_mode_; }
  // The path it was opened from, "standard input", or empty (from_bytes).
  const std::string& source() const noexcept { return source_; }
  const perf_data::FileHeader& header() const noexcept { return header_; }
  const std::vector<PerfDataEventInfo>& events() const noexcept { return events_; }
  const PerfDataFeatures& features() const noexcept { return features_; }
  // What the reader had to work around (an unfinished header, a torn last record), one sentence
  // each.
  const std::vector<std::string>& notes() const noexcept { return notes_; }
  // The byte range of the data records.
  std::uint64_t data_offset() const noexcept { return data_begin_; }
  std::uint64_t data_end() const noexcept { return data_end_; }
  // An error in the data section found while opening (pipe mode, or a torn recovered tail):
  // records before it are readable.
  const std::optional<PerfDataError>& data_error() const noexcept { return data_error_; }
  // The user-space records perf writes into the data itself (ID_INDEX, EVENT_UPDATE, TIME_CONV,
  // HEADER_BUILD_ID, THREAD_MAP, ...) are read while opening: in pipe mode every one of the stream;
  // in file mode those before the first sample or compressed record, where perf writes them
  // (the build ids then join features().build_ids).
  const std::vector<perf_data::IdIndexEntry>& id_index() const noexcept { return id_index_; }
  const std::optional<TimeConversion>& time_conversion() const noexcept { return time_conv_; }
  // How many records of a user-space type (64 and up) that reading met.
  std::uint64_t user_records_seen(abi::UserRecordType type) const noexcept;

  using Visitor = std::function<void(const PerfDataRecord&)>;
  // For the ordered walks: whether a record goes on to be ordered and visited, asked once per
  // record in file order, before the round queue (on the walk's thread in the pipelined walk). A
  // caller that needs few of the samples saves the queue's work on the others; records without
  // a timestamp are asked too. Empty: every record goes on.
  using RecordSieve = std::function<bool(const PerfDataRecord&)>;
  // Every record in file order, the contents of COMPRESSED records in place of them. Returns the
  // error that stopped the walk, if any.
  std::optional<PerfDataError> for_each_record(const Visitor& visit) const;
  // The same without the samples, which are stepped over unread: a first pass for the records
  // that say what the samples mean (mappings, tasks). A part of the data: from the record at
  // `from` (0: the first) to the one that ends at or past `to`, where `stopped` then says the
  // walk stopped (`to` itself when `to` is where a record starts).
  std::optional<PerfDataError> for_each_record_but_samples(const Visitor& visit,
                                                           std::uint64_t from = 0,
                                                           std::uint64_t to = ~std::uint64_t{0},
                                                           std::uint64_t* stopped = nullptr) const;
  // The first offset at or after `offset` (8-byte aligned, within 8 MiB) whose bytes are a
  // FINISHED_ROUND record's header: where a record likely starts, for a caller that walks the
  // data in two parts and checks that the first part's walk stops right there.
  std::optional<std::uint64_t> finished_round_after(std::uint64_t offset) const;
  // Records with a timestamp sorted as perf sorts them: queued, and at each FINISHED_ROUND
  // delivered up to the latest time of the round before; records without one (user-space types,
  // synthesized records) go out as they are met.
  std::optional<PerfDataError> for_each_record_ordered(const Visitor& visit,
                                                       const RecordSieve& keep = {}) const;
  // The same records in the same order, with the walk (record headers, timestamps, the round
  // queue, the mapped file's page faults) on a thread of its own: `visit` runs on the calling
  // thread, on batches the walk hands over, so that a caller's work on each record overlaps the
  // reading on a second CPU. A record's bytes are the file's or a copy, valid during the visit;
  // `trailing` is empty (a caller that needs AUXTRACE data takes the plain walk). Small files and
  // machines with one CPU get the plain walk: below `min_bytes` of data the second thread's start
  // costs more than it saves. An exception from `visit` stops the walk and is rethrown.
  static constexpr std::uint64_t pipelined_min_bytes = 8 << 20;
  std::optional<PerfDataError> for_each_record_ordered_pipelined(
      const Visitor& visit, std::uint64_t min_bytes = pipelined_min_bytes,
      const RecordSieve& keep = {}) const;

  // The same records in the same order handed to `workers` threads at once: the calling thread
  // walks and is worker 0 (it visits each chunk a ring's length after publishing it), the
  // others run on threads of their own. The walk is cut into chunks (numbered from 0; at most
  // 8192 records and a sixteenth of a worker's share of the data), each chunk's samples taken by
  // the first worker to reach it (`owned`): each worker is handed, in order and with the number
  // of its chunk, every record of the chunks it took and the records of the others that are
  // not samples, so that its state (tasks, mappings) at each of its samples is what it would
  // be on one thread. Which worker takes a chunk varies from run to run; what the callers make
  // of the chunks must not. One worker: the plain walk, every record in chunk 0. An exception
  // from `visit` stops the walk and the workers and is rethrown.
  // `taken`, when given, is called on a worker once it has visited a chunk it took.
  using ChunkVisitor = std::function<void(std::size_t worker, std::uint64_t chunk, bool owned,
                                          const PerfDataRecord&)>;
  using ChunkTaken = std::function<void(std::size_t worker, std::uint64_t chunk)>;
  std::optional<PerfDataError> for_each_record_ordered_fanned_out(
      std::size_t workers, const ChunkVisitor& visit, const RecordSieve& keep = {},
      const ChunkTaken& taken = {}) const;

  // For a caller that has walked the file once already and knows the offsets of the records it
  // wants (none of them compressed, all 8-byte aligned: an error says otherwise):
  // - the SAMPLE records between two record offsets, in file order, stepped to as the walks
  //   step; a caller that split the data at records it knows scans the parts on threads of its
  //   own (the other records' headers alone are read);
  // - the records at `offsets` (ascending) in the order for_each_record_ordered gives them.
  std::optional<PerfDataError> for_each_sample_between(std::uint64_t from, std::uint64_t to,
                                                       const Visitor& visit) const;
  std::optional<PerfDataError> for_each_record_ordered_at(std::span<const std::uint64_t> offsets,
                                                          const Visitor& visit) const;

  // The event of a record (by its IDENTIFIER or ID field; the first event when there is none).
  std::size_t event_of(const RecordView& view) const noexcept;
  std::uint64_t time_of(const RecordView& view, std::size_t event) const noexcept;

 private:
  PerfDataReader() = default;
  // parse(), its header errors led by source_.
  void parse_naming_errors();
  void parse();
  void parse_file_header();
  void parse_attrs();
  void parse_features();
  void parse_feature(unsigned bit, std::uint64_t offset, std::uint64_t size);
  void parse_pipe();
  void parse_leading_records();
  // A user-space record met while opening; false (data_error_ set) when it is malformed.
  bool take_user_record(std::uint64_t offset, const abi::RecordHeader& header);
  bool take_event_update(std::uint64_t offset, std::span<const std::byte> record);
  void finish_events();
  // The walk behind both for_each_record*: `visit(record, stable)`, where stable says whether the
  // record's bytes outlive the call (a mapped record does; a decompressed or realigned one not).
  // `held()` gives the lowest file offset whose bytes the caller still holds (UINT64_MAX: none):
  // the mapped pages before it and before the walk's position are given back as the walk goes.
  template <class Visit, class Held>
  std::optional<PerfDataError> walk(Visit&& visit, Held&& held, bool samples = true,
                                    std::uint64_t from = 0, std::uint64_t to = ~std::uint64_t{0},
                                    std::uint64_t* stopped = nullptr) const;
  // for_each_record_ordered, where the visitor also holds the file's bytes from `also_held()`
  // on (the pipelined walk's batches in flight): pages from there on are not given back.
  std::optional<PerfDataError> ordered_walk(const Visitor& visit,
                                            const std::function<std::uint64_t()>& also_held,
                                            const RecordSieve& keep) const;
  // The uncompressed, aligned record at `offset` with its event and time, or an error.
  std::optional<PerfDataError> plain_record_at(std::uint64_t offset, PerfDataRecord& record,
                                               std::uint64_t& next) const;
  // The record at `offset` (checked against `end`), or an error.
  std::optional<PerfDataError> record_at(std::uint64_t offset, std::uint64_t end, RecordView& view,
                                         std::uint64_t& next) const noexcept;

  std::vector<std::byte> owned_;  // from_bytes and standard input
  std::string source_;
  sys::MemoryMap map_;  // a file
  std::span<const std::byte> bytes_;
  bool pipe_mode_ = false;
  perf_data::FileHeader header_{};
  std::vector<PerfDataEventInfo> events_;
  PerfDataFeatures features_;
  std::vector<std::string> notes_;
  std::uint64_t data_begin_ = 0, data_end_ = 0;
  std::optional<PerfDataError> data_error_;
  std::vector<std::pair<std::uint64_t, std::size_t>> id_to_event_;  // sorted
  bool all_identifier_ = false;
  bool truncated_ = false;
  std::vector<perf_data::IdIndexEntry> id_index_;
  std::optional<TimeConversion> time_conv_;
  std::vector<std::uint64_t> user_records_ = std::vector<std::uint64_t>(64);  // by type - 64
};

// What every command says of a recording read only up to an error (a file cut short, a damaged
// record): the file, the error, and that what follows covers the records before it. One wording
// for report, script, annotate, sched, diff and the exports.
std::string partial_data_warning(const PerfDataReader& reader, const PerfDataError& error);

}  // namespace perfscope
