// A workload whose call trees have the shapes perf report's --children output treats specially:
// a function with both self time and a callee (outer: 2 units itself, 2 in inner), and a
// recursion with self time at each of its three levels (recurse); and a loop behind an untyped
// local assembly label (as ld.so's _start and _dl_start_user are), which perf names.
// Built with frame pointers.
//
//   call_tree_workload [ROUNDS]   (default 200)
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#if defined(__clang__)
#define CALL_TREE_NOINLINE __attribute__((noinline))
#else
#define CALL_TREE_NOINLINE __attribute__((noipa))
#endif

namespace {

constexpr std::uint64_t unit = 400000;  // iterations of one unit of work
volatile std::uint64_t sink;

std::uint64_t spin(std::uint64_t x, std::uint64_t units, std::uint64_t salt) {
  for (std::uint64_t i = 0; i < units * unit; ++i) {
    x = x * 6364136223846793005ULL + salt;
    asm volatile("" : "+r"(x));
  }
  return x;
}

}  // namespace

extern "C" {

// Called before each loop so that the loop runs inside the function's frame (see
// known_answer.cpp: leaf functions and shrink-wrapping lose callers from fp chains otherwise).
CALL_TREE_NOINLINE std::uint64_t settle(std::uint64_t x) { return x ^ (x >> 17); }

CALL_TREE_NOINLINE std::uint64_t inner(std::uint64_t units) {
  return spin(settle(units), units, 1442695040888963407ULL);
}

CALL_TREE_NOINLINE void outer() {
  std::uint64_t x = spin(settle(2), 2, 1442695040888963409ULL);
  sink = sink + inner(2) + x;
}

// The store after the call keeps it from becoming a loop (no tail recursion).
CALL_TREE_NOINLINE std::uint64_t recurse(int depth) {
  std::uint64_t x = spin(settle(static_cast<std::uint64_t>(depth)), 1, 1442695040888963411ULL);
  if (depth > 0) sink = sink + recurse(depth - 1);
  return x;
}

// No .type and no .globl: a NOTYPE LOCAL symbol in .text.
std::uint64_t call_tree_label(std::uint64_t iterations);
asm(R"(
  .text
  .p2align 4
call_tree_label:
  mov %rdi, %rax
1:
  dec %rax
  jnz 1b
  ret
)");

}  // extern "C"

int main(int argc, char** argv) {
  long rounds = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 200;
  for (long round = 0; round < rounds; ++round) {
    outer();
    sink = sink + recurse(2);
    sink = sink + call_tree_label(4 * unit);
  }
  std::printf("call_tree_workload: %llu\n", static_cast<unsigned long long>(sink));
  return 0;
}
