#include "perfscope/core/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace flag = abi::attr_flag;

Error::Error(int errnum, std::string summary, std::string diagnosis, std::optional<EventAttr> attr)
    : std::system_error(errnum, std::generic_category()),
      message_(diagnosis.empty() ? summary : summary + "\n" + diagnosis),
      summary_(std::move(summary)),
      diagnosis_(std::move(diagnosis)),
      attr_(std::move(attr)) {}

std::string Error::detailed() const {
  std::string text = what();
  // Appended piecewise: "\n" + dump() makes GCC 12's -O3 -Wrestrict see an overlapping copy in
  // std::string's operator+ (a false positive that stops a -Werror Release build).
  if (attr_) text.append("\n").append(attr_->dump());
  return text;
}

std::string_view errno_name(int errnum) noexcept {
  // The C library's table has every errno of the user ABI (ECHILD, ETIMEDOUT, ...), one name
  // each (EAGAIN, not EWOULDBLOCK, as perf trace prints it).
  if (errnum <= 0) return "";
  if (const char* name = ::strerrorname_np(errnum)) return name;
  // What the kernel's syscall exit tracepoint can show beyond those: its internal restart codes
  // (include/linux/errno.h), which a signal turns into EINTR or a restart before user space sees
  // them.
  switch (errnum) {
    case 512: return "ERESTARTSYS";
    case 513: return "ERESTARTNOINTR";
    case 514: return "ERESTARTNOHAND";
    case 515: return "ENOIOCTLCMD";
    case 516: return "ERESTART_RESTARTBLOCK";
    case 517: return "EPROBE_DEFER";
    case 518: return "EOPENSTALE";
    case 519: return "ENOPARAM";
    case 521: return "EBADHANDLE";
    case 522: return "ENOTSYNC";
    case 523: return "EBADCOOKIE";
    case 524: return "ENOTSUPP";
    case 525: return "ETOOSMALL";
    case 526: return "ESERVERFAULT";
    case 527: return "EBADTYPE";
    case 528: return "EJUKEBOX";
    case 529: return "EIOCBQUEUED";
    case 530: return "ERECALLCONFLICT";
    case 531: return "ENOGRACE";
    default: return "";
  }
}

std::string errno_label(int errnum) {
  std::string_view name = errno_name(errnum);
  return name.empty() ? fmt::format("errno {}", errnum) : std::string(name);
}

