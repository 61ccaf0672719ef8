#include "perfscope/engine/syscall_tracing_check.hpp"

#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_attr.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/reading.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

constexpr std::string_view permission_fix =
    "run as root, or grant CAP_PERFMON (sudo setcap cap_perfmon+ep $(command -v perfscope)), or "
    "sudo sysctl kernel.perf_event_paranoid=1";

std::size_t count_syscall_formats(const std::string& tracefs) {
  std::error_code error;
  std::size_t count = 0;
  for (std::filesystem::directory_iterator it(tracefs + "/events/syscalls", error), end;
       !error && it != end; it.increment(error)) {
    if (it->path().filename().string().starts_with("sys_enter_")) ++count;
  }
  return count;
}

}  // namespace

SyscallTracingSupport probe_syscall_tracing() {
  SyscallTracingSupport support;
  auto root = sys::tracefs_root();
  if (!root) {
    if (auto mounted = sys::tracefs_mount_point()) {
      support.error = EACCES;
      support.problem = fmt::format("tracefs at {} is not readable by this user", *mounted);
      support.fix = fmt::format(
          "{}; tracefs is root's by default (a group may read it: sudo chgrp -R tracing {} && "
          "sudo chmod -R g+rX {})",
          permission_fix, *mounted, *mounted);
      return support;
    }
    support.error = ENOENT;
    support.problem = "tracefs is not mounted";
    support.fix = "sudo mount -t tracefs nodev /sys/kernel/tracing";
    return support;
  }
  support.tracefs = *root;
  long long enter = tracepoint_id("raw_syscalls", "sys_enter");
  long long exit = tracepoint_id("raw_syscalls", "sys_exit");
  if (enter < 0 || exit < 0) {
    int errnum = static_cast<int>(-(enter < 0 ? enter : exit));
    support.error = errnum;
    if (errnum == ENOENT) {
      support.problem = fmt::format(
          "{}/events/raw_syscalls has no sys_enter/sys_exit: this kernel was built without "
          "CONFIG_FTRACE_SYSCALLS",
          *root);
      support.fix = "use a kernel built with CONFIG_FTRACE_SYSCALLS=y (most distributions' are)";
    } else {
      support.problem = fmt::format("{}/events/raw_syscalls/sys_enter/id is not readable ({})",
                                    *root, errno_name(errnum));
      support.fix = std::string(permission_fix) + "; tracefs is root's by default";
    }
    return support;
  }
  support.enter_id = static_cast<std::uint64_t>(enter);
  support.exit_id = static_cast<std::uint64_t>(exit);
  support.syscall_formats = count_syscall_formats(*root);

  namespace sf = abi::sample_format;
  auto attr = EventAttr::tracepoint(support.enter_id)
                  .set_sample_period(1)
                  .set_sample_type(sf::tid | sf::time | sf::raw)
                  .set_read_format(abi::read_format::total_time_enabled);
  int errnum = 0;
  Event event = Event::try_open(attr, 0, -1, nullptr, 0, errnum);
  if (!event.valid()) {
    support.error = errnum;
    support.problem = fmt::format("raw_syscalls:sys_enter does not open for this user ({}: {})",
                                  errno_name(errnum), std::strerror(errnum));
    support.fix = errnum == EACCES || errnum == EPERM
                      ? std::string(permission_fix)
                      : "run `perfscope stat -v -e raw_syscalls:sys_enter -- true` to see why";
    return support;
  }
  // Three calls the tracepoint must see: it counts this thread's system calls.
  for (int i = 0; i < 3; ++i) ::syscall(SYS_getpid);
  Reading reading;
  if (!event.read(reading) || reading.value < 3) {
    support.error = ENODATA;
    support.problem = "raw_syscalls:sys_enter opens but does not count this thread's calls";
    support.fix = "check that tracing is not disabled (cat /sys/kernel/tracing/tracing_on)";
    return support;
  }
  support.usable = true;
  return support;
}

MachineCheck syscall_tracing_check() {
  SyscallTracingSupport support = probe_syscall_tracing();
  MachineCheck check;
  check.id = "syscall_tracing";
  check.title = "system call tracing (trace)";
  if (!support.usable) {
    check.status = CheckStatus::fail;
    check.value = support.problem;
    check.explanation =
        "perfscope trace samples the raw_syscalls:sys_enter/sys_exit tracepoints with their "
        "payload (number, arguments, return value).";
    check.fix = support.fix;
    return check;
  }
  check.status = support.syscall_formats > 0 ? CheckStatus::ok : CheckStatus::warn;
  check.value = fmt::format(
      "raw_syscalls:sys_enter/sys_exit sample here; {} system calls have argument formats in "
      "{}/events/syscalls",
      support.syscall_formats, support.tracefs);
  check.explanation =
      support.syscall_formats > 0
          ? "perfscope trace works: arguments are named from the formats; the kernel records "
            "pointers, not the strings they point to (paths print as addresses)."
          : "perfscope trace works, but without the syscalls/ formats arguments print as six "
            "unnamed words.";
  return check;
}

}  // namespace perfscope
