// The first page of a perf mmap: the counter-read seqlock area and the ring-buffer control words.
#pragma once

#include <cstddef>
#include <cstdint>

namespace perfscope::abi {

namespace mmap_capability {
inline constexpr std::uint64_t bit0 = 1ULL << 0;  // cap_usr_time and cap_usr_rdpmc, both, pre-3.12
inline constexpr std::uint64_t bit0_is_deprecated = 1ULL << 1;
inline constexpr std::uint64_t user_rdpmc = 1ULL << 2;
inline constexpr std::uint64_t user_time = 1ULL << 3;
inline constexpr std::uint64_t user_time_zero = 1ULL << 4;
inline constexpr std::uint64_t user_time_short = 1ULL << 5;
}  // namespace mmap_capability

struct PerfEventMmapPage {
  std::uint32_t version;
  std::uint32_t compat_version;
  std::uint32_t lock;   // seqlock for the counter-read fields below
  std::uint32_t index;  // hardware counter index + 1, 0 when not readable from user space
  std::int64_t offset;
  std::uint64_t time_enabled;
  std::uint64_t time_running;
  std::uint64_t capabilities;  // mmap_capability bits
  std::uint16_t pmc_width;
  std::uint16_t time_shift;
  std::uint32_t time_mult;
  std::uint64_t time_offset;
  std::uint64_t time_zero;
  std::uint32_t size;
  std::uint32_t reserved_1;
  std::uint64_t time_cycles;
  std::uint64_t time_mask;
  std::uint8_t reserved[116 * 8];
  std::uint64_t data_head;
  std::uint64_t data_tail;
  std::uint64_t data_offset;
  std::uint64_t data_size;
  std::uint64_t aux_head;
  std::uint64_t aux_tail;
  std::uint64_t aux_offset;
  std::uint64_t aux_size;
};

static_assert(offsetof(PerfEventMmapPage, capabilities) == 40);
static_assert(offsetof(PerfEventMmapPage, pmc_width) == 48);
static_assert(offsetof(PerfEventMmapPage, time_zero) == 64);
static_assert(offsetof(PerfEventMmapPage, time_cycles) == 80);
static_assert(offsetof(PerfEventMmapPage, data_head) == 1024);
static_assert(offsetof(PerfEventMmapPage, aux_size) == 1080);

}  // namespace perfscope::abi
