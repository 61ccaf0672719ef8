// What every check of `doctor` (check_machine) is built from, and the checks themselves, one
// file a concern: the kernel's settings and limits, the events that open and count, and the
// PMU with its user-space reads. Internal to the engine.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "perfscope/core/event.hpp"
#include "perfscope/core/event_attr.hpp"
#include "perfscope/engine/machine_check.hpp"

namespace perfscope::machine_checks {

// The busy loop each counting probe measures.
constexpr std::uint64_t work_iterations = 1'000'000;
// What the kernel's limits read when they have none.
constexpr std::uint64_t unlimited = ~0ULL;

struct Privileges {
  bool root = false;
  bool perfmon = false;
  bool sys_admin = false;
  bool syslog = false;
  bool ipc_lock = false;
  long euid = -1;
  // Not bound by perf_event_paranoid.
  bool perf_privileged() const { return perfmon || sys_admin; }
};

Privileges read_privileges();

// Opens `attr` on the calling thread, any CPU. Invalid Event and errnum on failure.
Event open_on_self(const EventAttr& attr, int& errnum);
// `attr` reading its enabled and running times.
EventAttr counting(EventAttr attr);
std::string open_failure(int errnum, const EventAttr& attr, std::string_view name);
std::string fix_for_open_failure(int errnum);
std::string format_bytes(std::uint64_t bytes);
std::string format_count(std::uint64_t count);

extern const std::string_view paranoid_fix;
extern const std::string_view no_pmu_fix;

void add(MachineReport& report, std::string id, std::string title, CheckStatus status,
         std::string value, std::string explanation, std::string fix = {});

// machine_check_settings.cpp: the kernel's settings and the process's limits.
void check_kernel(MachineReport& report);
void check_privileges(MachineReport& report, const Privileges& privileges,
                      std::optional<std::int64_t> paranoid);
void check_paranoid(MachineReport& report, const Privileges& privileges,
                    std::optional<std::int64_t> paranoid);
void check_kptr_restrict(MachineReport& report);
void check_nmi_watchdog(MachineReport& report);
void check_max_sample_rate(MachineReport& report);
void check_locked_memory(MachineReport& report, const Privileges& privileges);
void check_open_files(MachineReport& report);
void check_cgroup(MachineReport& report);

// machine_check_events.cpp: the events that open, count and sample here.
void check_sampling(MachineReport& report, const Privileges& privileges);
void check_call_graphs(MachineReport& report);
void check_software_events(MachineReport& report);
void check_tracepoints(MachineReport& report);
void check_breakpoints(MachineReport& report);

// machine_check_pmu.cpp: the PMUs, hardware counting and reading counters from user space.
void check_pmus(MachineReport& report);
void check_aux_tracing(MachineReport& report);
// Returns the hardware event, left open and running, for the user-page probe.
Event check_hardware_events(MachineReport& report);
void check_user_page(MachineReport& report, const Event& hardware_event);
void check_rdpmc_controls(MachineReport& report);

}  // namespace perfscope::machine_checks
