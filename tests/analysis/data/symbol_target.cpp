// The program the symbolizer tests read (never run by them): C++ functions in a namespace, a
// template, and an always-inlined function called from a noinline one, built -O2 -g. Comments
// with "marker:" name lines the tests look up in this file to know the exact lines to expect.
// The exception thrown in main calls a C++ library function through the PLT; the ifunc
// symtest_pick is called through an IRELATIVE PLT slot, and __cxa_finalize (as in every PIE)
// through .plt.got.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace symtest {

// All on one line: every row of the line table for it names this line.
[[gnu::noinline]] int first_line(int value) { return value * 7 + 1; }  // marker:first-line

[[gnu::noinline]] int compute(int value) {  // marker:compute
  int sum = 0;
  for (int i = 0; i < value; ++i) sum += i * value;
  return sum;
}

template <typename T>
[[gnu::noinline]] T scaled(T value, T factor) {
  return value * factor + static_cast<T>(3);
}

[[gnu::always_inline]] inline int mix(int value) {
  int result = value;
  for (int round = 0; round < value % 7 + 3; ++round) {
    result = result * 31 + (result >> 3);  // marker:mix-body
  }
  return result;
}

[[gnu::noinline]] int outer(int value) {
  int mixed = mix(value);  // marker:outer-call
  return mixed ^ (value << 2);
}

}  // namespace symtest

extern "C" {
[[gnu::noinline]] int symtest_pick_plain(int value) { return value * 5 + (value >> 2); }
// Not static: clang looks the resolver up by its symbol name.
int (*resolve_symtest_pick())(int) { return symtest_pick_plain; }
[[gnu::ifunc("resolve_symtest_pick")]] int symtest_pick(int value);
}

int main(int argc, char** argv) {
  int value = argc > 1 ? std::atoi(argv[1]) : 5;
  long total = symtest::compute(value) + symtest::scaled<long>(value, 9) + symtest::outer(value);
  total += symtest::first_line(value) + symtest_pick(value);
  if (argc > 3) throw std::runtime_error("symbol_target takes one argument");
  std::printf("%ld\n", total);
  return 0;
}
