// Typed, zero-copy views of every record the kernel writes into a perf ring buffer. Spans and
// string_views point into the buffer the record was decoded from: they stay valid as long as it
// does (for a ring buffer, until the consumer releases the record).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <variant>

#include "perfscope/abi/branch_entry.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/reading.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

// One record as bytes: header included, 8-byte aligned, `bytes.size() == header.size`.
struct RecordView {
  abi::RecordHeader header{};
  std::span<const std::byte> bytes;
  std::uint32_t type() const noexcept { return header.type; }
};

// The view of one whole record held in `bytes` (the header is copied: `bytes` may be unaligned).
inline RecordView record_view(std::span<const std::byte> bytes) noexcept {
  RecordView view;
  std::memcpy(&view.header, bytes.data(), sizeof view.header);
  view.bytes = bytes;
  return view;
}

// The identity fields of a record (sample_id_all trailer, or the matching fields of a sample).
struct SampleId {
  std::uint64_t fields = 0;  // sample_format bits present
  std::uint32_t pid = 0, tid = 0;
  std::uint64_t time = 0;
  std::uint64_t id = 0;
  std::uint64_t stream_id = 0;
  std::uint32_t cpu = 0;
  bool has(std::uint64_t bit) const noexcept { return (fields & bit) != 0; }
};

// PERF_SAMPLE_READ / PERF_RECORD_READ values, decoded on demand.
struct PERFSCOPE_EXPORT ReadValues {
  std::span<const std::uint64_t> words;
  std::uint64_t read_format = 0;
  // Members in the read (1 without PERF_FORMAT_GROUP).
  std::size_t member_count() const noexcept;
  // Decodes into `out` (see decode_read); returns members decoded.
  std::size_t decode(std::span<Reading> out) const noexcept {
    return decode_read(words, read_format, out);
  }
};

struct PERFSCOPE_EXPORT RegisterSet {
  std::uint64_t abi = 0;                  // abi::SampleRegsAbi: 0 means no registers were captured
  std::uint64_t mask = 0;                 // the attr's register mask
  std::span<const std::uint64_t> values;  // one per set bit of mask, in bit order
  // Value of register number `reg` (a bit of the mask), if captured.
  std::optional<std::uint64_t> value(unsigned reg) const noexcept;
};

struct BranchStack {
  bool has_hw_index = false;
  std::uint64_t hw_index = 0;
  std::span<const abi::PerfBranchEntry> entries;
  std::span<const std::uint64_t> counters;  // PERF_SAMPLE_BRANCH_COUNTERS, one per entry
};

// PERF_SAMPLE_WEIGHT (one u64) or PERF_SAMPLE_WEIGHT_STRUCT (var1_dw, var2_w, var3_w).
struct SampleWeight {
  std::uint64_t full = 0;
  std::uint32_t var1_dw() const noexcept { return static_cast<std::uint32_t>(full); }
  std::uint16_t var2_w() const noexcept { return static_cast<std::uint16_t>(full >> 32); }
  std::uint16_t var3_w() const noexcept { return static_cast<std::uint16_t>(full >> 48); }
};

// PERF_SAMPLE_DATA_SRC split into its fields (abi/data_source.hpp names their bits).
struct PERFSCOPE_EXPORT DataSource {
  std::uint64_t op = 0, level = 0, snoop = 0, lock = 0, dtlb = 0, level_number = 0, remote = 0,
                snoopx = 0, block = 0, hops = 0;
  static DataSource decode(std::uint64_t word) noexcept;
};

struct SampleRecord {
  std::uint64_t fields = 0;  // sample_type bits present
  std::uint16_t misc = 0;
  std::uint64_t identifier = 0;
  std::uint64_t ip = 0;
  std::uint32_t pid = 0, tid = 0;
  std::uint64_t time = 0;
  std::uint64_t addr = 0;
  std::uint64_t id = 0;
  std::uint64_t stream_id = 0;
  std::uint32_t cpu = 0;
  std::uint64_t period = 0;
  ReadValues read;
  std::span<const std::uint64_t> callchain;  // ips with PERF_CONTEXT_* markers
  std::span<const std::byte> raw;
  BranchStack branch_stack;
  RegisterSet regs_user;
  std::span<const std::byte> stack_user;  // the captured bytes (size from the attr)
  std::uint64_t stack_user_dyn_size = 0;  // how many of them are valid
  SampleWeight weight;
  std::uint64_t data_src = 0;
  std::uint64_t transaction = 0;
  RegisterSet regs_intr;
  std::uint64_t phys_addr = 0;
  std::uint64_t cgroup = 0;
  std::uint64_t data_page_size = 0;
  std::uint64_t code_page_size = 0;
  std::span<const std::byte> aux;

  bool has(std::uint64_t bit) const noexcept { return (fields & bit) != 0; }
  // The valid part of the user stack copy.
  std::span<const std::byte> stack_user_valid() const noexcept {
    return stack_user.first(std::min<std::size_t>(stack_user.size(), stack_user_dyn_size));
  }
};

struct MmapRecord {
  std::uint32_t pid = 0, tid = 0;
  std::uint64_t addr = 0, len = 0, pgoff = 0;
  std::string_view filename;
  SampleId sample_id;
};

struct Mmap2Record {
  std::uint32_t pid = 0, tid = 0;
  std::uint64_t addr = 0, len = 0, pgoff = 0;
  bool has_build_id = false;  // PERF_RECORD_MISC_MMAP_BUILD_ID: build_id replaces maj..ino_gen
  std::uint32_t maj = 0, min = 0;
  std::uint64_t ino = 0, ino_generation = 0;
  std::span<const std::byte> build_id;
  std::uint32_t prot = 0, flags = 0;
  std::string_view filename;
  SampleId sample_id;
};

