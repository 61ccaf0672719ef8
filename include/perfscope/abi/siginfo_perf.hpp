// The TRAP_PERF part of the kernel's siginfo (include/uapi/asm-generic/siginfo.h), which glibc
// (2.36 and older) does not name. In the _sigfault member of the _sifields union the kernel puts
//   void *_addr;
//   union { ...; struct { unsigned long _data; __u32 _type; __u32 _flags; } _perf; };
// so si_perf_data follows si_addr directly (unsigned long is pointer-aligned on every Linux ABI),
// then si_perf_type and si_perf_flags.
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>

namespace perfscope::abi {

// si_code of a SIGTRAP sent by a perf event with attr.sigtrap.
inline constexpr int trap_perf = 6;
// si_perf_flags: the signal was blocked when the event fired, so it arrived late.
inline constexpr std::uint32_t trap_perf_flag_async = 1u << 0;

namespace siginfo_perf_offset {
// _sifields starts after si_signo, si_errno, si_code, padded to pointer alignment on 64-bit.
inline constexpr std::size_t addr = sizeof(void*) == 8 ? 16 : 12;
inline constexpr std::size_t data = addr + sizeof(void*);
inline constexpr std::size_t type = data + sizeof(unsigned long);
inline constexpr std::size_t flags = type + sizeof(std::uint32_t);
inline constexpr std::size_t end = flags + sizeof(std::uint32_t);
}  // namespace siginfo_perf_offset

static_assert(offsetof(siginfo_t, si_addr) == siginfo_perf_offset::addr,
              "glibc's si_addr is not where the kernel's _sigfault._addr is");
static_assert(alignof(unsigned long) == alignof(void*));
static_assert(siginfo_perf_offset::end <= sizeof(siginfo_t));

}  // namespace perfscope::abi
