// The smallest sample record an event can write for a user-space task, from its attr alone: the
// fixed-size fields, the user registers and the user stack dump (the kernel copies the full
// requested size for any task with user registers), and the smallest form of the variable
// fields (a user call chain of the context marker and the ip). A ring buffer whose data area cannot
// hold it loses every such sample, each counted in a LOST record and nothing else written:
// SamplingSession refuses that before starting anything.
#pragma once

#include <cstddef>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

struct SampleSizeBound {
  std::size_t bytes = 0;       // the whole record, header included
  std::size_t stack_dump = 0;  // of which PERF_SAMPLE_STACK_USER's dump (sample_stack_user)
  std::size_t registers = 0;   // of which PERF_SAMPLE_REGS_USER / REGS_INTR values
};

// `group_size`: events in the group, for PERF_SAMPLE_READ with PERF_FORMAT_GROUP.
PERFSCOPE_EXPORT SampleSizeBound smallest_user_sample(const abi::PerfEventAttr& attr,
                                                      std::size_t group_size = 1) noexcept;

// The largest record the kernel writes into a ring buffer of `data_bytes` (a power of two):
// it needs more free space than the record, so one 8-byte word stays unused.
constexpr std::size_t largest_record_for(std::size_t data_bytes) noexcept {
  return data_bytes >= 8 ? data_bytes - 8 : 0;
}

}  // namespace perfscope
