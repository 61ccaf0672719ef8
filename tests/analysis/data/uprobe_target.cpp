// A program for uprobe tests: calls counted_call() exactly argv[1] times.
#include <cstdlib>

extern "C" [[gnu::noinline]] int counted_call(int value) {
  asm volatile("" : "+r"(value));  // keeps the call and its body
  return value + 1;
}

int main(int argc, char** argv) {
  int times = argc > 1 ? std::atoi(argv[1]) : 0;
  int value = 0;
  for (int i = 0; i < times; ++i) value = counted_call(value);
  return value == times ? 0 : 1;
}
