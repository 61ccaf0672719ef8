// self_inlined_workload N: fib(N), which GCC -O2 inlines into itself several levels deep (its
// DWARF has fib inlined in fib inlined in fib).
#include <cstdio>
#include <cstdlib>
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char** argv) {
  std::printf("%d\n", fib(argc > 1 ? std::atoi(argv[1]) : 36));
  return 0;
}
