// doctor: which events open, count and sample here (software, tracepoints, breakpoints, the
// sampling and call-graph modes record uses).
#include <fmt/format.h>

#include <chrono>
#include <string>

#include "engine/busy_loop.hpp"
#include "engine/machine_check_probes.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/abi/user_registers.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/ring_buffer.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope::machine_checks {

namespace {

// Hard limits on what one probe may take, so that a broken machine cannot hang the doctor.
constexpr auto sampling_probe_time = std::chrono::milliseconds(50);
constexpr std::size_t sampling_data_pages = 8;

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

std::string tracefs_access_fix(const std::string& mount_point) {
  return fmt::format(
      "run as root, or let a group read it: sudo groupadd -f tracing && sudo chgrp -R tracing "
      "{0} && sudo chmod -R g+rX {0}, then add yourself: sudo usermod -aG tracing $USER",
      mount_point);
}

}  // namespace

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

}  // namespace perfscope::machine_checks
