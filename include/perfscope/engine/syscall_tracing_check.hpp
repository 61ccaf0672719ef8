// Whether system calls can be traced here (perfscope trace): the raw_syscalls tracepoints exist
// (kernels built with CONFIG_FTRACE_SYSCALLS), tracefs names them to this process, and this
// process may sample them with their raw payload, kernel included (the tracepoints fire in the
// kernel: at perf_event_paranoid 2 without CAP_PERFMON only user space may be sampled, so they
// would never fire).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "perfscope/engine/machine_check.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

struct SyscallTracingSupport {
  bool usable = false;
  std::string tracefs;  // where tracefs is, when found
  std::uint64_t enter_id = 0, exit_id = 0;
  std::size_t syscall_formats = 0;  // syscalls/sys_enter_* formats: named arguments
  std::string problem;              // what is missing or forbidden
  std::string fix;                  // how to change that
  int error = 0;                    // errno behind `problem`
};

// Looks under tracefs and opens raw_syscalls:sys_enter on this thread (then closes it).
PERFSCOPE_EXPORT SyscallTracingSupport probe_syscall_tracing();

// The `syscall_tracing` check of doctor.
PERFSCOPE_EXPORT MachineCheck syscall_tracing_check();

}  // namespace perfscope
