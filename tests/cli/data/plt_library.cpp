// The shared library plt_label_workload calls through its PLT: a function short enough that the
// stub it is reached through gets a share of its own.
extern "C" __attribute__((noinline)) unsigned long library_step(unsigned long x) {
  return x * 3 + 1;
}
