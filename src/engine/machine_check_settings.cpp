// doctor: the kernel's settings and the limits on this process that decide what perf_event may
// do here.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>

#include "engine/machine_check_probes.hpp"
#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/trim_whitespace.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope::machine_checks {

namespace {

std::string paranoid_meaning(std::int64_t level) {
  if (level <= -1) {
    return "no restrictions: any user may measure CPUs, the kernel and raw tracepoint data";
  }
  if (level == 0) return "users may measure CPU-wide and the kernel, not raw tracepoint samples";
  if (level == 1) return "users may measure their own processes, kernel included, not CPU-wide";
  if (level == 2) return "users may measure only their own processes, and only in user space";
  return "users may not use perf_event_open at all (a distribution patch)";
}

// /proc/kallsyms shows zeros for every address when kptr_restrict hides them from us; a few
// symbols (per-CPU data, absolute symbols) are at 0 anyway, so look for any nonzero one.
std::optional<bool> kallsyms_shows_addresses() {
  auto head = sys::read_text_file_head("/proc/kallsyms", 64 * 1024);
  if (!head || head->empty()) return std::nullopt;
  std::istringstream lines(*head);
  std::string line;
  while (std::getline(lines, line)) {
    auto space = line.find(' ');
    if (space == std::string::npos) continue;
    if (line.find_first_not_of('0') < space) return true;
  }
  return false;
}

}  // namespace

void check_kernel(MachineReport& report) {
  auto release = sys::read_text_file("/proc/sys/kernel/osrelease");
  auto version = sys::read_text_file("/proc/sys/kernel/version");
  std::string value = release ? trim_whitespace(*release) : std::string("unknown");
  if (version) value += " " + trim_whitespace(*version);
  add(report, "kernel", "kernel release", CheckStatus::info, value,
      "The manual's features are tied to kernel versions: CAP_PERFMON needs 5.8, "
      "PERF_FORMAT_LOST 6.0, sigtrap 5.13, aux_action 6.13.");
}

void check_privileges(MachineReport& report, const Privileges& privileges,
                      std::optional<std::int64_t> paranoid) {
  std::vector<std::string> held;
  if (privileges.perfmon) held.push_back("CAP_PERFMON");
  if (privileges.sys_admin) held.push_back("CAP_SYS_ADMIN");
  if (privileges.syslog) held.push_back("CAP_SYSLOG");
  if (privileges.ipc_lock) held.push_back("CAP_IPC_LOCK");
  std::string who = privileges.root ? std::string("root") : fmt::format("uid {}", privileges.euid);
  std::string value = held.empty()
                          ? fmt::format("{}, none of CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYSLOG", who)
                          : fmt::format("{}, effective: {}", who, fmt::join(held, " "));
  if (privileges.perf_privileged()) {
    add(report, "capabilities", "privileges", CheckStatus::ok, value,
        "CAP_PERFMON or CAP_SYS_ADMIN: perf_event_paranoid does not restrict this process.");
    return;
  }
  bool restricted = paranoid && *paranoid >= 2;
  add(report, "capabilities", "privileges", restricted ? CheckStatus::warn : CheckStatus::info,
      value,
      "Without CAP_PERFMON (Linux 5.8+) or CAP_SYS_ADMIN, perf_event_paranoid decides what this "
      "process may measure; without CAP_SYSLOG, kptr_restrict may hide kernel addresses; without "
      "CAP_IPC_LOCK, ring buffers are bounded by perf_event_mlock_kb.",
      "run as root, or grant the capabilities to the binary: sudo setcap "
      "cap_perfmon,cap_syslog,cap_ipc_lock+ep $(command -v perfscope)");
}

