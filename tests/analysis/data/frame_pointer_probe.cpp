// Built twice by tests/CMakeLists.txt, with and without frame pointers, so that
// frame_pointer_check_test can read the prologues of the fp_probe_* functions. Never run.
//
// Every fp_probe_* function makes a call whose result it still uses: GCC drops the frame pointer
// of leaf functions that need no stack frame even under -fno-omit-frame-pointer, and a tail call
// needs none either. The fp_leaf_* helpers are such leaves; the test leaves them out.
#include <cstdio>
#include <cstdlib>

extern "C" {

__attribute__((noinline)) long fp_leaf_weight(long value, int position) {
  return value * (position + 1) + (value >> 3);
}

__attribute__((noinline)) long fp_leaf_next(long seed) {
  return seed * 6364136223846793005L + 1442695040888963407L;
}

__attribute__((noinline)) long fp_probe_sum(const long* values, int count) {
  long total = 0;
  for (int i = 0; i < count; ++i) total += fp_leaf_weight(values[i], i);
  return total + 1;
}

__attribute__((noinline)) long fp_probe_max(const long* values, int count) {
  long best = fp_leaf_weight(values[0], 0);
  for (int i = 1; i < count; ++i) {
    long weighted = fp_leaf_weight(values[i], i);
    best = weighted > best ? weighted : best;
  }
  return best - 1;
}

__attribute__((noinline)) void fp_probe_fill(long* values, int count, long seed) {
  for (int i = 0; i < count; ++i) {
    seed = fp_leaf_next(seed);
    values[i] = seed >> 33;
  }
}

__attribute__((noinline)) long fp_probe_scaled(const long* values, int count, long factor) {
  return fp_probe_sum(values, count) * factor + fp_probe_max(values, count / 2 + 1);
}

__attribute__((noinline)) long fp_probe_fib(int n) {
  return n < 2 ? n : fp_probe_fib(n - 1) + fp_probe_fib(n - 2);
}

__attribute__((noinline)) int fp_probe_print(long value, const char* label) {
  int written = std::printf("%s: %ld\n", label, value);
  return written + 1;
}

__attribute__((noinline)) long fp_probe_pipeline(int count, long seed) {
  long values[64];
  if (count > 64) count = 64;
  fp_probe_fill(values, count, seed);
  long result = fp_probe_scaled(values, count, 3) ^ fp_probe_fib(count % 20);
  return result + fp_probe_print(result, "pipeline");
}

}  // extern "C"

int main(int argc, char** argv) {
  long seed = argc > 1 ? std::atol(argv[1]) : 42;
  return static_cast<int>(fp_probe_pipeline(argc * 16, seed) & 1);
}
