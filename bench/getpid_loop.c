/* N getpid system calls (default 1,000,000) timed from inside: prints the loop's wall time in
 * ns, so a tracer's own start-up and teardown are not counted (bench/trace_overhead.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  long calls = argc > 1 ? atol(argv[1]) : 1000000;
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long i = 0; i < calls; ++i) syscall(SYS_getpid);
  clock_gettime(CLOCK_MONOTONIC, &end);
  long long ns = (end.tv_sec - start.tv_sec) * 1000000000LL + (end.tv_nsec - start.tv_nsec);
  fprintf(stderr, "loop_ns %lld\n", ns);
  return 0;
}
