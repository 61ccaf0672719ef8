// Live reads while counting: no allocation, no exception, user space where the kernel allows.
#include <array>
#include <cstdio>
#include <perfscope/embed/counters.hpp>

int main() {
  perfscope::Counters counters("instructions,cycles,task-clock");
  std::array<perfscope::Reading, 3> now{};
  counters.start();
  for (int step = 0; step < 3; ++step) {
    volatile long sum = 0;
    for (int i = 0; i < 1'000'000; ++i) sum = sum + i;
    perfscope::LiveRead read = counters.read_into(now);
    if (read.status != perfscope::ReadStatus::ok) return 1;
    perfscope::ScaledCount task_clock = perfscope::scale(now[2]);
    std::printf("step %d: task-clock %.0f ns (%s, %.0f %% running)\n", step, task_clock.value,
                perfscope::read_path_name(read.path).data(), 100 * task_clock.fraction_running);
  }
  counters.stop();
  std::string_view why = counters.syscall_reason(0);
  if (!why.empty()) std::printf("instructions take read(2): %s\n", why.data());
  return 0;
}
