// A deep call stack for the viewer's first screen (issue #48): `descend` calls itself DEPTH times
// (default 300, beyond the kernel's 127-frame call chains) and spins at the bottom for about
// MILLISECONDS (default 300). With "phases MS": phase_a spins MS, then phase_b MS (the stack
// chart's order in time). Frame pointers throughout, so -g records whole chains.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

volatile std::uint64_t sink = 0;

__attribute__((noinline)) void spin(long milliseconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
  std::uint64_t x = 88172645463325252ULL;
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 1000; ++i) x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    sink = sink + x;
  }
}

// The store after the call keeps it from becoming a loop (no tail recursion).
__attribute__((noinline)) void descend(int depth, long milliseconds) {
  if (depth == 0) {
    spin(milliseconds);
  } else {
    descend(depth - 1, milliseconds);
  }
  sink = sink + 1;
}

__attribute__((noinline)) void phase_a(long milliseconds) {
  spin(milliseconds);
  sink = sink + 1;
}

// Not phase_a's code (identical functions are folded into one at -O2).
__attribute__((noinline)) void phase_b(long milliseconds) {
  spin(milliseconds);
  sink = sink + 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::strcmp(argv[1], "phases") == 0) {
    long milliseconds = std::atol(argv[2]);
    phase_a(milliseconds);
    phase_b(milliseconds);
    return 0;
  }
  int depth = argc > 1 ? std::atoi(argv[1]) : 300;
  long milliseconds = argc > 2 ? std::atol(argv[2]) : 300;
  descend(depth, milliseconds);
  return 0;
}
