#include "perfscope/engine/machine_check.hpp"

#include "engine/machine_check_probes.hpp"
#include "perfscope/engine/syscall_tracing_check.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

std::string_view check_status_name(CheckStatus status) noexcept {
  switch (status) {
    case CheckStatus::ok: return "ok";
    case CheckStatus::warn: return "warn";
    case CheckStatus::fail: return "fail";
    case CheckStatus::info: return "info";
  }
  return "info";
}

const MachineCheck* MachineReport::find(std::string_view id) const noexcept {
  for (const auto& check : checks) {
    if (check.id == id) return &check;
  }
  return nullptr;
}

MachineReport check_machine() {
  using namespace machine_checks;
  MachineReport report;
  auto privileges = read_privileges();
  auto paranoid = sys::read_sysctl("perf_event_paranoid");
  check_kernel(report);
  check_privileges(report, privileges, paranoid);
  check_paranoid(report, privileges, paranoid);
  check_pmus(report);
  check_aux_tracing(report);
  Event hardware_event = check_hardware_events(report);
  check_sampling(report, privileges);
  check_call_graphs(report);
  check_software_events(report);
  check_tracepoints(report);
  report.checks.push_back(syscall_tracing_check());
  check_breakpoints(report);
  check_user_page(report, hardware_event);
  check_rdpmc_controls(report);
  check_kptr_restrict(report);
  check_nmi_watchdog(report);
  check_max_sample_rate(report);
  check_locked_memory(report, privileges);
  check_open_files(report);
  check_cgroup(report);
  return report;
}

}  // namespace perfscope
