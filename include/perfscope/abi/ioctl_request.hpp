// PERF_EVENT_IOC_* request numbers, computed with the generic _IOC encoding that x86-64 and arm64
// share, so that no kernel header is needed.
#pragma once

#include <cstdint>

namespace perfscope::abi {

namespace ioctl_encoding {
inline constexpr unsigned long none = 0;
inline constexpr unsigned long write = 1;
inline constexpr unsigned long read = 2;
constexpr unsigned long encode(unsigned long direction, unsigned long number, unsigned long size) {
  return (direction << 30) | (size << 16) | (static_cast<unsigned long>('$') << 8) | number;
}
}  // namespace ioctl_encoding

namespace ioctl_request {
using ioctl_encoding::encode;
inline constexpr unsigned long enable = encode(ioctl_encoding::none, 0, 0);
inline constexpr unsigned long disable = encode(ioctl_encoding::none, 1, 0);
inline constexpr unsigned long refresh = encode(ioctl_encoding::none, 2, 0);
inline constexpr unsigned long reset = encode(ioctl_encoding::none, 3, 0);
inline constexpr unsigned long period = encode(ioctl_encoding::write, 4, sizeof(std::uint64_t));
inline constexpr unsigned long set_output = encode(ioctl_encoding::none, 5, 0);
inline constexpr unsigned long set_filter = encode(ioctl_encoding::write, 6, sizeof(char*));
inline constexpr unsigned long id = encode(ioctl_encoding::read, 7, sizeof(std::uint64_t*));
inline constexpr unsigned long set_bpf = encode(ioctl_encoding::write, 8, sizeof(std::uint32_t));
inline constexpr unsigned long pause_output =
    encode(ioctl_encoding::write, 9, sizeof(std::uint32_t));
inline constexpr unsigned long query_bpf =
    encode(ioctl_encoding::read | ioctl_encoding::write, 10, sizeof(void*));
inline constexpr unsigned long modify_attributes = encode(ioctl_encoding::write, 11, sizeof(void*));
}  // namespace ioctl_request

// Argument of ENABLE, DISABLE, RESET and REFRESH: act on every event of the leader's group.
inline constexpr unsigned long ioc_flag_group = 1;

// PERF_EVENT_IOC_QUERY_BPF argument header; prog ids follow.
struct PerfEventQueryBpf {
  std::uint32_t ids_len;
  std::uint32_t prog_cnt;
  // std::uint32_t ids[] follows
};

static_assert(ioctl_request::enable == 0x2400);
static_assert(ioctl_request::period == 0x40082404);
static_assert(ioctl_request::id == 0x80082407);
static_assert(ioctl_request::query_bpf == 0xc008240a);

}  // namespace perfscope::abi
