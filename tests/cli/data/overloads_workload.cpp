// overloads_workload MS: two overloads of work::spin, which print the same short name; the
// integer one runs about six times as long as the floating-point one.
#include <cstdio>
#include <cstdlib>
namespace work {
__attribute__((noinline)) unsigned long spin(unsigned long n) {
  unsigned long s = 0;
  for (unsigned long i = 0; i < n; ++i) s += i ^ (s >> 2);
  return s;
}
__attribute__((noinline)) double spin(double n) {
  double s = 0;
  for (double i = 0; i < n; i += 1) s += i * 0.5;
  return s;
}
}  // namespace work
int main(int argc, char** argv) {
  long ms = argc > 1 ? std::atol(argv[1]) : 300;
  unsigned long a = work::spin(static_cast<unsigned long>(ms) * 600000UL);
  double b = work::spin(static_cast<double>(ms) * 100000.0);
  std::printf("%lu %f\n", a, b);
}