void check_paranoid(MachineReport& report, const Privileges& privileges,
                    std::optional<std::int64_t> paranoid) {
  if (!paranoid) {
    add(report, "perf_event_paranoid", "perf_event_paranoid", CheckStatus::fail, "absent",
        "/proc/sys/kernel/perf_event_paranoid is missing: this kernel has no perf_event support "
        "(or /proc is not mounted).",
        "use a kernel built with CONFIG_PERF_EVENTS=y, and mount /proc");
    return;
  }
  std::string value = fmt::format("{} ({})", *paranoid, paranoid_meaning(*paranoid));
  if (privileges.perf_privileged()) {
    add(report, "perf_event_paranoid", "perf_event_paranoid", CheckStatus::ok, value,
        "This process is privileged, so the level does not restrict it; it applies to "
        "unprivileged users.");
    return;
  }
  CheckStatus status = *paranoid <= 1   ? CheckStatus::ok
                       : *paranoid == 2 ? CheckStatus::warn
                                        : CheckStatus::fail;
  std::string explanation =
      *paranoid <= 1   ? std::string("Kernel and user space of your own processes can be measured.")
      : *paranoid == 2 ? std::string(
                             "Events must exclude the kernel (:u); CPU-wide counting (-a, -C, "
                             "-G) and kernel profiles are refused with EACCES.")
                       : std::string("Every perf_event_open of an unprivileged user is refused.");
  add(report, "perf_event_paranoid", "perf_event_paranoid", status, value, explanation,
      status == CheckStatus::ok ? std::string() : std::string(paranoid_fix));
}

void check_kptr_restrict(MachineReport& report) {
  auto restrict_level = sys::read_sysctl("kptr_restrict");
  auto shown = kallsyms_shows_addresses();
  std::string value =
      fmt::format("{}; /proc/kallsyms {}",
                  restrict_level ? std::to_string(*restrict_level) : std::string("absent"),
                  !shown   ? "unreadable"
                  : *shown ? "shows real addresses to this process"
                           : "shows zeros to this process");
  if (shown && *shown) {
    add(report, "kptr_restrict", "kptr_restrict", CheckStatus::ok, value,
        "Kernel symbols can be resolved in profiles.");
    return;
  }
  // The kernel's rule (kallsyms_show_value): level 0 shows addresses to everyone while
  // perf_event_paranoid <= 1 and to CAP_SYSLOG otherwise, level 1 only to CAP_SYSLOG, level 2
  // to nobody.
  std::string fix;
  if (!restrict_level || *restrict_level >= 2) {
    fix = "sudo sysctl kernel.kptr_restrict=0 (level 2 hides addresses even from root)";
  } else if (*restrict_level == 1) {
    fix =
        "grant CAP_SYSLOG (sudo setcap cap_syslog+ep $(command -v perfscope)), or sudo sysctl "
        "kernel.kptr_restrict=0 with kernel.perf_event_paranoid<=1";
  } else {
    fix =
        "sudo sysctl kernel.perf_event_paranoid=1 (at kptr_restrict 0, users see addresses only "
        "while it is <= 1), or grant CAP_SYSLOG: sudo setcap cap_syslog+ep $(command -v "
        "perfscope)";
  }
  add(report, "kptr_restrict", "kptr_restrict", CheckStatus::warn, value,
      "Kernel addresses are hidden from this process: kernel frames in profiles stay "
      "unresolved hex addresses.",
      fix);
}

void check_nmi_watchdog(MachineReport& report) {
  auto watchdog = sys::read_sysctl("nmi_watchdog");
  if (!watchdog) {
    add(report, "nmi_watchdog", "nmi_watchdog", CheckStatus::info, "absent",
        "This kernel has no hard-lockup detector: it holds no counter.");
    return;
  }
  if (*watchdog == 0) {
    add(report, "nmi_watchdog", "nmi_watchdog", CheckStatus::ok, "0 (off)",
        "Every hardware counter is available to perf.");
    return;
  }
  add(report, "nmi_watchdog", "nmi_watchdog", CheckStatus::warn, fmt::format("{} (on)", *watchdog),
      "The hard-lockup detector keeps one hardware counter per CPU busy (on x86, the fixed or a "
      "generic cycles counter): groups get one counter fewer and multiplex sooner.",
      "sudo sysctl kernel.nmi_watchdog=0");
}

