// PERF_RECORD_* types written into the ring buffer, their header misc bits, and the user-space
// record types perf.data files add.
#pragma once

#include <cstddef>
#include <cstdint>

namespace perfscope::abi {

enum class RecordType : std::uint32_t {
  mmap = 1,
  lost = 2,
  comm = 3,
  exit = 4,
  throttle = 5,
  unthrottle = 6,
  fork = 7,
  read = 8,
  sample = 9,
  mmap2 = 10,
  aux = 11,
  itrace_start = 12,
  lost_samples = 13,
  switch_ = 14,
  switch_cpu_wide = 15,
  namespaces = 16,
  ksymbol = 17,
  bpf_event = 18,
  cgroup = 19,
  text_poke = 20,
  aux_output_hw_id = 21,
  callchain_deferred = 22,
};
inline constexpr std::uint32_t kernel_record_type_max = 23;

// Types perf writes itself into perf.data (never produced by the kernel).
enum class UserRecordType : std::uint32_t {
  header_attr = 64,
  header_event_type = 65,
  header_tracing_data = 66,
  header_build_id = 67,
  finished_round = 68,
  id_index = 69,
  auxtrace_info = 70,
  auxtrace = 71,
  auxtrace_error = 72,
  thread_map = 73,
  cpu_map = 74,
  stat_config = 75,
  stat = 76,
  stat_round = 77,
  event_update = 78,
  time_conv = 79,
  header_feature = 80,
  compressed = 81,
  finished_init = 82,
  compressed2 = 83,
};

struct RecordHeader {
  std::uint32_t type;
  std::uint16_t misc;
  std::uint16_t size;
};
static_assert(sizeof(RecordHeader) == 8);
inline constexpr std::size_t record_header_size = sizeof(RecordHeader);

namespace record_misc {
inline constexpr std::uint16_t cpumode_mask = 7 << 0;
inline constexpr std::uint16_t cpumode_unknown = 0;
inline constexpr std::uint16_t kernel = 1;
inline constexpr std::uint16_t user = 2;
inline constexpr std::uint16_t hypervisor = 3;
inline constexpr std::uint16_t guest_kernel = 4;
inline constexpr std::uint16_t guest_user = 5;
inline constexpr std::uint16_t proc_map_parse_timeout = 1 << 12;
inline constexpr std::uint16_t mmap_data = 1 << 13;           // MMAP/MMAP2
inline constexpr std::uint16_t comm_exec = 1 << 13;           // COMM
inline constexpr std::uint16_t fork_exec = 1 << 13;           // FORK (perf-internal)
inline constexpr std::uint16_t switch_out = 1 << 13;          // SWITCH
inline constexpr std::uint16_t exact_ip = 1 << 14;            // SAMPLE
inline constexpr std::uint16_t switch_out_preempt = 1 << 14;  // SWITCH
inline constexpr std::uint16_t mmap_build_id = 1 << 14;       // MMAP2
inline constexpr std::uint16_t ext_reserved = 1 << 15;
}  // namespace record_misc

// PERF_RECORD_AUX flags.
namespace aux_flag {
inline constexpr std::uint64_t truncated = 1ULL << 0;
inline constexpr std::uint64_t overwrite = 1ULL << 1;
inline constexpr std::uint64_t partial = 1ULL << 2;
inline constexpr std::uint64_t collision = 1ULL << 3;
inline constexpr std::uint64_t pmu_format_type_mask = 0xffULL << 8;
}  // namespace aux_flag

enum class KsymbolType : std::uint16_t { unknown = 0, bpf = 1, ool = 2 };
inline constexpr std::uint16_t ksymbol_flag_unregister = 1 << 0;

enum class BpfEventType : std::uint16_t { unknown = 0, prog_load = 1, prog_unload = 2 };

// Indexes into PERF_RECORD_NAMESPACES' link_info array.
enum class NamespaceIndex : std::uint32_t {
  net = 0,
  uts = 1,
  ipc = 2,
  pid = 3,
  user = 4,
  mnt = 5,
  cgroup = 6,
};
inline constexpr std::uint32_t namespace_count = 7;

}  // namespace perfscope::abi
