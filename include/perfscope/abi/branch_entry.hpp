// struct perf_branch_entry (PERF_SAMPLE_BRANCH_STACK): from, to, and a flags word.
#pragma once

#include <cstdint>

#include "perfscope/abi/data_source.hpp"

namespace perfscope::abi {

struct PerfBranchEntry {
  std::uint64_t from;
  std::uint64_t to;
  std::uint64_t flags;
};
static_assert(sizeof(PerfBranchEntry) == 24);

namespace branch_flags {
inline constexpr BitField mispred{0, 1};
inline constexpr BitField predicted{1, 1};
inline constexpr BitField in_tx{2, 1};
inline constexpr BitField abort{3, 1};
inline constexpr BitField cycles{4, 16};
inline constexpr BitField type{20, 4};
inline constexpr BitField spec{24, 2};
inline constexpr BitField new_type{26, 4};
inline constexpr BitField priv{30, 3};
}  // namespace branch_flags

enum class BranchType : std::uint8_t {
  unknown = 0,
  cond = 1,
  uncond = 2,
  ind = 3,
  call = 4,
  ind_call = 5,
  ret = 6,
  syscall = 7,
  sysret = 8,
  cond_call = 9,
  cond_ret = 10,
  eret = 11,
  irq = 12,
  serror = 13,
  no_tx = 14,
  extend_abi = 15,
};

}  // namespace perfscope::abi
