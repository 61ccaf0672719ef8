// The probes and wording that doctor's checks share.
#include "engine/machine_check_probes.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope::machine_checks {

std::string format_bytes(std::uint64_t bytes) {
  if (bytes == unlimited) return "unlimited";
  if (bytes >= (1ULL << 30) && bytes % (1ULL << 30) == 0) {
    return fmt::format("{} GiB", bytes >> 30);
  }
  if (bytes >= (1ULL << 20) && bytes % (1ULL << 20) == 0) {
    return fmt::format("{} MiB", bytes >> 20);
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

std::string format_count(std::uint64_t count) {
  if (count == unlimited) return "unlimited";
  return std::to_string(count);
}

Privileges read_privileges() {
  Privileges privileges;
  std::uint64_t caps = sys::effective_capabilities();
  auto has = [caps](unsigned bit) { return (caps >> bit) & 1; };
  privileges.perfmon = has(sys::cap_perfmon);
  privileges.sys_admin = has(sys::cap_sys_admin);
  privileges.syslog = has(sys::cap_syslog);
  privileges.ipc_lock = has(sys::cap_ipc_lock);
  // "Uid:\treal\teffective\tsaved\tfs"
  if (auto status = sys::read_text_file("/proc/self/status")) {
    auto at = status->find("\nUid:");
    if (at != std::string::npos) {
      std::istringstream fields(status->substr(at + 5, 64));
      long real = -1;
      fields >> real >> privileges.euid;
    }
  }
  privileges.root = privileges.euid == 0;
  return privileges;
}

Event open_on_self(const EventAttr& attr, int& errnum) {
  return Event::try_open(attr, 0, -1, nullptr, 0, errnum);
}

EventAttr counting(EventAttr attr) {
  return attr.set_read_format(abi::read_format::total_time_enabled |
                              abi::read_format::total_time_running);
}

std::string open_failure(int errnum, const EventAttr& attr, std::string_view name) {
  OpenContext context;
  context.event_name = std::string(name);
  return fmt::format("perf_event_open of {} failed with {} ({}): {}", name, errno_name(errnum),
                     std::strerror(errnum), diagnose_open_failure(errnum, attr, context));
}

const std::string_view paranoid_fix =
    "sudo sysctl kernel.perf_event_paranoid=1 (kernel too) or =-1 (everything); keep it with "
    "`echo kernel.perf_event_paranoid=1 | sudo tee /etc/sysctl.d/99-perf.conf`; or grant "
    "CAP_PERFMON: sudo setcap cap_perfmon+ep $(command -v perfscope)";

const std::string_view no_pmu_fix =
    "on a virtual machine, expose the PMU to the guest (QEMU/KVM: -cpu host or pmu=on; "
    "libvirt: <pmu state='on'/>; VMware: 'Virtualize CPU performance counters'; cloud: a "
    "bare-metal or PMU-enabled instance type); until then use software events (task-clock, "
    "page-faults, cpu-clock sampling)";

std::string fix_for_open_failure(int errnum) {
  switch (errnum) {
    case EACCES:
    case EPERM: return std::string(paranoid_fix);
    case ENOENT:
    case EOPNOTSUPP: return std::string(no_pmu_fix);
    case EMFILE: return "raise the open-files limit: ulimit -n 65536";
    case ENOSPC:
    case EBUSY: return "stop the other profiler or watchdog holding the counters";
    default: return "run `perfscope stat -v -e EVENT -- true` to see the attr and the diagnosis";
  }
}

void add(MachineReport& report, std::string id, std::string title, CheckStatus status,
         std::string value, std::string explanation, std::string fix) {
  report.checks.push_back({std::move(id), std::move(title), status, std::move(value),
                           std::move(explanation), std::move(fix)});
}

}  // namespace perfscope::machine_checks
