// Named regions: every run of a scope adds to its name. RegionId skips the name lookup.
#include <cstdio>
#include <perfscope/embed/scoped_region.hpp>
#include <string>

int main() {
  perfscope::Counters counters("task-clock,context-switches,page-faults");
  perfscope::RegionId parse = counters.region("parse");
  std::string text;
  for (int i = 0; i < 100; ++i) {
    perfscope::ScopedRegion region(counters, parse);  // start: enable; end: disable, read, add
    text += std::to_string(i);
  }
  {
    perfscope::Region region(counters, "print");  // by name (looked up each time)
    std::puts(text.substr(0, 20).c_str());
  }
  std::fputs(perfscope::format_table(counters.region_reports()).c_str(), stdout);
  return counters.region_report("parse").runs == 100 ? 0 : 1;
}
