// doctor: the PMUs, whether hardware counters count, and whether counters and time can be read
// from user space.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/busy_loop.hpp"
#include "engine/machine_check_probes.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/counter_instructions.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/core/trim_whitespace.hpp"
#include "perfscope/core/user_page.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope::machine_checks {

namespace {

bool is_core_pmu(const std::string& name) {
  // As perf decides: the traditional name, or a PMU that lists the CPUs it covers (hybrid x86,
  // arm64), which uncore PMUs (cpumask) do not.
  if (name == "cpu" || name == "cpum_cf") return true;
  return sys::read_text_file(fmt::format("{}/{}/cpus", sys::pmu_devices_dir, name)).has_value();
}

UserPageCapabilities user_page_capabilities(const UserPage& page, bool from_hardware) {
  UserPageCapabilities result;
  result.mapped = true;
  result.from_hardware_event = from_hardware;
  PageCapabilities capabilities = page.capabilities();
  result.user_rdpmc = capabilities.user_rdpmc;
  result.user_time = capabilities.user_time;
  result.user_time_zero = capabilities.user_time_zero;
  result.user_time_short = capabilities.user_time_short;
  result.pmc_width = capabilities.pmc_width;
  // The counter index, read under the page's seqlock as every reader does.
  result.index =
      read_user_page(page.page(), arch::read_hardware_counter, arch::read_timestamp_counter).index;
  return result;
}

const char* yes_no(bool value) { return value ? "yes" : "no"; }

std::string core_pmu_name(const MachineReport& report) {
  for (const auto& pmu : report.pmus) {
    if (pmu.core) return pmu.name;
  }
  return {};
}

}  // namespace

void check_pmus(MachineReport& report) {
  std::string dir(sys::pmu_devices_dir);
  std::vector<std::string> parts;
  bool core_found = false;
  for (const auto& name : sys::list_directory(dir)) {
    PmuDevice pmu;
    pmu.name = name;
    pmu.type = sys::read_integer_file(fmt::format("{}/{}/type", dir, name)).value_or(-1);
    pmu.core = is_core_pmu(name);
    pmu.aux = is_aux_tracing_pmu(name);
    core_found = core_found || pmu.core;
    parts.push_back(fmt::format("{}={}{}", name, pmu.type, pmu.core ? " (core)" : ""));
    report.pmus.push_back(std::move(pmu));
  }
  if (report.pmus.empty()) {
    add(report, "pmus", "PMUs", CheckStatus::fail, "none",
        fmt::format("{} is empty or missing: no perf_event sources are registered.", dir),
        "mount sysfs (mount -t sysfs sysfs /sys) and use a kernel with CONFIG_PERF_EVENTS=y");
    return;
  }
  std::string value = fmt::format("{}", fmt::join(parts, ", "));
  if (core_found) {
    add(report, "pmus", "PMUs", CheckStatus::ok, value,
        "A core PMU is registered: generic hardware events (cycles, instructions) map to it.");
  } else {
    add(report, "pmus", "PMUs", CheckStatus::warn, value,
        "No core PMU (cpu, cpu_core, armv8_pmuv3...): hardware events have nothing to run on, "
        "which is typical of a virtual machine without PMU passthrough.",
        std::string(no_pmu_fix));
  }
}

