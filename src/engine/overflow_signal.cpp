#include "perfscope/engine/overflow_signal.hpp"

#include <fmt/format.h>
#include <ucontext.h>

#include <cerrno>
#include <cstring>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/siginfo_perf.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/event_poll.hpp"

namespace perfscope {

namespace flag = abi::attr_flag;

void route_overflows(const Event& event, int signal, pid_t thread) {
  if (!event.valid()) {
    throw Error(EBADF, "cannot route overflow signals of an event that is not open",
                "open the event first (Event::open) and keep it open while signals are wanted.");
  }
  pid_t owner = thread == 0 ? sys::current_thread_id() : thread;
  int r = sys::route_overflow_signal(event.fd(), signal, owner);
  if (r == 0) return;
  int errnum = -r;
  std::string summary = fmt::format("cannot send signal {} to thread {} on overflows: {}", signal,
                                    owner, std::strerror(errnum));
  std::string diagnosis;
  switch (errnum) {
    case EINVAL:
      diagnosis = fmt::format(
          "F_SETSIG takes a signal number from 1 to {}; a real-time signal (SIGRTMIN + n) queues "
          "one signal per overflow.",
          SIGRTMAX);
      break;
    case ESRCH:
      diagnosis = fmt::format(
          "thread {} does not exist (it may have exited); give a live thread id (gettid()).",
          owner);
      break;
    case EPERM:
      diagnosis = "this process may not signal that thread; route signals to one of its own.";
      break;
    default: diagnosis = "fcntl(F_SETOWN_EX/F_SETSIG/F_SETFL O_ASYNC) failed on the event's fd.";
  }
  throw Error(errnum, std::move(summary), std::move(diagnosis), event.attr());
}

void arm_for_overflows(Event& event, int overflows) {
  int errnum = event.refresh(overflows);
  if (errnum == 0) return;
  std::string diagnosis;
  if (errnum == EINVAL) {
    if (event.attr().has(flag::inherit)) {
      diagnosis = "the kernel does not refresh inherited events; open it without inherit.";
    } else if (overflows <= 0) {
      diagnosis = "give a positive number of overflows.";
    } else {
      diagnosis =
          "only sampling events can be refreshed: set sample_period (or sample_freq) in the attr.";
    }
  } else if (errnum == EBADF) {
    diagnosis = "the event is not open.";
  }
  throw Error(
      errnum,
      fmt::format("PERF_EVENT_IOC_REFRESH({}) failed: {}", overflows, std::strerror(errnum)),
      std::move(diagnosis), event.attr());
}

EventAttr with_sigtrap(EventAttr attr, std::uint64_t sig_data) noexcept {
  attr.set_flag(flag::sigtrap).set_flag(flag::remove_on_exec).set_sig_data(sig_data);
  return attr;
}

bool PerfTrap::asynchronous() const noexcept { return (flags & abi::trap_perf_flag_async) != 0; }

bool decode_perf_trap(const siginfo_t& info, PerfTrap& out) noexcept {
  if (info.si_signo != SIGTRAP || info.si_code != abi::trap_perf) return false;
  namespace offset = abi::siginfo_perf_offset;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&info);
  unsigned long data = 0;
  std::memcpy(&data, bytes + offset::data, sizeof data);
  std::memcpy(&out.type, bytes + offset::type, sizeof out.type);
  std::memcpy(&out.flags, bytes + offset::flags, sizeof out.flags);
  out.data = data;
  out.address = reinterpret_cast<std::uintptr_t>(info.si_addr);
  return true;
}

bool decode_overflow_notice(const siginfo_t& info, OverflowNotice& out) noexcept {
  if (info.si_code != POLL_IN && info.si_code != POLL_HUP) return false;
  out.fd = info.si_fd;
  out.last = info.si_code == POLL_HUP;
  return true;
}

std::uintptr_t interrupted_instruction_pointer(const void* ucontext) noexcept {
  if (ucontext == nullptr) return 0;
  const auto* context = static_cast<const ucontext_t*>(ucontext);
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(context->uc_mcontext.gregs[REG_RIP]);
#elif defined(__i386__)
  return static_cast<std::uintptr_t>(context->uc_mcontext.gregs[REG_EIP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(context->uc_mcontext.pc);
#elif defined(__riscv)
  return static_cast<std::uintptr_t>(context->uc_mcontext.__gregs[REG_PC]);
#else
  (void)context;
  return 0;
#endif
}

}  // namespace perfscope
