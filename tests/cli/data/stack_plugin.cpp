// A library the stack-cases workload loads with dlopen while it is being recorded: its code
// appears in an MMAP record written mid-recording.
#include <time.h>

namespace {
volatile unsigned long plugin_sink;

// The thread's CPU time: the same work, so the same samples, on a busy machine.
double seconds_now() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}
}  // namespace

extern "C" __attribute__((noinline)) void plugin_spin(long ms) {
  double until = seconds_now() + static_cast<double>(ms) / 1000;
  while (seconds_now() < until) {
    for (int i = 0; i < 10000; ++i) plugin_sink = plugin_sink + static_cast<unsigned long>(i);
  }
}