Event check_hardware_events(MachineReport& report) {
  auto attr = counting(EventAttr::hardware(abi::HardwareEvent::instructions).count_user_only());
  int errnum = 0;
  Event event = open_on_self(attr, errnum);
  if (!event.valid()) {
    add(report, "hardware_events", "hardware events", CheckStatus::fail,
        fmt::format("instructions:u does not open ({})", errno_name(errnum)),
        open_failure(errnum, attr, "instructions:u"), fix_for_open_failure(errnum));
    return event;
  }
  detail::busy_loop(work_iterations);
  Reading reading;
  if (!event.read(reading)) {
    add(report, "hardware_events", "hardware events", CheckStatus::fail,
        "instructions:u opens but cannot be read",
        "read(2) on the event failed, so its counts cannot be had.", std::string(no_pmu_fix));
    return event;
  }
  if (reading.running == 0) {
    add(report, "hardware_events", "hardware events", CheckStatus::warn,
        "instructions:u opens but never got a counter",
        "The event was enabled but never on the PMU: every counter is taken (the NMI watchdog, "
        "another profiler, or a hypervisor that gives the guest none).",
        "free counters: sudo sysctl kernel.nmi_watchdog=0, and stop other profilers");
    return event;
  }
  if (reading.value == 0) {
    add(report, "hardware_events", "hardware events", CheckStatus::warn,
        "instructions:u opens but counts 0",
        fmt::format("A loop of {} iterations ran while the event was on the PMU and it counted "
                    "nothing: the PMU is advertised but does not count (an emulated PMU?).",
                    work_iterations),
        std::string(no_pmu_fix));
    return event;
  }
  report.hardware_counters = true;
  add(report, "hardware_events", "hardware events", CheckStatus::ok,
      fmt::format("instructions:u counted {} for a {}-iteration loop", reading.value,
                  work_iterations),
      "Hardware counters open and count in user space.");
  return event;
}

void check_aux_tracing(MachineReport& report) {
  std::vector<std::string> found;
  for (const PmuDevice& pmu : report.pmus) {
    if (pmu.aux) found.push_back(fmt::format("{}={}", pmu.name, pmu.type));
  }
  if (found.empty()) {
    add(report, "aux_tracing", "AUX tracing", CheckStatus::info, "no AUX-area PMU",
        "No PMU here writes hardware traces to an AUX area (Intel PT or BTS, Arm SPE, CoreSight "
        "ETM): instruction traces cannot be recorded on this machine. perfscope still reads the "
        "AUXTRACE records of perf's files from other machines (their trace bytes are kept and "
        "stepped over, not decoded).");
    return;
  }
  add(report, "aux_tracing", "AUX tracing", CheckStatus::info,
      fmt::format("{}", fmt::join(found, ", ")),
      "These PMUs write hardware traces to an AUX area. 'perfscope record -e intel_pt//u -- CMD' "
      "(or arm_spe_0//, intel_bts//) records the trace into AUXTRACE records that perf decodes "
      "(perf script --itrace); cs_etm traces need perf record. perfscope itself keeps the trace "
      "bytes, it does not decode them.");
}

