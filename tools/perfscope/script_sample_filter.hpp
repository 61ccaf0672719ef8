// A filter script consults for each sample before it prints it (script --dlfilter): early, before
// script's own selection (--pid, --comms, ...), and after it.
#pragma once

#include <cstdint>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/stack_resolver.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope::cli {

struct SampleFilterInput {
  const PerfDataRecord& record;
  const PerfDataEventInfo& event;
  const SampleRecord& sample;
  std::uint16_t cpumode;
  StackResolver& resolver;
};

class SampleFilter {
 public:
  virtual ~SampleFilter() = default;
  // False: the sample is not printed. Throws std::runtime_error when the filter fails.
  virtual bool keep_early(const SampleFilterInput& input) = 0;
  virtual bool keep(const SampleFilterInput& input) = 0;
  // Text the filter printed that is still buffered, and writing it out (after the caller has
  // written what goes before it).
  virtual bool has_pending_output() const { return false; }
  virtual void write_pending_output() {}
};

}  // namespace perfscope::cli