namespace {

bool is_type(const EventAttr& attr, abi::EventType type) {
  return attr.type() == static_cast<std::uint32_t>(type);
}

bool counts_kernel(const EventAttr& attr) { return !attr.has(flag::exclude_kernel); }

bool has_capability(unsigned bit) { return (sys::effective_capabilities() >> bit) & 1; }

std::string paranoid_explanation(const EventAttr& attr, const OpenContext& context) {
  auto paranoid = sys::read_sysctl("perf_event_paranoid");
  std::string level = paranoid ? std::to_string(*paranoid) : std::string("unknown");
  bool privileged = has_capability(sys::cap_perfmon) || has_capability(sys::cap_sys_admin);
  std::string text = fmt::format(
      "kernel.perf_event_paranoid is {} and this process has {}CAP_PERFMON/CAP_SYS_ADMIN.", level,
      privileged ? "" : "neither ");
  if (privileged) {
    text +=
        " The capability is present, so a security module (SELinux, Yama, lockdown) or "
        "ptrace access to the target refused it.";
    return text;
  }
  if (context.pid == -1 || (context.flags & abi::open_flag::pid_cgroup)) {
    text +=
        " Counting every process on a CPU (system-wide or cgroup) needs paranoid <= 0 or "
        "CAP_PERFMON. Fix: run as root, grant CAP_PERFMON (setcap cap_perfmon+ep), or "
        "`sysctl kernel.perf_event_paranoid=0`; or measure only your own processes.";
  } else if (counts_kernel(attr) && paranoid && *paranoid >= 2) {
    text +=
        " At level 2 and above, unprivileged users may only count user space. Fix: exclude "
        "the kernel (the :u modifier, or exclude_kernel=1), or lower the level with "
        "`sysctl kernel.perf_event_paranoid=1`, or grant CAP_PERFMON.";
  } else if (is_type(attr, abi::EventType::tracepoint) && paranoid && *paranoid >= 0) {
    text +=
        " Raw tracepoint data needs paranoid <= -1 or CAP_PERFMON. Fix: "
        "`sysctl kernel.perf_event_paranoid=-1`, or run as root.";
  } else if (context.pid > 0) {
    text += fmt::format(
        " Attaching to pid {} needs ptrace access to it: it must be your own process (and "
        "kernel.yama.ptrace_scope may forbid even that). Fix: run as the owner or as root.",
        context.pid);
  } else if (paranoid && *paranoid > 2) {
    text +=
        " Levels above 2 (a distribution patch) forbid perf_event_open to all unprivileged "
        "users. Fix: `sysctl kernel.perf_event_paranoid=2`, or grant CAP_PERFMON.";
  }
  return text;
}

std::string einval_explanation(const EventAttr& attr, const OpenContext& context) {
  const auto& a = attr.raw();
  std::vector<std::string> reasons = attr.validate();
  if (context.pid == -1 && context.cpu == -1) {
    reasons.insert(reasons.begin(),
                   "pid -1 with cpu -1 (every process on every CPU) is not "
                   "allowed: open one event per CPU with cpu >= 0, or name a "
                   "task");
  }
  if ((context.flags & abi::open_flag::pid_cgroup) && context.cpu < 0) {
    reasons.insert(reasons.begin(),
                   "cgroup monitoring (PERF_FLAG_PID_CGROUP) needs cpu >= 0: "
                   "open one event per CPU");
  }
  if (context.group_fd >= 0 && (attr.has(flag::pinned) || attr.has(flag::exclusive))) {
    reasons.push_back("pinned and exclusive are only allowed on a group leader");
  }
  if (context.cpu >= 0) {
    long cpus = ::sysconf(_SC_NPROCESSORS_CONF);
    if (cpus > 0 && context.cpu >= cpus) {
      reasons.push_back(
          fmt::format("cpu {} does not exist (this machine has {} CPUs)", context.cpu, cpus));
    }
  }
  if (attr.has(flag::inherit) && (a.sample_type & abi::sample_format::read) &&
      !attr.has(flag::inherit_thread)) {
    reasons.push_back(
        "inherit together with PERF_SAMPLE_READ is refused by kernels before "
        "6.10; drop one, or use inherit_thread");
  }
  if (a.read_format & abi::read_format::lost) {
    reasons.push_back("PERF_FORMAT_LOST needs Linux 6.0 or newer");
  }
  if (attr.precise_ip() > 0) {
    reasons.push_back(
        fmt::format("precise_ip {} may be more than this PMU supports (see "
                    "/sys/bus/event_source/devices/cpu/caps/max_precise)",
                    attr.precise_ip()));
  }
  if (context.group_size > 1) {
    reasons.push_back(fmt::format(
        "the group has {} events; a group must fit on the PMU at once, so it may not hold more "
        "hardware events than there are counters (split it, or drop the braces)",
        context.group_size));
  } else if (context.group_fd >= 0) {
    reasons.push_back(
        "the event joins a group (group_fd); a group must fit on the PMU at once, so it may not "
        "hold more hardware events than there are counters (split it, or drop the braces)");
  }
  if (a.sample_period_or_freq == 0 && attr.has(flag::freq)) {
    reasons.push_back("freq is set with a frequency of 0");
  }
  if (reasons.empty()) {
    reasons.push_back(
        "the kernel gave no detail: the config may select an event or unit mask this PMU "
        "does not have, or set reserved bits. Run with -v to see the attr, and check the "
        "PMU's format/ and events/ in /sys/bus/event_source/devices");
  }
  std::string text = "the kernel rejected the attr as invalid:";
  for (const auto& reason : reasons) text += "\n  - " + reason;
  return text;
}

}  // namespace

