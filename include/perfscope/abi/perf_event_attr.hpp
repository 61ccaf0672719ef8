// The kernel's struct perf_event_attr, defined here so that perfscope does not depend on the
// distribution's (older) <linux/perf_event.h>. Flag bits are named constants over one u64 instead
// of C bitfields so that the layout is explicit and the attr can be dumped field by field.
#pragma once

#include <cstddef>
#include <cstdint>

namespace perfscope::abi {

enum class EventType : std::uint32_t {
  hardware = 0,
  software = 1,
  tracepoint = 2,
  hw_cache = 3,
  raw = 4,
  breakpoint = 5,
};
inline constexpr std::uint32_t event_type_count = 6;  // dynamic PMUs have larger types

// Extended type: the PMU type of a hybrid core PMU lives in config bits 32..63 for hardware and
// hw-cache events.
inline constexpr unsigned pmu_type_shift = 32;
inline constexpr std::uint64_t hw_event_mask = 0xffffffffULL;

enum class HardwareEvent : std::uint64_t {
  cpu_cycles = 0,
  instructions = 1,
  cache_references = 2,
  cache_misses = 3,
  branch_instructions = 4,
  branch_misses = 5,
  bus_cycles = 6,
  stalled_cycles_frontend = 7,
  stalled_cycles_backend = 8,
  ref_cpu_cycles = 9,
};
inline constexpr std::uint64_t hardware_event_count = 10;

enum class SoftwareEvent : std::uint64_t {
  cpu_clock = 0,
  task_clock = 1,
  page_faults = 2,
  context_switches = 3,
  cpu_migrations = 4,
  page_faults_min = 5,
  page_faults_maj = 6,
  alignment_faults = 7,
  emulation_faults = 8,
  dummy = 9,
  bpf_output = 10,
  cgroup_switches = 11,
};
inline constexpr std::uint64_t software_event_count = 12;

// PERF_TYPE_HW_CACHE config = cache_id | (op_id << 8) | (result_id << 16).
enum class CacheId : std::uint64_t {
  l1d = 0,
  l1i = 1,
  ll = 2,
  dtlb = 3,
  itlb = 4,
  bpu = 5,
  node = 6
};
enum class CacheOp : std::uint64_t { read = 0, write = 1, prefetch = 2 };
enum class CacheResult : std::uint64_t { access = 0, miss = 1 };
inline constexpr std::uint64_t cache_id_count = 7;
inline constexpr std::uint64_t cache_op_count = 3;
inline constexpr std::uint64_t cache_result_count = 2;

constexpr std::uint64_t hw_cache_config(CacheId id, CacheOp op, CacheResult result) {
  return static_cast<std::uint64_t>(id) | (static_cast<std::uint64_t>(op) << 8) |
         (static_cast<std::uint64_t>(result) << 16);
}

// attr.bp_type
namespace breakpoint_type {
inline constexpr std::uint32_t empty = 0;
inline constexpr std::uint32_t read = 1;
inline constexpr std::uint32_t write = 2;
inline constexpr std::uint32_t read_write = read | write;
inline constexpr std::uint32_t execute = 4;
}  // namespace breakpoint_type

// attr.bp_len
namespace breakpoint_length {
inline constexpr std::uint64_t len1 = 1;
inline constexpr std::uint64_t len2 = 2;
inline constexpr std::uint64_t len3 = 3;
inline constexpr std::uint64_t len4 = 4;
inline constexpr std::uint64_t len5 = 5;
inline constexpr std::uint64_t len6 = 6;
inline constexpr std::uint64_t len7 = 7;
inline constexpr std::uint64_t len8 = 8;
}  // namespace breakpoint_length

// attr.read_format
namespace read_format {
inline constexpr std::uint64_t total_time_enabled = 1ULL << 0;
inline constexpr std::uint64_t total_time_running = 1ULL << 1;
inline constexpr std::uint64_t id = 1ULL << 2;
inline constexpr std::uint64_t group = 1ULL << 3;
inline constexpr std::uint64_t lost = 1ULL << 4;
inline constexpr std::uint64_t all = (1ULL << 5) - 1;
}  // namespace read_format

// The single-bit (and one two-bit) flags that follow read_format in the attr.
namespace attr_flag {
inline constexpr std::uint64_t disabled = 1ULL << 0;
inline constexpr std::uint64_t inherit = 1ULL << 1;
inline constexpr std::uint64_t pinned = 1ULL << 2;
inline constexpr std::uint64_t exclusive = 1ULL << 3;
inline constexpr std::uint64_t exclude_user = 1ULL << 4;
inline constexpr std::uint64_t exclude_kernel = 1ULL << 5;
inline constexpr std::uint64_t exclude_hv = 1ULL << 6;
inline constexpr std::uint64_t exclude_idle = 1ULL << 7;
inline constexpr std::uint64_t mmap = 1ULL << 8;
inline constexpr std::uint64_t comm = 1ULL << 9;
inline constexpr std::uint64_t freq = 1ULL << 10;
inline constexpr std::uint64_t inherit_stat = 1ULL << 11;
inline constexpr std::uint64_t enable_on_exec = 1ULL << 12;
inline constexpr std::uint64_t task = 1ULL << 13;
inline constexpr std::uint64_t watermark = 1ULL << 14;
inline constexpr unsigned precise_ip_shift = 15;  // two bits: 15..16
inline constexpr std::uint64_t precise_ip_mask = 3ULL << precise_ip_shift;
inline constexpr std::uint64_t mmap_data = 1ULL << 17;
inline constexpr std::uint64_t sample_id_all = 1ULL << 18;
inline constexpr std::uint64_t exclude_host = 1ULL << 19;
inline constexpr std::uint64_t exclude_guest = 1ULL << 20;
inline constexpr std::uint64_t exclude_callchain_kernel = 1ULL << 21;
inline constexpr std::uint64_t exclude_callchain_user = 1ULL << 22;
inline constexpr std::uint64_t mmap2 = 1ULL << 23;
inline constexpr std::uint64_t comm_exec = 1ULL << 24;
inline constexpr std::uint64_t use_clockid = 1ULL << 25;
inline constexpr std::uint64_t context_switch = 1ULL << 26;
inline constexpr std::uint64_t write_backward = 1ULL << 27;
inline constexpr std::uint64_t namespaces = 1ULL << 28;
inline constexpr std::uint64_t ksymbol = 1ULL << 29;
inline constexpr std::uint64_t bpf_event = 1ULL << 30;
inline constexpr std::uint64_t aux_output = 1ULL << 31;
inline constexpr std::uint64_t cgroup = 1ULL << 32;
inline constexpr std::uint64_t text_poke = 1ULL << 33;
inline constexpr std::uint64_t build_id = 1ULL << 34;
inline constexpr std::uint64_t inherit_thread = 1ULL << 35;
inline constexpr std::uint64_t remove_on_exec = 1ULL << 36;
inline constexpr std::uint64_t sigtrap = 1ULL << 37;
inline constexpr unsigned known_bits = 38;
inline constexpr std::uint64_t reserved_mask = ~((1ULL << known_bits) - 1);
}  // namespace attr_flag

// attr.aux_action (the u32 after aux_sample_size, since Linux 6.13).
namespace aux_action {
inline constexpr std::uint32_t start_paused = 1U << 0;
inline constexpr std::uint32_t pause = 1U << 1;
inline constexpr std::uint32_t resume = 1U << 2;
inline constexpr std::uint32_t reserved_mask = ~7U;
}  // namespace aux_action

// Sizes of the successive published versions of the struct.
namespace attr_size {
inline constexpr std::uint32_t ver0 = 64;   // first published struct
inline constexpr std::uint32_t ver1 = 72;   // config2
inline constexpr std::uint32_t ver2 = 80;   // branch_sample_type
inline constexpr std::uint32_t ver3 = 96;   // sample_regs_user, sample_stack_user
inline constexpr std::uint32_t ver4 = 104;  // sample_regs_intr
inline constexpr std::uint32_t ver5 = 112;  // aux_watermark
inline constexpr std::uint32_t ver6 = 120;  // aux_sample_size
inline constexpr std::uint32_t ver7 = 128;  // sig_data
inline constexpr std::uint32_t ver8 = 136;  // config3
}  // namespace attr_size

struct PerfEventAttr {
  std::uint32_t type = 0;
  std::uint32_t size = attr_size::ver8;
  std::uint64_t config = 0;
  std::uint64_t sample_period_or_freq = 0;  // sample_freq when attr_flag::freq is set
  std::uint64_t sample_type = 0;
  std::uint64_t read_format = 0;
  std::uint64_t flags = 0;                       // attr_flag bits
  std::uint32_t wakeup_events_or_watermark = 0;  // wakeup_watermark when attr_flag::watermark
  std::uint32_t bp_type = 0;
  std::uint64_t config1 = 0;  // also bp_addr, kprobe_func, uprobe_path
  std::uint64_t config2 = 0;  // also bp_len, kprobe_addr, probe_offset
  std::uint64_t branch_sample_type = 0;
  std::uint64_t sample_regs_user = 0;
  std::uint32_t sample_stack_user = 0;
  std::int32_t clockid = 0;
  std::uint64_t sample_regs_intr = 0;
  std::uint32_t aux_watermark = 0;
  std::uint16_t sample_max_stack = 0;
  std::uint16_t reserved_2 = 0;
  std::uint32_t aux_sample_size = 0;
  std::uint32_t aux_action = 0;  // aux_action bits; was __reserved_3
  std::uint64_t sig_data = 0;
  std::uint64_t config3 = 0;
};

static_assert(sizeof(PerfEventAttr) == attr_size::ver8);
static_assert(offsetof(PerfEventAttr, config) == 8);
static_assert(offsetof(PerfEventAttr, sample_period_or_freq) == 16);
static_assert(offsetof(PerfEventAttr, sample_type) == 24);
static_assert(offsetof(PerfEventAttr, read_format) == 32);
static_assert(offsetof(PerfEventAttr, flags) == 40);
static_assert(offsetof(PerfEventAttr, wakeup_events_or_watermark) == 48);
static_assert(offsetof(PerfEventAttr, bp_type) == 52);
static_assert(offsetof(PerfEventAttr, config1) == 56);
static_assert(offsetof(PerfEventAttr, config2) == attr_size::ver0);
static_assert(offsetof(PerfEventAttr, branch_sample_type) == attr_size::ver1);
static_assert(offsetof(PerfEventAttr, sample_regs_user) == attr_size::ver2);
static_assert(offsetof(PerfEventAttr, sample_stack_user) == 88);
static_assert(offsetof(PerfEventAttr, clockid) == 92);
static_assert(offsetof(PerfEventAttr, sample_regs_intr) == attr_size::ver3);
static_assert(offsetof(PerfEventAttr, aux_watermark) == attr_size::ver4);
static_assert(offsetof(PerfEventAttr, sample_max_stack) == 108);
static_assert(offsetof(PerfEventAttr, aux_sample_size) == attr_size::ver5);
static_assert(offsetof(PerfEventAttr, aux_action) == 116);
static_assert(offsetof(PerfEventAttr, sig_data) == attr_size::ver6);
static_assert(offsetof(PerfEventAttr, config3) == attr_size::ver7);

// Flags for perf_event_open(2)'s last argument.
namespace open_flag {
inline constexpr unsigned long fd_no_group = 1UL << 0;
inline constexpr unsigned long fd_output = 1UL << 1;
inline constexpr unsigned long pid_cgroup = 1UL << 2;
inline constexpr unsigned long fd_cloexec = 1UL << 3;
}  // namespace open_flag

// arm64 PMUv3 (armv8_pmuv3 and the generic hardware types on arm64): config1 bits of
// Documentation/arch/arm64/perf.rst. Other PMUs give config1 other meanings.
namespace arm64_config1 {
inline constexpr std::uint64_t long_counter = 1ULL << 0;  // a 64-bit counter (else 32-bit)
inline constexpr std::uint64_t user_read = 1ULL << 1;     // EL0 may read it with mrs
}  // namespace arm64_config1

}  // namespace perfscope::abi
