// Whole-process counting: threads that exist before the counters and threads created later.
#include <atomic>
#include <cstdio>
#include <perfscope/embed/counters.hpp>
#include <thread>

int main() {
  std::atomic<bool> go{false};
  auto spin = [&go] {
    while (!go) std::this_thread::yield();
    volatile double x = 0;
    for (int i = 0; i < 2'000'000; ++i) x = x + 1.0;
  };
  std::thread existing(spin);  // created before the counters open

  perfscope::CountersOptions options;
  options.scope = perfscope::CountersScope::process;
  perfscope::Counters counters("task-clock,context-switches", options);
  counters.start();
  go = true;
  std::thread later(spin);  // created while counting
  existing.join();
  later.join();
  counters.stop();

  auto report = counters.report();
  std::fputs(report.table().c_str(), stdout);
  return report.value("task-clock") > 0 ? 0 : 1;
}
