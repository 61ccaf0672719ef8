// Reports as a table, JSON and CSV; make_counter_report scales readings (here synthetic ones:
// 1000 cycles counted during a quarter of the time enabled are 4000).
#include <cstdio>
#include <perfscope/embed/scoped_region.hpp>
#include <vector>

int main() {
  perfscope::Counters counters("page-faults,task-clock");
  {
    perfscope::Region region(counters, "setup");
    std::vector<char> buffer(1 << 16, 1);
  }
  std::fputs(perfscope::format_json(counters.region_reports()).c_str(), stdout);
  std::fputs(perfscope::format_csv(counters.region_reports()).c_str(), stdout);

  std::vector<perfscope::EventCount> counts(2);
  counts[0].name = "cycles";
  counts[0].reading = {1000, 400, 100, 0, 0};  // value, enabled ns, running ns
  counts[1].name = "instructions";
  counts[1].reading = {3000, 400, 100, 0, 0};
  perfscope::CounterReport synthetic = perfscope::make_counter_report("synthetic", counts, 0, 1);
  std::fputs(synthetic.table().c_str(), stdout);
  bool scaled = synthetic.value("cycles") == 4000 && synthetic.metrics[1]->value == 3.0;
  return scaled ? 0 : 1;
}
