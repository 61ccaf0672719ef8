#include "perf_commands_elsewhere.hpp"

#include <array>
#include <utility>

namespace perfscope::cli {

namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 12> answers{{
    {"bench",
     "perf bench runs perf's micro-benchmarks of the kernel (sched, syscall, mem, futex), which "
     "measure the machine, not a program; perfscope has none: run perf bench"},
    {"c2c",
     "perf c2c finds false sharing from the CPU's memory-access sampling (Intel PEBS load "
     "latency, AMD IBS op, Arm SPE); perfscope has no c2c report: record -d samples data "
     "addresses where the PMU gives them, and script -F addr prints them"},
    {"daemon",
     "perf daemon keeps record sessions running in the background; perfscope has no daemon: "
     "run perfscope record under systemd-run or nohup, and stop it with SIGINT"},
    {"ftrace",
     "perf ftrace drives the kernel's function tracer through tracefs, which is not perf_event; "
     "perfscope leaves it to perf ftrace and trace-cmd: perfscope trace follows system calls and "
     "record -e SUBSYSTEM:EVENT any tracepoint"},
    {"iostat",
     "perf iostat reads the PCIe bandwidth counters of Intel Xeon's IIO PMU; perfscope has no "
     "iostat: stat -e uncore_iio_N/EVENT/ counts them where that PMU exists"},
    {"kmem",
     "perf kmem reports kernel allocations from the kmem tracepoints; perfscope has no kmem "
     "report: record -e kmem:kmalloc,kmem:kfree -a, then script prints each allocation"},
    {"kvm",
     "perf kvm profiles KVM guests from the host (the guest's kallsyms and modules); perfscope "
     "has no guest support: run perfscope inside the guest"},
    {"kwork",
     "perf kwork times IRQs, softirqs and workqueues from their tracepoints; perfscope has no "
     "kwork report: record -e irq:irq_handler_entry,irq:irq_handler_exit -a, then script"},
    {"lock",
     "perf lock reports lock contention from the lock:contention_begin/end tracepoints or BPF; "
     "perfscope has no lock report: record -e lock:contention_begin,lock:contention_end -g, then "
     "report --sort sym"},
    {"mem",
     "perf mem samples loads and stores with the CPU's memory-access sampling (Intel PEBS, AMD "
     "IBS, Arm SPE); perfscope has no mem report: record -d samples data addresses where the PMU "
     "gives them"},
    {"test",
     "perf test runs perf's self-tests; perfscope runs its own as its test suite (make test), "
     "and perfscope doctor says what this machine can measure"},
    {"timechart",
     "perf timechart draws an SVG of CPUs and tasks over time; perfscope view has a timeline "
     "in the browser, and sched timehist prints every switch"},
}};

}  // namespace

std::optional<std::string_view> perf_command_elsewhere(std::string_view name) {
  for (const auto& [command, answer] : answers) {
    if (command == name) return answer;
  }
  return std::nullopt;
}

}  // namespace perfscope::cli