std::string diagnose_open_failure(int errnum, const EventAttr& attr, const OpenContext& context) {
  const auto& a = attr.raw();
  switch (errnum) {
    case E2BIG: {
      if (context.kernel_attr_size != 0) {
        auto fields = attr.fields_set_beyond(context.kernel_attr_size);
        std::string names;
        for (auto name : fields) names += (names.empty() ? "" : ", ") + std::string(name);
        return fmt::format(
            "this kernel knows a {}-byte perf_event_attr but ours is {} bytes and sets {} beyond "
            "it. Fix: leave {} at zero, or run a newer kernel.",
            context.kernel_attr_size, a.size, names.empty() ? "bytes" : names,
            names.empty() ? "them" : names);
      }
      return fmt::format("attr size {} was refused: it must be at least {} and at most a page.",
                         a.size, abi::attr_size::ver0);
    }
    case EACCES:
    case EPERM: {
      std::string text = paranoid_explanation(attr, context);
      if (errnum == EPERM) {
        if (is_type(attr, abi::EventType::breakpoint) && (a.config1 >> 47) != 0) {
          text = "a breakpoint on a kernel address needs CAP_PERFMON or root. " + text;
        } else if (attr.has(flag::exclude_hv) || attr.has(flag::exclude_idle) ||
                   attr.has(flag::exclude_user) || attr.has(flag::exclude_kernel)) {
          text +=
              " On some architectures EPERM also means this PMU cannot apply the exclude_* "
              "bits that are set; try without the :u/:k/:h modifiers.";
        }
        if (attr.has(flag::sigtrap)) {
          text += " sigtrap events may only be attached to the calling process's own threads.";
        }
      }
      return text;
    }
    case ENOENT:
      if (is_type(attr, abi::EventType::hardware) || is_type(attr, abi::EventType::hw_cache) ||
          is_type(attr, abi::EventType::raw)) {
        return "no hardware PMU provides this event (a virtual machine without PMU "
               "passthrough, or a generic event this CPU does not map). Use software events "
               "such as task-clock or cpu-clock instead, or run on bare metal.";
      }
      if (is_type(attr, abi::EventType::tracepoint)) {
        return fmt::format(
            "no tracepoint has id {}: ids come from tracefs "
            "(events/<subsystem>/<name>/id) and change across boots.",
            a.config);
      }
      if (attr.type() >= abi::event_type_count) {
        return fmt::format(
            "no PMU has type {}: dynamic PMU types are listed in "
            "/sys/bus/event_source/devices/*/type.",
            attr.type());
      }
      return "the event type or config is not known to this kernel.";
    case ENODEV: return "the event needs a feature this CPU (or PMU) does not have.";
    case EOPNOTSUPP:
      if (a.branch_sample_type != 0) {
        return "branch stack sampling is not available (no LBR/BRBE, or a software event).";
      }
      if (attr.precise_ip() > 0) {
        return fmt::format(
            "precise_ip {} (low-skid sampling) is not supported by this PMU; "
            "drop the :p modifiers.",
            attr.precise_ip());
      }
      if (a.sample_period_or_freq != 0) {
        return "this PMU cannot sample (it has no overflow interrupt); count instead of "
               "sampling, or use a software event such as cpu-clock.";
      }
      return "the event requires a hardware feature that is not present.";
    case EBUSY:
      return "another event has exclusive use of the PMU (exclusive=1, or a tool like an "
             "active `perf record` with an exclusive event). Wait for it, or do without.";
    case EBADF:
      if (context.flags & abi::open_flag::pid_cgroup) {
        return "the cgroup file descriptor passed as pid is not an open cgroup directory.";
      }
      return "group_fd is not a valid perf event file descriptor.";
    case EFAULT: return "the attr pointer is not readable memory.";
    case EINTR:
      return "the uprobe is already in use by ftrace; perf and ftrace cannot share it. Disable "
             "the ftrace probe first.";
    case EMFILE:
    case ENFILE: {
      auto limit = sys::open_files_limit();
      if (errnum == ENFILE) {
        return "the system-wide limit of open files (fs.file-max) is reached. Fix: close other "
               "programs' files, raise `sysctl fs.file-max`, or count fewer events/threads.";
      }
      // At the hard limit only root can go further: `ulimit -n` would not help.
      return fmt::format(
          "out of file descriptors: every event on every CPU or thread takes one, and the "
          "limit (RLIMIT_NOFILE) is {} (hard {}). Fix: {}, or count fewer events/threads.",
          limit.soft, limit.hard,
          limit.soft < limit.hard
              ? fmt::format("`ulimit -n {}`", limit.hard)
              : std::string("raise the hard limit (as root: `ulimit -Hn 65536` in the shell "
                            "that starts perfscope, LimitNOFILE= in a systemd unit, or "
                            "/etc/security/limits.conf)"));
    }
    case ENOSPC:
      if (is_type(attr, abi::EventType::breakpoint)) {
        return "all hardware breakpoint slots are in use (x86 has 4, arm64 usually 4-16, "
               "shared with debuggers). Close other breakpoint events or watchpoints.";
      }
      return "not enough PMU resources for the event.";
    case ENOSYS: return "PERF_SAMPLE_STACK_USER is not supported on this architecture.";
    case EOVERFLOW: {
      auto max_stack = sys::read_sysctl("perf_event_max_stack");
      return fmt::format(
          "sample_max_stack {} is above kernel.perf_event_max_stack ({}). Lower "
          "it, or raise the sysctl.",
          a.sample_max_stack, max_stack ? std::to_string(*max_stack) : "unknown");
    }
    case ESRCH:
      return fmt::format("no process or thread {} exists (it may have exited).", context.pid);
    case EINVAL: return einval_explanation(attr, context);
    default: return "";
  }
}