void check_user_page(MachineReport& report, const Event& hardware_event) {
  Event software_event;
  const Event* event = &hardware_event;
  if (!hardware_event.valid()) {
    int errnum = 0;
    software_event =
        open_on_self(EventAttr::software(abi::SoftwareEvent::task_clock).count_user_only(), errnum);
    event = &software_event;
  }
  if (!event->valid()) {
    add(report, "user_counter_reads", "user-space counter reads", CheckStatus::fail,
        "no event opens", "Without an open event there is no user page to map.",
        std::string(paranoid_fix));
    report.user_space_reads = "no";
    return;
  }
  UserPage user_page;
  try {
    user_page = UserPage::map(*event);
  } catch (const Error& error) {
    add(report, "user_counter_reads", "user-space counter reads", CheckStatus::warn,
        fmt::format("the event's first page cannot be mapped ({})", errno_name(error.errnum())),
        "Counters and time can only be read with read(2) here.",
        "sudo sysctl kernel.perf_event_mlock_kb=2048, or raise ulimit -l");
    report.user_space_reads = "no";
    return;
  }
  // The counter index is published while the event is on the PMU: keep it busy a moment.
  detail::busy_loop(work_iterations / 10);
  auto page = user_page_capabilities(user_page, hardware_event.valid());
  report.user_page = page;
  bool counters = page.from_hardware_event && page.user_rdpmc && page.index != 0;
  bool time = page.user_time && page.user_time_zero;
  report.user_space_reads = counters && time ? "counters and time"
                            : counters       ? "counters only"
                            : time           ? "time only"
                                             : "no";

  std::string source = page.from_hardware_event ? "instructions:u" : "task-clock";
  if (counters) {
    add(report, "user_counter_reads", "user-space counter reads", CheckStatus::ok,
        fmt::format("cap_user_rdpmc yes, index {}, {}-bit counters ({})", page.index,
                    page.pmc_width, source),
        "Counters can be read with rdpmc (x86) or mrs (arm64) without a system call.");
  } else if (!page.from_hardware_event) {
    add(report, "user_counter_reads", "user-space counter reads", CheckStatus::info,
        fmt::format("cap_user_rdpmc {} ({}: no hardware event opens)", yes_no(page.user_rdpmc),
                    source),
        "Only software events open here, and their counts need read(2).", std::string(no_pmu_fix));
  } else {
    bool arm = core_pmu_name(report).rfind("armv", 0) == 0;
    add(report, "user_counter_reads", "user-space counter reads", CheckStatus::warn,
        fmt::format("cap_user_rdpmc {}, index {} ({})", yes_no(page.user_rdpmc), page.index,
                    source),
        "The kernel does not let this process read the counter directly: reads cost a system "
        "call (about a microsecond) each.",
        arm ? "sudo sysctl kernel.perf_user_access=1"
            : fmt::format(
                  "echo 2 | sudo tee {}/{}/rdpmc (1, the default, allows it for mapped "
                  "events; 0 forbids it)",
                  sys::pmu_devices_dir,
                  core_pmu_name(report).empty() ? std::string("cpu") : core_pmu_name(report)));
  }

  auto clocksource =
      sys::read_text_file("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string value = fmt::format("cap_user_time {}, cap_user_time_zero {}, cap_user_time_short {}",
                                  yes_no(page.user_time), yes_no(page.user_time_zero),
                                  yes_no(page.user_time_short));
  if (clocksource) value += fmt::format("; clocksource {}", trim_whitespace(*clocksource));
  if (time) {
    add(report, "user_time", "user-space time", CheckStatus::ok, value,
        "Enabled/running times can be extrapolated and the cycle counter converted to "
        "perf_clock time without a system call.");
  } else {
    add(report, "user_time", "user-space time", CheckStatus::warn, value,
        "The kernel publishes no cycle-to-time conversion, so enabled/running times and "
        "timestamps need read(2) or clock_gettime. x86 publishes it only while sched_clock is "
        "the native, stable TSC: in a KVM guest sched_clock is kvm-clock's even when the "
        "clocksource is tsc.",
        "on bare metal, use a stable TSC (clocksource tsc, no tsc=unstable); in a KVM guest "
        "whose host TSC is invariant, boot with no-kvmclock");
  }
}

void check_rdpmc_controls(MachineReport& report) {
  std::string core = core_pmu_name(report);
  if (!core.empty()) {
    std::string path = fmt::format("{}/{}/rdpmc", sys::pmu_devices_dir, core);
    if (auto rdpmc = sys::rdpmc_mode(core)) {
      CheckStatus status = *rdpmc == 0 ? CheckStatus::warn : CheckStatus::ok;
      std::string meaning = *rdpmc == 0   ? "rdpmc forbidden in user space"
                            : *rdpmc == 1 ? "rdpmc allowed for events the process has mapped"
                                          : "rdpmc allowed always";
      add(report, "rdpmc_sysfs", core + "/rdpmc", status, fmt::format("{} ({})", *rdpmc, meaning),
          "The x86 control of the rdpmc instruction in user space.",
          status == CheckStatus::ok ? std::string() : fmt::format("echo 1 | sudo tee {}", path));
    }
  }
  if (auto access = sys::perf_user_access()) {
    CheckStatus status = *access == 0 ? CheckStatus::warn : CheckStatus::ok;
    add(report, "perf_user_access", "perf_user_access", status,
        fmt::format("{} ({})", *access,
                    *access == 0 ? "counters not readable from user space"
                                 : "counters readable with mrs when the event asks (config1)"),
        "The arm64 control of direct counter reads from user space.",
        status == CheckStatus::ok ? std::string() : "sudo sysctl kernel.perf_user_access=1");
  }
}

}  // namespace perfscope::machine_checks
