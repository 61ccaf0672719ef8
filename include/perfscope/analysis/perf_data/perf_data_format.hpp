// The on-disk layout of perf.data (PERFILE2) as Linux perf writes and reads it: the file header,
// the section pointers, the feature bits, and the records perf adds to the kernel's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"

namespace perfscope::perf_data {

// "PERFILE2" read as a little-endian u64; a byte-swapped value means a foreign-endian file.
inline constexpr std::uint64_t file_magic = 0x32454c4946524550ULL;
inline constexpr std::uint64_t file_magic_swapped = 0x50455246494c4532ULL;

struct FileSection {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};
static_assert(sizeof(FileSection) == 16);

inline constexpr std::size_t feature_bits = 256;

struct FileHeader {
  std::uint64_t magic = file_magic;
  std::uint64_t size = 0;       // of this header
  std::uint64_t attr_size = 0;  // of one attr section entry: attr + FileSection of its ids
  FileSection attrs;
  FileSection data;
  FileSection event_types;  // unused by perf since 2012; always empty
  std::uint64_t features[feature_bits / 64] = {};

  bool has_feature(unsigned bit) const noexcept {
    return bit < feature_bits && ((features[bit / 64] >> (bit % 64)) & 1) != 0;
  }
  void set_feature(unsigned bit) noexcept { features[bit / 64] |= 1ULL << (bit % 64); }
};
static_assert(sizeof(FileHeader) == 104);
inline constexpr std::size_t data_size_offset = offsetof(FileHeader, data) + sizeof(std::uint64_t);

// Pipe mode: no section pointers, everything else comes as records.
struct PipeHeader {
  std::uint64_t magic = file_magic;
  std::uint64_t size = sizeof(PipeHeader);
};
static_assert(sizeof(PipeHeader) == 16);

// Feature bits (tools/perf/util/header.h, HEADER_*).
enum class Feature : unsigned {
  tracing_data = 1,
  build_id = 2,
  hostname = 3,
  osrelease = 4,
  version = 5,
  arch = 6,
  nrcpus = 7,
  cpudesc = 8,
  cpuid = 9,
  total_mem = 10,
  cmdline = 11,
  event_desc = 12,
  cpu_topology = 13,
  numa_topology = 14,
  branch_stack = 15,
  pmu_mappings = 16,
  group_desc = 17,
  auxtrace = 18,
  stat = 19,
  cache = 20,
  sample_time = 21,
  mem_topology = 22,
  clockid = 23,
  dir_format = 24,
  bpf_prog_info = 25,
  bpf_btf = 26,
  compressed = 27,
  cpu_pmu_caps = 28,
  clock_data = 29,
  hybrid_topology = 30,
  pmu_caps = 31,
};
inline constexpr unsigned feature_last_known = 31;
// perfscope's own feature: files the recording carries so that a report made later or elsewhere
// names the same code (the vDSO image). perf reads the feature bits it knows (below
// HEADER_LAST_FEATURE) and skips the sections of the rest, so it reads these files unharmed; the
// bit lies between perf's (1-31 today) and simpleperf's (128 and up).
// Contents: u32 count, then per file: kind, name (perf strings), u32 build id size, the build id,
// u64 size, the bytes, zero padding to 8.
inline constexpr unsigned perfscope_feature_embedded_files = 100;
// simpleperf's own feature bits (FEAT_FILE and after) start here; META_INFO holds its version.
inline constexpr unsigned simpleperf_feature_first = 128;
inline constexpr unsigned simpleperf_feature_meta_info = 129;
// simpleperf's own record types (SIMPLE_PERF_RECORD_*) start here; perf knows none of them.
inline constexpr std::uint32_t simpleperf_record_first = 32768;
// "KERNEL_SYMBOL", "CALLCHAIN", ... for a simpleperf record type; "" for others.
std::string_view simpleperf_record_name(std::uint32_t type) noexcept;

constexpr unsigned bit(Feature feature) { return static_cast<unsigned>(feature); }
// "HOSTNAME", "BUILD_ID", ...; "" for bits perf does not define.
std::string_view feature_name(unsigned bit) noexcept;
// The name for messages: feature_name, or "unknown feature".
std::string_view feature_label(unsigned bit) noexcept;

// Strings in feature sections: u32 length (padded to 64 bytes, NUL included), then the bytes.
inline constexpr std::size_t string_align = 64;

// PERF_RECORD_HEADER_BUILD_ID and the BUILD_ID feature's entries: header, pid, 24 bytes of which
// the first `size` are the build id (the size byte is valid with build_id_size_misc in misc),
// then the file name padded to 64 bytes.
inline constexpr std::uint16_t build_id_size_misc = 1 << 15;
inline constexpr std::size_t build_id_max = 20;
struct BuildIdHead {
  abi::RecordHeader header;
  std::int32_t pid;
  std::uint8_t build_id[24];
};
static_assert(sizeof(BuildIdHead) == 36);

// PERF_RECORD_AUXTRACE: a chunk of an AUX area (Intel PT, ARM SPE, CoreSight ETM trace). The
// `size` bytes of trace data follow the record and are not counted in header.size; perf pads
// them to 8 bytes and counts the padding in `size`.
struct AuxtraceRecord {
  abi::RecordHeader header;
  std::uint64_t size;       // of the trace data after the record
  std::uint64_t offset;     // of the data in the AUX area's stream
  std::uint64_t reference;  // links it to its AUX record (perf: a timestamp or counter)
  std::uint32_t idx;        // the AUX area (mmap index)
  std::uint32_t tid;
  std::uint32_t cpu;
  std::uint32_t reserved;
};
static_assert(sizeof(AuxtraceRecord) == 48);

// PERF_RECORD_ID_INDEX entry.
struct IdIndexEntry {
  std::uint64_t id, idx, cpu, tid;
};

// The attr size perf 6.1 (and older readers) accept: they reject a file attr larger than their
// own struct, so attrs are written at this size when nothing beyond it is set.
inline constexpr std::uint32_t portable_attr_size = abi::attr_size::ver7;

// What Linux perf uses as the pid of the host kernel's synthesized records.
inline constexpr std::int32_t host_kernel_pid = -1;

}  // namespace perfscope::perf_data
