// Profile a region of this program: where its CPU time goes, by function and caller.
#include <cstdio>
#include <iostream>
#include <perfscope/embed/profiler.hpp>

__attribute__((noinline)) double slow_sum(int n) {
  volatile double sum = 0;
  for (int i = 0; i < n; ++i) sum = sum + i * 0.5;
  return sum;
}

int main() {
  perfscope::ProfilerOptions options;
  options.events = "cpu-clock";  // default: cycles where the PMU samples
  perfscope::Profiler profiler(options);
  {
    perfscope::ScopedProfile scope(profiler);  // start() here, stop() at the brace
    slow_sum(50'000'000);
  }
  profiler.write(std::cout, perfscope::ExportFormat::folded);            // "comm;...;slow_sum 546"
  profiler.write_file("profile.pb.gz", perfscope::ExportFormat::pprof);  // go tool pprof
  for (const auto& notice : profiler.notices()) std::printf("note: %s\n", notice.c_str());
  const auto& stats = profiler.stats();
  std::printf("%llu samples, %llu lost\n", static_cast<unsigned long long>(stats.samples),
              static_cast<unsigned long long>(stats.lost + stats.lost_samples));
  return stats.samples > 0 ? 0 : 1;
}