void check_max_sample_rate(MachineReport& report) {
  auto rate = sys::read_sysctl("perf_event_max_sample_rate");
  if (!rate) {
    add(report, "perf_event_max_sample_rate", "perf_event_max_sample_rate", CheckStatus::info,
        "absent", "No sampling-rate limit is published.");
    return;
  }
  // perf's default sampling frequency; the kernel lowers the limit by itself when sampling
  // interrupts take too long ("perf: interrupt took too long").
  constexpr std::int64_t default_frequency = 4000;
  if (*rate >= default_frequency) {
    add(report, "perf_event_max_sample_rate", "perf_event_max_sample_rate", CheckStatus::ok,
        fmt::format("{} Hz", *rate),
        fmt::format("Sampling frequencies up to {} Hz are accepted.", *rate));
    return;
  }
  add(report, "perf_event_max_sample_rate", "perf_event_max_sample_rate", CheckStatus::warn,
      fmt::format("{} Hz", *rate),
      fmt::format("Below the usual {} Hz: the kernel lowered it after slow sampling interrupts, "
                  "or it was set low; -F above it fails with EINVAL.",
                  default_frequency),
      "sudo sysctl kernel.perf_event_max_sample_rate=100000");
}

void check_locked_memory(MachineReport& report, const Privileges& privileges) {
  auto mlock_kb = sys::read_sysctl("perf_event_mlock_kb");
  auto limit = sys::locked_memory_limit();
  std::string value =
      fmt::format("perf_event_mlock_kb {}, RLIMIT_MEMLOCK {} (hard {})",
                  mlock_kb ? fmt::format("{} KiB per CPU", *mlock_kb) : std::string("absent"),
                  format_bytes(limit.soft), format_bytes(limit.hard));
  if (privileges.ipc_lock) {
    add(report, "locked_memory", "ring-buffer memory", CheckStatus::ok, value,
        "CAP_IPC_LOCK: ring buffers of any size can be mapped.");
    return;
  }
  constexpr std::int64_t default_mlock_kb = 516;
  if (mlock_kb && *mlock_kb < default_mlock_kb) {
    add(report, "locked_memory", "ring-buffer memory", CheckStatus::warn, value,
        fmt::format("Below the default {} KiB: ring buffers larger than that (with "
                    "RLIMIT_MEMLOCK) fail to map with EPERM.",
                    default_mlock_kb),
        "sudo sysctl kernel.perf_event_mlock_kb=2048, or raise ulimit -l");
    return;
  }
  add(report, "locked_memory", "ring-buffer memory", CheckStatus::ok, value,
      "Each user may map perf_event_mlock_kb per CPU, and RLIMIT_MEMLOCK beyond it, of ring "
      "buffers; larger buffers need CAP_IPC_LOCK.");
}

void check_open_files(MachineReport& report) {
  auto limit = sys::open_files_limit();
  std::size_t cpus = std::max<std::size_t>(online_cpus().size(), 1);
  std::string value =
      fmt::format("soft {}, hard {}", format_count(limit.soft), format_count(limit.hard));
  // perfscope raises the soft limit itself; the hard limit bounds system-wide counting, which
  // opens one fd per event per CPU.
  std::uint64_t events_per_cpu = limit.hard == unlimited ? unlimited : limit.hard / cpus;
  constexpr std::uint64_t wanted_events = 64;
  if (events_per_cpu >= wanted_events) {
    add(report, "open_files", "open-files limit", CheckStatus::ok, value,
        fmt::format("System-wide counting on {} CPUs can open {} events.", cpus,
                    format_count(events_per_cpu)));
    return;
  }
  add(report, "open_files", "open-files limit", CheckStatus::warn, value,
      fmt::format("System-wide counting opens one fd per event per CPU: on {} CPUs only {} "
                  "events fit, then EMFILE.",
                  cpus, events_per_cpu),
      "raise the hard limit (nofile in /etc/security/limits.conf, or LimitNOFILE= for a "
      "service), then ulimit -n 65536");
}

void check_cgroup(MachineReport& report) {
  auto root = sys::cgroup2_root();
  if (root) {
    add(report, "cgroup2", "cgroup v2", CheckStatus::ok, fmt::format("mounted at {}", *root),
        "Counting per cgroup (-G) can name cgroups relative to this mount.");
    return;
  }
  add(report, "cgroup2", "cgroup v2", CheckStatus::warn, "not mounted",
      "Counting per cgroup (-G) needs a cgroup v2 directory.",
      "sudo mount -t cgroup2 none /sys/fs/cgroup");
}

}  // namespace perfscope::machine_checks
