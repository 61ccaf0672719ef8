// Over 800 lines on purpose: `doctor`'s checks, one short function each, sharing the probes
// (open, mmap, user page) they are built from; splitting them would scatter what one report is.
#include "perfscope/engine/machine_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include "engine/busy_loop.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/abi/user_registers.hpp"
#include "perfscope/core/counter_instructions.hpp"
#include "perfscope/core/cpu_list.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_attr.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/core/ring_buffer.hpp"
#include "perfscope/core/trim_whitespace.hpp"
#include "perfscope/core/user_page.hpp"
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

namespace {

constexpr std::uint64_t work_iterations = 1'000'000;
constexpr std::uint64_t unlimited = ~0ULL;
// Hard limits on what one probe may take, so that a broken machine cannot hang the doctor.
constexpr auto sampling_probe_time = std::chrono::milliseconds(50);
constexpr std::size_t sampling_data_pages = 8;

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

// Opens `attr` on the calling thread, any CPU. Invalid Event and errnum on failure.
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

constexpr std::string_view paranoid_fix =
    "sudo sysctl kernel.perf_event_paranoid=1 (kernel too) or =-1 (everything); keep it with "
    "`echo kernel.perf_event_paranoid=1 | sudo tee /etc/sysctl.d/99-perf.conf`; or grant "
    "CAP_PERFMON: sudo setcap cap_perfmon+ep $(command -v perfscope)";

constexpr std::string_view no_pmu_fix =
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
         std::string value, std::string explanation, std::string fix = {}) {
  report.checks.push_back({std::move(id), std::move(title), status, std::move(value),
                           std::move(explanation), std::move(fix)});
}

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

