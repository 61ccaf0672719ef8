// A workload whose CPU profile is known by construction: each round, work_60, work_30 and
// work_10 call their own leaf loop for 6, 3 and 1 units of the same work, so the leaves take
// 60 %, 30 % and 10 % of the samples and each leaf's only caller is its work_ function.
// Built with and without frame pointers (tests/CMakeLists.txt).
//
//   known_answer [ROUNDS [A,B,C]]   (default 400 rounds: about one second here)
//
// A,B,C give work_60, work_30 and work_10 other units of work per round (default 6,3,1): `perfscope
// diff` tests compare a 6,3,1 recording with a 3,6,1 one (leaf_60 30 points down, leaf_30 up).
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

#ifdef KNOWN_ANSWER_REBUILT
// The "rebuilt" binary of the diff tests (same file name, other directory): code ahead of the
// leaves moves their addresses, and the build id differs, as after a real rebuild.
KNOWN_ANSWER_NOINLINE std::uint64_t rebuilt_padding(std::uint64_t x) {
  for (int i = 0; i < 64; ++i) x = step(x, static_cast<std::uint64_t>(i) * 977);
  return x ^ (x >> 29) ^ (x << 7);
}
#endif

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
KNOWN_ANSWER_NOINLINE void work_60(std::uint64_t units) { sink = sink + leaf_60(units); }
KNOWN_ANSWER_NOINLINE void work_30(std::uint64_t units) { sink = sink + leaf_30(units); }
KNOWN_ANSWER_NOINLINE void work_10(std::uint64_t units) { sink = sink + leaf_10(units); }

}  // extern "C"

int main(int argc, char** argv) {
  long rounds = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 400;
  unsigned long units[3] = {6, 3, 1};
  if (argc > 2 && std::sscanf(argv[2], "%lu,%lu,%lu", &units[0], &units[1], &units[2]) != 3) {
    std::fprintf(stderr, "known_answer: units are A,B,C (three whole numbers), not '%s'\n",
                 argv[2]);
    return 2;
  }
  for (long round = 0; round < rounds; ++round) {
    work_60(units[0]);
    work_30(units[1]);
    work_10(units[2]);
  }
  std::printf("known_answer: %llu\n", static_cast<unsigned long long>(sink));
  return 0;
}
