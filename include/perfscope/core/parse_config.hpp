// What the decoder needs to know about an event to walk its records: the attr fields that shape
// the layout of PERF_RECORD_SAMPLE and of the sample_id trailer of every other record.
#pragma once

#include <cstddef>
#include <cstdint>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

struct PERFSCOPE_EXPORT ParseConfig {
  std::uint64_t sample_type = 0;
  std::uint64_t read_format = 0;
  std::uint64_t branch_sample_type = 0;
  std::uint64_t sample_regs_user = 0;
  std::uint64_t sample_regs_intr = 0;
  bool sample_id_all = false;

  static ParseConfig from_attr(const abi::PerfEventAttr& attr) noexcept;

  // Bytes of the sample_id trailer on non-sample records (0 without sample_id_all).
  std::size_t sample_id_size() const noexcept;
  bool has(std::uint64_t sample_bit) const noexcept { return (sample_type & sample_bit) != 0; }
};

}  // namespace perfscope
