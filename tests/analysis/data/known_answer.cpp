// A workload whose CPU profile is known by construction: each round, work_60, work_30 and
// work_10 call their own leaf loop for 6, 3 and 1 units of the same work, so the leaves take
// 60 %, 30 % and 10 % of the samples and each leaf's only caller is its work_ function.
// Built with and without frame pointers (tests/CMakeLists.txt).
//
//   known_answer [ROUNDS]   (default 400: about one second here)
#include <cstdint>
#include <cstdio>
#include <cstdlib>

// noipa (GCC) also keeps identical-code folding from merging the leaves into one function.
#if defined(__clang__)
#define KNOWN_ANSWER_NOINLINE __attribute__((noinline))
#else
#define KNOWN_ANSWER_NOINLINE __attribute__((noipa))
#endif

namespace {

constexpr std::uint64_t unit = 400000;  // iterations of one unit of work
volatile std::uint64_t sink;

inline std::uint64_t step(std::uint64_t x, std::uint64_t salt) {
  x = x * 6364136223846793005ULL + salt;
  asm volatile("" : "+r"(x));  // one multiply-add per iteration, never vectorised or folded
  return x;
}

}  // namespace

extern "C" {

// Called first thing in each leaf loop: a function that calls nothing gets no frame pointer from
// GCC even with -mno-omit-leaf-frame-pointer, and clang sets up its frame only around a call
// (shrink-wrapping); a loop outside the frame loses its caller from fp call chains.
KNOWN_ANSWER_NOINLINE std::uint64_t settle(std::uint64_t x) { return x ^ (x >> 17); }

KNOWN_ANSWER_NOINLINE std::uint64_t leaf_60(std::uint64_t units) {
  std::uint64_t x = settle(units);
  for (std::uint64_t i = 0; i < units * unit; ++i) x = step(x, 1442695040888963407ULL);
  return x;
}

KNOWN_ANSWER_NOINLINE std::uint64_t leaf_30(std::uint64_t units) {
  std::uint64_t x = settle(units);
  for (std::uint64_t i = 0; i < units * unit; ++i) x = step(x, 1442695040888963409ULL);
  return x;
}

KNOWN_ANSWER_NOINLINE std::uint64_t leaf_10(std::uint64_t units) {
  std::uint64_t x = settle(units);
  for (std::uint64_t i = 0; i < units * unit; ++i) x = step(x, 1442695040888963411ULL);
  return x;
}

// Each adds to `sink` after its call: no tail call, so the caller's frame stays on the stack.
KNOWN_ANSWER_NOINLINE void work_60() { sink = sink + leaf_60(6); }
KNOWN_ANSWER_NOINLINE void work_30() { sink = sink + leaf_30(3); }
KNOWN_ANSWER_NOINLINE void work_10() { sink = sink + leaf_10(1); }

}  // extern "C"

int main(int argc, char** argv) {
  long rounds = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 400;
  for (long round = 0; round < rounds; ++round) {
    work_60();
    work_30();
    work_10();
  }
  std::printf("known_answer: %llu\n", static_cast<unsigned long long>(sink));
  return 0;
}
