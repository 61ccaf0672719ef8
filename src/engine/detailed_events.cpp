#include "perfscope/engine/detailed_events.hpp"

namespace perfscope {

std::string detailed_event_list(int level) {
  // As perf stat adds them on a PMU without topdown metrics (tools/perf/builtin-stat.c): L1
  // data and last-level cache loads; then instruction cache and TLBs; then L1 prefetches.
  static constexpr const char* levels[] = {
      "L1-dcache-loads,L1-dcache-load-misses,LLC-loads,LLC-load-misses",
      ("L1-icache-loads,L1-icache-load-misses,dTLB-loads,dTLB-load-misses,iTLB-loads,"
       "iTLB-load-misses"),
      "L1-dcache-prefetches,L1-dcache-prefetch-misses",
  };
  std::string list;
  for (int i = 0; i < level && i < 3; ++i) {
    if (!list.empty()) list += ',';
    list += levels[i];
  }
  return list;
}

}  // namespace perfscope