bool open_failure_means_unsupported(int errnum, const EventAttr& attr) noexcept {
  switch (errnum) {
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
    case ENXIO:
    case ENOSYS: return true;
    case EINVAL: {
      auto type = static_cast<abi::EventType>(attr.type());
      return type == abi::EventType::hardware || type == abi::EventType::hw_cache ||
             type == abi::EventType::raw || attr.type() >= abi::event_type_count;
    }
    default: return false;
  }
}

bool user_space_only_fallback(int errnum, const EventAttr& attr, const OpenContext& context) {
  if (errnum != EACCES && errnum != EPERM) return false;
  if (!counts_kernel(attr) || context.pid == -1 || (context.flags & abi::open_flag::pid_cgroup)) {
    return false;  // CPU-wide counting needs paranoid <= 0: excluding the kernel does not help
  }
  auto paranoid = sys::read_sysctl("perf_event_paranoid");
  if (!paranoid || *paranoid < 2) return false;
  return !has_capability(sys::cap_perfmon) && !has_capability(sys::cap_sys_admin);
}

std::string user_space_only_notice() {
  auto paranoid = sys::read_sysctl("perf_event_paranoid");
  return fmt::format(
      "kernel.perf_event_paranoid is {} and perfscope runs unprivileged: counting user space "
      "only (exclude_kernel), as perf does. To include the kernel, run as root, grant "
      "CAP_PERFMON, or `sysctl kernel.perf_event_paranoid=1`.",
      paranoid ? std::to_string(*paranoid) : std::string("2 or more"));
}

std::string user_space_only_name(std::string_view name) {
  bool has_modifiers =
      name.find('/') != std::string_view::npos || name.find(':') != std::string_view::npos;
  return fmt::format("{}{}u", name, has_modifiers ? "" : ":");
}

void throw_open_error(int errnum, const EventAttr& attr, const OpenContext& context) {
  std::string what = context.event_name.empty()
                         ? fmt::format("type {} config {:#x}", attr.type(), attr.config())
                         : context.event_name;
  std::string summary =
      fmt::format("cannot open event '{}' (pid {}, cpu {}): {} ({})", what, context.pid,
                  context.cpu, std::strerror(errnum), errno_name(errnum));
  throw Error(errnum, std::move(summary), diagnose_open_failure(errnum, attr, context), attr);
}

}  // namespace perfscope
