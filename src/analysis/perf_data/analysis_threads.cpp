#include "perfscope/analysis/perf_data/analysis_threads.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

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

}  // namespace perfscope
