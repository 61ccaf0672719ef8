/* The work done in a SIGPROF handler: samples taken there have the signal trampoline
   (__restore_rt) between the handler and the interrupted code. Runs for argv[1] ms of CPU. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile unsigned long long sink;

__attribute__((noinline)) static void handler_work(void) {
  unsigned long long x = sink;
  for (int i = 0; i < 1000000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  sink = x;
}

static void on_signal(int signal_number) {
  (void)signal_number;
  handler_work();
}

__attribute__((noinline)) static void main_work(void) {
  unsigned long long x = sink;
  for (int i = 0; i < 1000; ++i) x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15ULL;
  sink = x;
}

int main(int argc, char** argv) {
  long milliseconds = argc > 1 ? atol(argv[1]) : 1000;
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;
  sigaction(SIGPROF, &action, NULL);
  struct itimerval every = {{0, 2000}, {0, 2000}};
  setitimer(ITIMER_PROF, &every, NULL);
  struct timespec start, now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
  do {
    main_work();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 <
           milliseconds);
  return 0;
}
