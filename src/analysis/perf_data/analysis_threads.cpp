#include "perfscope/analysis/perf_data/analysis_threads.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope {

std::size_t usable_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0) return static_cast<std::size_t>(count);
  }
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : hardware;
}

std::size_t analysis_threads(std::size_t requested, std::uint64_t data_bytes) noexcept {
  if (requested != 0) return requested;
  if (data_bytes < parallel_analysis_min_bytes) return 1;
  return std::min(usable_cpus(), default_analysis_threads_limit);
}

std::size_t analysis_threads(std::size_t requested, const PerfDataReader& reader) noexcept {
  constexpr std::uint64_t sample_bytes = 128;  // a sample without a stack copy, about
  std::uint64_t stack = 0;
  for (const auto& event : reader.events()) {
    if ((event.attr.sample_type & abi::sample_format::stack_user) != 0) {
      stack = std::max<std::uint64_t>(stack, event.attr.sample_stack_user);
    }
  }
  std::uint64_t bytes = reader.data_end() - reader.data_offset();
  return analysis_threads(requested, bytes / ((sample_bytes + stack) / sample_bytes));
}

}  // namespace perfscope
