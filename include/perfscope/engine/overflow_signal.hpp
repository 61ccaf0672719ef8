// Overflow notification by signal, the way to act on a sampling event inside the sampled thread
// itself (a self-profiler, a watchpoint that stops the program) without reading a ring buffer.
//
// Two mechanisms:
//  * O_ASYNC routing (route_overflows): every overflow of a sampling event sends `signal` to one
//    thread, with si_code POLL_IN (POLL_HUP for the overflow that exhausts a refresh count) and
//    si_fd the event's fd. Works for any event and any target thread the caller may signal.
//    A real-time signal (SIGRTMIN + n) queues one signal per overflow; a standard one
//    (SIGIO) may merge several.
//  * sigtrap (with_sigtrap): the kernel sends SIGTRAP to the thread in which the event overflowed,
//    synchronously on its return to user space, with si_code TRAP_PERF, si_perf_data =
//    attr.sig_data, si_perf_type = attr.type and si_addr = the sample address (the watched address
//    for a breakpoint; 0 for events without one). The kernel insists on remove_on_exec with it;
//    on another process's threads it also wants CAP_KILL or the right to ptrace-attach to them.
//
// Re-arming: open the event disabled and call arm_for_overflows(event, n) (PERF_EVENT_IOC_REFRESH):
// it enables the event for n overflows, after which the kernel disables it again; call it again
// to re-arm. The kernel refuses it for inherited events and for counting (non-sampling) events.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>

#include "perfscope/core/event.hpp"
#include "perfscope/core/event_attr.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

// Sends `signal` to thread `thread` (0: the calling thread) on every overflow of `event`.
// Throws perfscope::Error saying what to change when the kernel refuses.
PERFSCOPE_EXPORT void route_overflows(const Event& event, int signal, pid_t thread = 0);

// Enables `event` for `overflows` more overflows (PERF_EVENT_IOC_REFRESH). Throws
// perfscope::Error with the reason when the kernel refuses.
PERFSCOPE_EXPORT void arm_for_overflows(Event& event, int overflows);

// `attr` with sigtrap, remove_on_exec and sig_data set: each overflow raises SIGTRAP in the
// thread that caused it, carrying `sig_data` (e.g. a pointer to the handler's context).
PERFSCOPE_EXPORT EventAttr with_sigtrap(EventAttr attr, std::uint64_t sig_data) noexcept;

// What a SIGTRAP from a sigtrap event carries. Decoded from the raw siginfo, since C libraries
// do not name these fields yet.
struct PERFSCOPE_EXPORT PerfTrap {
  std::uint64_t data = 0;      // attr.sig_data
  std::uintptr_t address = 0;  // the sample's address (watched address for breakpoints), or 0
  std::uint32_t type = 0;      // attr.type (abi::EventType), as the caller opened it
  std::uint32_t flags = 0;     // abi::trap_perf_flag_async ...
  bool asynchronous() const noexcept;  // SIGTRAP was blocked: delivered after the fact
};
// True and `out` filled when `info` is a SIGTRAP with si_code TRAP_PERF. Async-signal-safe.
PERFSCOPE_EXPORT bool decode_perf_trap(const siginfo_t& info, PerfTrap& out) noexcept;

// What an O_ASYNC overflow signal carries.
struct OverflowNotice {
  int fd = -1;        // the event's fd (si_fd)
  bool last = false;  // POLL_HUP: the refresh count ran out and the event disabled itself
};
// For the handler of the routed signal: true and `out` filled when `info` is a perf fd's O_ASYNC
// notification (si_code POLL_IN or POLL_HUP). Async-signal-safe.
PERFSCOPE_EXPORT bool decode_overflow_notice(const siginfo_t& info, OverflowNotice& out) noexcept;

// The user-mode instruction pointer a signal interrupted, from the handler's third argument;
// 0 on architectures this does not know (x86-64, i386, arm64 and riscv are known).
// Async-signal-safe.
PERFSCOPE_EXPORT std::uintptr_t interrupted_instruction_pointer(const void* ucontext) noexcept;

}  // namespace perfscope
