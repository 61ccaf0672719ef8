// Count a piece of work: start, stop, print.
#include <cstdio>
#include <perfscope/embed/counters.hpp>
#include <vector>

int main() {
  perfscope::Counters counters("task-clock,page-faults,cycles,instructions");
  counters.start();
  std::vector<int> values(1 << 20, 1);  // 4 MiB of fresh memory: about 1000 page faults
  long sum = 0;
  for (int value : values) sum += value;
  counters.stop();

  perfscope::CounterReport report = counters.report();
  std::fputs(report.table().c_str(), stdout);
  for (const auto& notice : counters.notices()) std::printf("note: %s\n", notice.c_str());
  return sum == (1 << 20) && report.value("page-faults") >= 1000 ? 0 : 1;
}