std::string paranoid_meaning(std::int64_t level) {
  if (level <= -1) {
    return "no restrictions: any user may measure CPUs, the kernel and raw tracepoint data";
  }
  if (level == 0) return "users may measure CPU-wide and the kernel, not raw tracepoint samples";
  if (level == 1) return "users may measure their own processes, kernel included, not CPU-wide";
  if (level == 2) return "users may measure only their own processes, and only in user space";
  return "users may not use perf_event_open at all (a distribution patch)";
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

bool is_core_pmu(const std::string& name) {
  // As perf decides: the traditional name, or a PMU that lists the CPUs it covers (hybrid x86,
  // arm64), which uncore PMUs (cpumask) do not.
  if (name == "cpu" || name == "cpum_cf") return true;
  return sys::read_text_file(fmt::format("{}/{}/cpus", sys::pmu_devices_dir, name)).has_value();
}

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

// Returns the hardware event, left open and running, for the user-page probe.
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

struct SamplingProbe {
  int errnum = 0;           // of the open
  int map_error = 0;        // -errno of the mmap
  std::uint64_t bytes = 0;  // of records written before the probe ended
  double milliseconds = 0;  // the probe took
};

// Samples of ip and tid only: header, ip, pid/tid.
constexpr std::uint64_t sample_record_bytes = 24;
constexpr std::uint64_t wanted_samples = 10;

SamplingProbe probe_sampling(const EventAttr& attr) {
  SamplingProbe probe;
  Event event = open_on_self(attr, probe.errnum);
  if (!event.valid()) return probe;
  RingBuffer buffer;
  try {
    buffer = RingBuffer::map(event, sampling_data_pages);
  } catch (const Error& error) {
    probe.map_error = -error.errnum();
    return probe;
  }
  // Nothing is read: the bytes the kernel wrote are the bytes not yet released.
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + sampling_probe_time;
  while (buffer.unread_bytes() < wanted_samples * sample_record_bytes &&
         std::chrono::steady_clock::now() < deadline) {
    detail::busy_loop(work_iterations / 100);
  }
  probe.bytes = buffer.unread_bytes();
  probe.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return probe;
}

std::string describe_samples(std::string_view event, const SamplingProbe& probe) {
  return fmt::format("{}: {} samples ({} bytes) in {:.1f} ms", event,
                     probe.bytes / sample_record_bytes, probe.bytes, probe.milliseconds);
}

void check_sampling(MachineReport& report, const Privileges& privileges) {
  constexpr std::uint64_t sample_bits = abi::sample_format::ip | abi::sample_format::tid;
  auto hardware = EventAttr::hardware(abi::HardwareEvent::cpu_cycles)
                      .count_user_only()
                      .set_sample_period(100'000)
                      .set_sample_type(sample_bits);
  auto hw = probe_sampling(hardware);
  std::string mlock_fix =
      "raise the ring-buffer allowance: sudo sysctl kernel.perf_event_mlock_kb=2048, or "
      "ulimit -l with more, or grant CAP_IPC_LOCK";
  if (hw.errnum == 0 && hw.map_error == 0 && hw.bytes > 0) {
    report.sampling = "hardware (cycles)";
    add(report, "sampling", "sampling", CheckStatus::ok,
        describe_samples("cycles:u every 100000 cycles", hw),
        "Hardware sampling works: the PMU raises overflow interrupts.");
    return;
  }
  auto software = EventAttr::software(abi::SoftwareEvent::cpu_clock)
                      .count_user_only()
                      .set_sample_period(100'000)
                      .set_sample_type(sample_bits);
  auto sw = probe_sampling(software);
  std::string hw_problem =
      hw.errnum != 0
          ? fmt::format("cycles:u does not open for sampling ({})", errno_name(hw.errnum))
      : hw.map_error != 0
          ? fmt::format("its ring buffer cannot be mapped ({})", errno_name(-hw.map_error))
          : std::string(
                "cycles:u opened but no sample arrived in 50 ms (no PMU "
                "overflow interrupt)");
  if (sw.errnum == 0 && sw.map_error == 0 && sw.bytes > 0) {
    report.sampling = "software only (cpu-clock)";
    add(report, "sampling", "sampling", CheckStatus::warn,
        fmt::format("{}; {}", describe_samples("cpu-clock every 100 us", sw), hw_problem),
        "Profiles can only be timer-based (cpu-clock): no cycle or instruction sampling, no "
        "precise (PEBS/IBS) samples.",
        hw.map_error != 0 ? mlock_fix : std::string(no_pmu_fix));
    return;
  }
  report.sampling = "no";
  std::string value =
      sw.errnum != 0 ? fmt::format("cpu-clock does not open for sampling ({}); {}",
                                   errno_name(sw.errnum), hw_problem)
      : sw.map_error != 0
          ? fmt::format("the ring buffer cannot be mapped ({}); {}", errno_name(-sw.map_error),
                        hw_problem)
          : fmt::format("cpu-clock opened but no sample arrived in 50 ms; {}", hw_problem);
  std::string fix = sw.map_error == -EPERM || sw.map_error == -ENOMEM ? mlock_fix
                    : privileges.perf_privileged()
                        ? std::string(
                              "run `perfscope stat -v -e cpu-clock -- true` for the "
                              "kernel's reason")
                        : std::string(paranoid_fix);
  add(report, "sampling", "sampling", CheckStatus::fail, value,
      "Neither a hardware nor a software event can be sampled into a ring buffer.", fix);
}

// What record's call-graph modes get here: -g needs the user registers and a small stack copy
// beside the frame-pointer chain (the callers the walk skips are found from them).
void check_call_graphs(MachineReport& report) {
  namespace sf = abi::sample_format;
  auto attr =
      EventAttr::software(abi::SoftwareEvent::cpu_clock)
          .count_user_only()
          .set_sample_period(100'000)
          .set_sample_type(sf::ip | sf::tid | sf::callchain | sf::regs_user | sf::stack_user)
          .set_sample_regs_user(abi::dwarf_unwind_register_mask())
          .set_sample_stack_user(1024);
  SamplingProbe probe = probe_sampling(attr);
  if (probe.errnum == 0 && probe.map_error == 0 && probe.bytes > 0) {
    add(report, "call_graphs", "call graphs", CheckStatus::ok,
        "call chains with user registers and stack copies sample",
        "record -g: frame pointers, with the callers they skip recovered from a 1 KiB stack "
        "copy while recording; --call-graph dwarf: unwound while recording (--keep-stacks writes "
        "the copies as perf does); --call-graph fp: the kernel's frame-pointer walk alone.");
    return;
  }
  add(report, "call_graphs", "call graphs", CheckStatus::warn,
      probe.errnum != 0 ? fmt::format("user registers and stack copies do not open ({})",
                                      errno_name(probe.errnum))
                        : std::string("user registers and stack copies gave no sample"),
      "record -g and --call-graph dwarf need them; --call-graph fp (the kernel's frame-pointer "
      "walk alone) still works.",
      "run `perfscope record -v --call-graph dwarf -- true` for the kernel's reason");
}

void check_software_events(MachineReport& report) {
  auto attr = counting(EventAttr::software(abi::SoftwareEvent::task_clock).count_user_only());
  int errnum = 0;
  Event event = open_on_self(attr, errnum);
  if (!event.valid()) {
    add(report, "software_events", "software events", CheckStatus::fail,
        fmt::format("task-clock does not open ({})", errno_name(errnum)),
        open_failure(errnum, attr, "task-clock"), fix_for_open_failure(errnum));
    return;
  }
  detail::busy_loop(work_iterations);
  Reading reading;
  if (!event.read(reading) || reading.value == 0) {
    add(report, "software_events", "software events", CheckStatus::fail,
        "task-clock opens but counts nothing",
        "The kernel's own clock event should count the time this thread ran.",
        "run `perfscope stat -v -e task-clock -- true` for details");
    return;
  }
  add(report, "software_events", "software events", CheckStatus::ok,
      fmt::format("task-clock counted {} ns for a {}-iteration loop", reading.value,
                  work_iterations),
      "Software events (task-clock, page-faults, context-switches...) work.");
}

std::string tracefs_access_fix(const std::string& mount_point) {
  return fmt::format(
      "run as root, or let a group read it: sudo groupadd -f tracing && sudo chgrp -R tracing "
      "{0} && sudo chmod -R g+rX {0}, then add yourself: sudo usermod -aG tracing $USER",
      mount_point);
}

void check_tracepoints(MachineReport& report) {
  auto root = sys::tracefs_root();
  if (!root) {
    if (auto mount_point = sys::tracefs_mount_point()) {
      add(report, "tracepoints", "tracepoints", CheckStatus::fail,
          fmt::format("tracefs at {} is not readable by this process", *mount_point),
          "Tracepoint events are named by ids under tracefs, which is root-only by default.",
          tracefs_access_fix(*mount_point));
      return;
    }
    add(report, "tracepoints", "tracepoints", CheckStatus::fail, "tracefs not mounted",
        "Tracepoint events are named by ids under tracefs, which is not mounted (and could not "
        "be mounted by this process).",
        "sudo mount -t tracefs nodev /sys/kernel/tracing");
    return;
  }
  struct Candidate {
    std::string_view subsystem, name;
  };
  // sys_enter_read can be counted exactly enough to show it counts; sched_switch exists on
  // kernels without syscall tracepoints.
  for (auto candidate :
       {Candidate{"syscalls", "sys_enter_read"}, Candidate{"sched", "sched_switch"}}) {
    long long id = tracepoint_id(candidate.subsystem, candidate.name);
    if (id == -ENOENT) continue;
    std::string name = fmt::format("{}:{}", candidate.subsystem, candidate.name);
    if (id < 0) {
      int errnum = static_cast<int>(-id);
      add(report, "tracepoints", "tracepoints", CheckStatus::fail,
          fmt::format("{}/events/{}/{}/id unreadable ({})", *root, candidate.subsystem,
                      candidate.name, errno_name(errnum)),
          "Tracepoint ids under tracefs are readable by root only by default.",
          tracefs_access_fix(*root));
      return;
    }
    // Tracepoints fire in the kernel: excluding it would count nothing.
    auto attr = counting(EventAttr::tracepoint(static_cast<std::uint64_t>(id)));
    int errnum = 0;
    Event event = open_on_self(attr, errnum);
    if (!event.valid()) {
      add(report, "tracepoints", "tracepoints", CheckStatus::fail,
          fmt::format("{} does not open ({})", name, errno_name(errnum)),
          open_failure(errnum, attr, name), fix_for_open_failure(errnum));
      return;
    }
    constexpr int reads = 4;
    if (candidate.name == "sys_enter_read") {
      for (int i = 0; i < reads; ++i) sys::read_text_file_head("/proc/sys/kernel/ostype", 64);
    }
    Reading reading;
    bool counted = event.read(reading);
    if (candidate.name == "sys_enter_read" && (!counted || reading.value < reads)) {
      add(report, "tracepoints", "tracepoints", CheckStatus::warn,
          fmt::format("{} opens but counted {} of at least {} reads", name, reading.value, reads),
          "The tracepoint opens but does not see this thread's system calls.",
          "check that tracing is not disabled (cat /sys/kernel/tracing/tracing_on)");
      return;
    }
    add(report, "tracepoints", "tracepoints", CheckStatus::ok,
        candidate.name == "sys_enter_read"
            ? fmt::format("{} counted {} for at least {} reads (tracefs at {})", name,
                          reading.value, reads, *root)
            : fmt::format("{} opens (tracefs at {})", name, *root),
        "Tracepoints (subsystem:name events) can be counted.");
    return;
  }
  add(report, "tracepoints", "tracepoints", CheckStatus::warn,
      fmt::format("tracefs at {} has neither syscalls:sys_enter_read nor sched:sched_switch",
                  *root),
      "The usual tracepoints are missing from this kernel's tracefs.",
      "use a kernel with CONFIG_FTRACE_SYSCALLS and scheduler tracepoints");
}

void check_breakpoints(MachineReport& report) {
  static volatile std::uint64_t watched = 0;
  auto attr =
      counting(EventAttr::breakpoint(reinterpret_cast<std::uintptr_t>(&watched),
                                     abi::breakpoint_length::len8, abi::breakpoint_type::write)
                   .count_user_only());
  int errnum = 0;
  Event event = open_on_self(attr, errnum);
  if (!event.valid()) {
    add(report, "breakpoints", "hardware breakpoints", CheckStatus::fail,
        fmt::format("a write watchpoint does not open ({})", errno_name(errnum)),
        open_failure(errnum, attr, "mem:ADDR/8:w"), fix_for_open_failure(errnum));
    return;
  }
  constexpr std::uint64_t writes = 3;
  for (std::uint64_t i = 0; i < writes; ++i) watched = i;
  Reading reading;
  event.read(reading);
  if (reading.value != writes) {
    add(report, "breakpoints", "hardware breakpoints", CheckStatus::warn,
        fmt::format("{} writes to a watched variable counted {}", writes, reading.value),
        "The watchpoint opens but its count is not exact (a hypervisor that does not pass debug "
        "registers through?).",
        "use a machine whose hypervisor virtualizes the debug registers");
    return;
  }
  add(report, "breakpoints", "hardware breakpoints", CheckStatus::ok,
      fmt::format("{} writes to a watched variable counted {}", writes, reading.value),
      "Data watchpoints (mem:ADDR:rwx events) work and count exactly.");
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

}  // namespace

MachineReport check_machine() {
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
