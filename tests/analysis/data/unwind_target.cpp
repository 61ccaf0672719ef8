// The dwarf unwinder's known-answer program: main -> outer_fn -> middle_fn -> leaf_fn, where
// leaf_fn spins for about 0.3 s of CPU. Built without frame pointers, so only CFI can walk it.
#include <time.h>

#include <cstdint>

namespace {

double cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace

// volatile: the loop is neither folded nor hoisted out of leaf_fn.
volatile std::uint64_t sink = 0;

extern "C" __attribute__((noinline)) std::uint64_t leaf_fn(double seconds) {
  double start = cpu_seconds();
  std::uint64_t rounds = 0;
  do {
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<std::uint64_t>(i);
    ++rounds;
  } while (cpu_seconds() - start < seconds);
  return rounds;
}

// The additions after each call keep them from being tail calls: every frame stays on the stack.
extern "C" __attribute__((noinline)) std::uint64_t middle_fn(double seconds) {
  return leaf_fn(seconds) + sink;
}

extern "C" __attribute__((noinline)) std::uint64_t outer_fn(double seconds) {
  return middle_fn(seconds) * 3 + sink;
}

int main(int argc, char**) {
  // argc keeps the argument opaque to the optimizer.
  return outer_fn(0.25 + 0.05 * argc) == 0 ? 1 : 0;
}