struct LostRecord {
  std::uint64_t id = 0, lost = 0;
  SampleId sample_id;
};

struct CommRecord {
  std::uint32_t pid = 0, tid = 0;
  std::string_view comm;
  bool exec = false;  // PERF_RECORD_MISC_COMM_EXEC
  SampleId sample_id;
};

// PERF_RECORD_FORK and PERF_RECORD_EXIT share a layout.
struct TaskRecord {
  std::uint32_t pid = 0, ppid = 0, tid = 0, ptid = 0;
  std::uint64_t time = 0;
  SampleId sample_id;
};

// PERF_RECORD_THROTTLE and PERF_RECORD_UNTHROTTLE share a layout.
struct ThrottleRecord {
  std::uint64_t time = 0, id = 0, stream_id = 0;
  SampleId sample_id;
};

struct ReadRecord {
  std::uint32_t pid = 0, tid = 0;
  ReadValues values;
  SampleId sample_id;
};

struct AuxRecord {
  std::uint64_t aux_offset = 0, aux_size = 0, flags = 0;
  SampleId sample_id;
};

struct ItraceStartRecord {
  std::uint32_t pid = 0, tid = 0;
  SampleId sample_id;
};

struct LostSamplesRecord {
  std::uint64_t lost = 0;
  SampleId sample_id;
};

// PERF_RECORD_SWITCH (no payload) and PERF_RECORD_SWITCH_CPU_WIDE (next/prev task).
struct SwitchRecord {
  bool out = false;        // PERF_RECORD_MISC_SWITCH_OUT
  bool preempted = false;  // PERF_RECORD_MISC_SWITCH_OUT_PREEMPT
  bool cpu_wide = false;
  std::uint32_t next_prev_pid = 0, next_prev_tid = 0;
  SampleId sample_id;
};

struct NamespacesRecord {
  std::uint32_t pid = 0, tid = 0;
  std::span<const std::uint64_t> dev_inode_pairs;  // {dev, inode} per abi::NamespaceIndex
  std::size_t count() const noexcept { return dev_inode_pairs.size() / 2; }
  SampleId sample_id;
};

struct KsymbolRecord {
  std::uint64_t addr = 0;
  std::uint32_t len = 0;
  std::uint16_t ksym_type = 0, flags = 0;
  std::string_view name;
  SampleId sample_id;
};

struct BpfEventRecord {
  std::uint16_t event_type = 0, flags = 0;
  std::uint32_t id = 0;
  std::span<const std::byte> tag;  // 8 bytes
  SampleId sample_id;
};

struct CgroupRecord {
  std::uint64_t id = 0;
  std::string_view path;
  SampleId sample_id;
};

struct TextPokeRecord {
  std::uint64_t addr = 0;
  std::span<const std::byte> old_bytes, new_bytes;
  SampleId sample_id;
};

struct AuxOutputHwIdRecord {
  std::uint64_t hw_id = 0;
  SampleId sample_id;
};

// PERF_RECORD_CALLCHAIN_DEFERRED (Linux 6.19): a user callchain delivered after the sample.
struct DeferredCallchainRecord {
  std::uint64_t cookie = 0;
  std::span<const std::uint64_t> ips;
  SampleId sample_id;
};

// Any type this decoder does not know (newer kernels, user-space types): kept as bytes.
struct UnknownRecord {
  std::uint32_t type = 0;
  std::span<const std::byte> payload;  // after the header
};

using Record =
    std::variant<UnknownRecord, SampleRecord, MmapRecord, Mmap2Record, LostRecord, CommRecord,
                 TaskRecord, ThrottleRecord, ReadRecord, AuxRecord, ItraceStartRecord,
                 LostSamplesRecord, SwitchRecord, NamespacesRecord, KsymbolRecord, BpfEventRecord,
                 CgroupRecord, TextPokeRecord, AuxOutputHwIdRecord, DeferredCallchainRecord>;

struct DecodeError {
  std::size_t offset = 0;  // byte offset inside the record where decoding stopped
  const char* what = "";   // static text: no allocation on the hot path
};

// Decodes a record. Returns false with `error` set when the record is truncated or inconsistent
// (a length that runs past its end); it never reads outside `view.bytes`. Reusing one `out` for
// every record is the fast path: a SampleRecord is then reset only when the sample_type changes,
// which relies on its fields outside `fields` keeping the defaults the decoder left there.
PERFSCOPE_EXPORT bool decode_record(const RecordView& view, const ParseConfig& config, Record& out,
                                    DecodeError& error) noexcept;
PERFSCOPE_EXPORT bool decode_sample(const RecordView& view, const ParseConfig& config,
                                    SampleRecord& out, DecodeError& error) noexcept;
// The sample_id trailer of a non-sample record.
PERFSCOPE_EXPORT bool decode_sample_id(const RecordView& view, const ParseConfig& config,
                                       SampleId& out) noexcept;

// The event id of a record from a buffer shared by several events: the first u64 after the
// header for samples, the last u64 for other records. Needs PERF_SAMPLE_IDENTIFIER (and
// sample_id_all for non-samples); nullopt when the record is too short.
PERFSCOPE_EXPORT std::optional<std::uint64_t> record_identifier(const RecordView& view) noexcept;

// "SAMPLE", "MMAP2", ..., or "" for unknown types.
PERFSCOPE_EXPORT std::string_view record_type_name(std::uint32_t type) noexcept;

}  // namespace perfscope
