// attr.sample_type bits, attr.branch_sample_type bits and the callchain context markers.
#pragma once

#include <cstdint>

namespace perfscope::abi {

namespace sample_format {
inline constexpr std::uint64_t ip = 1ULL << 0;
inline constexpr std::uint64_t tid = 1ULL << 1;
inline constexpr std::uint64_t time = 1ULL << 2;
inline constexpr std::uint64_t addr = 1ULL << 3;
inline constexpr std::uint64_t read = 1ULL << 4;
inline constexpr std::uint64_t callchain = 1ULL << 5;
inline constexpr std::uint64_t id = 1ULL << 6;
inline constexpr std::uint64_t cpu = 1ULL << 7;
inline constexpr std::uint64_t period = 1ULL << 8;
inline constexpr std::uint64_t stream_id = 1ULL << 9;
inline constexpr std::uint64_t raw = 1ULL << 10;
inline constexpr std::uint64_t branch_stack = 1ULL << 11;
inline constexpr std::uint64_t regs_user = 1ULL << 12;
inline constexpr std::uint64_t stack_user = 1ULL << 13;
inline constexpr std::uint64_t weight = 1ULL << 14;
inline constexpr std::uint64_t data_src = 1ULL << 15;
inline constexpr std::uint64_t identifier = 1ULL << 16;
inline constexpr std::uint64_t transaction = 1ULL << 17;
inline constexpr std::uint64_t regs_intr = 1ULL << 18;
inline constexpr std::uint64_t phys_addr = 1ULL << 19;
inline constexpr std::uint64_t aux = 1ULL << 20;
inline constexpr std::uint64_t cgroup = 1ULL << 21;
inline constexpr std::uint64_t data_page_size = 1ULL << 22;
inline constexpr std::uint64_t code_page_size = 1ULL << 23;
inline constexpr std::uint64_t weight_struct = 1ULL << 24;
inline constexpr unsigned known_bits = 25;
inline constexpr std::uint64_t weight_type = weight | weight_struct;
}  // namespace sample_format

namespace branch_sample {
inline constexpr std::uint64_t user = 1ULL << 0;
inline constexpr std::uint64_t kernel = 1ULL << 1;
inline constexpr std::uint64_t hv = 1ULL << 2;
inline constexpr std::uint64_t any = 1ULL << 3;
inline constexpr std::uint64_t any_call = 1ULL << 4;
inline constexpr std::uint64_t any_return = 1ULL << 5;
inline constexpr std::uint64_t ind_call = 1ULL << 6;
inline constexpr std::uint64_t abort_tx = 1ULL << 7;
inline constexpr std::uint64_t in_tx = 1ULL << 8;
inline constexpr std::uint64_t no_tx = 1ULL << 9;
inline constexpr std::uint64_t cond = 1ULL << 10;
inline constexpr std::uint64_t call_stack = 1ULL << 11;
inline constexpr std::uint64_t ind_jump = 1ULL << 12;
inline constexpr std::uint64_t call = 1ULL << 13;
inline constexpr std::uint64_t no_flags = 1ULL << 14;
inline constexpr std::uint64_t no_cycles = 1ULL << 15;
inline constexpr std::uint64_t type_save = 1ULL << 16;
inline constexpr std::uint64_t hw_index = 1ULL << 17;
inline constexpr std::uint64_t priv_save = 1ULL << 18;
inline constexpr std::uint64_t counters = 1ULL << 19;
inline constexpr unsigned known_bits = 20;
inline constexpr std::uint64_t plm_all = user | kernel | hv;
}  // namespace branch_sample

// Markers inside a PERF_SAMPLE_CALLCHAIN ip array that say which context the following ips are in.
namespace callchain_context {
inline constexpr std::uint64_t hv = static_cast<std::uint64_t>(-32);
inline constexpr std::uint64_t kernel = static_cast<std::uint64_t>(-128);
inline constexpr std::uint64_t user = static_cast<std::uint64_t>(-512);
inline constexpr std::uint64_t guest = static_cast<std::uint64_t>(-2048);
inline constexpr std::uint64_t guest_kernel = static_cast<std::uint64_t>(-2176);
inline constexpr std::uint64_t guest_user = static_cast<std::uint64_t>(-2560);
inline constexpr std::uint64_t max = static_cast<std::uint64_t>(-4095);
constexpr bool is_marker(std::uint64_t ip) { return ip >= max; }
}  // namespace callchain_context

// PERF_SAMPLE_REGS_USER / REGS_INTR ABI word.
enum class SampleRegsAbi : std::uint64_t { none = 0, abi32 = 1, abi64 = 2 };

// PERF_SAMPLE_TRANSACTION bits.
namespace transaction {
inline constexpr std::uint64_t elision = 1ULL << 0;
inline constexpr std::uint64_t transaction = 1ULL << 1;
inline constexpr std::uint64_t sync = 1ULL << 2;
inline constexpr std::uint64_t async = 1ULL << 3;
inline constexpr std::uint64_t retry = 1ULL << 4;
inline constexpr std::uint64_t conflict = 1ULL << 5;
inline constexpr std::uint64_t capacity_write = 1ULL << 6;
inline constexpr std::uint64_t capacity_read = 1ULL << 7;
inline constexpr unsigned abort_code_shift = 32;
inline constexpr std::uint64_t abort_code_mask = 0xffffffffULL << abort_code_shift;
}  // namespace transaction

}  // namespace perfscope::abi
