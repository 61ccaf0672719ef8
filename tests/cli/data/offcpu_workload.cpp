// Known answers for off-CPU profiling.
//   offcpu_workload phases MS [wait]: (with wait, once a byte comes on stdin) the main thread
//     spins MS ms in spin_phase, sleeps 2*MS ms in
//     sleep_phase (nanosleep) and blocks MS ms in read_phase reading a pipe that a thread named
//     "feeder" (started first, waiting for the read phase) writes MS ms late; it prints "measured
//     spin_ns sleep_ns read_ns" (CLOCK_MONOTONIC).
//   offcpu_workload mutex MS: a thread named "holder" takes a mutex and keeps it MS ms (sleeping);
//     the main thread then waits for it in waiter_lock_site; prints "measured wait_ns".
//   offcpu_workload pingpong N: two threads pass a byte back and forth over two pipes N times
//     (4 blocking switches a round trip, bench/offcpu_benchmark.sh); prints "measured elapsed_ns".
#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// Not inlined, for the reason sleep_ms is not: libc's clock_gettime and the vDSO keep no frame
// pointer, and a frame-pointer walk from a sample in them skips a frame. This one is then the
// frame skipped, never spin_phase (8 % of spin_phase's samples showed as main's in a CI run).
__attribute__((noinline)) std::uint64_t now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(t.tv_nsec);
}

// Not inlined: libc's clock_nanosleep keeps no frame pointer, so a frame-pointer walk from it
// skips its direct caller; this one is then the frame skipped, never sleep_phase.
__attribute__((noinline)) void sleep_ms(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1000000L};
  while (::nanosleep(&t, &t) != 0) {
  }
}

volatile unsigned long spin_sink;
int pipe_fds[2];
int start_fds[2];  // the feeder waits here until the read phase begins
long delay_ms = 100;
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
volatile bool held = false;

extern "C" __attribute__((noinline)) void spin_phase(long ms) {
  std::uint64_t until = now_ns() + static_cast<std::uint64_t>(ms) * 1000000ULL;
  while (now_ns() < until) {
    for (int i = 0; i < 1000; ++i) spin_sink = spin_sink + static_cast<unsigned long>(i);
  }
}

extern "C" __attribute__((noinline)) void sleep_phase(long ms) { sleep_ms(ms); }

void* feeder(void*) {
  ::prctl(PR_SET_NAME, "feeder");
  char go = 0;
  if (::read(start_fds[0], &go, 1) != 1) std::abort();
  sleep_ms(delay_ms);
  char byte = 'x';
  if (::write(pipe_fds[1], &byte, 1) != 1) std::abort();
  return nullptr;
}

// Frame-pointer call chains lose the caller of a libc function that keeps no frame (read's
// wrapper): this frame is the one lost, read_phase stays.
extern "C" __attribute__((noinline)) ssize_t read_byte(char* byte) {
  ssize_t n = ::read(pipe_fds[0], byte, 1);
  asm volatile("" ::: "memory");  // no tail call
  return n;
}

extern "C" __attribute__((noinline)) void read_phase() {
  char byte = 0;
  if (read_byte(&byte) != 1) std::abort();
}

// pingpong: answers each byte on start_fds with one on pipe_fds until start_fds closes.
void* ponger(void*) {
  char byte = 0;
  while (::read(start_fds[0], &byte, 1) == 1) {
    if (::write(pipe_fds[1], &byte, 1) != 1) std::abort();
  }
  return nullptr;
}

void* holder(void*) {
  ::prctl(PR_SET_NAME, "holder");
  pthread_mutex_lock(&lock);
  held = true;
  sleep_ms(delay_ms);
  pthread_mutex_unlock(&lock);
  return nullptr;
}

extern "C" __attribute__((noinline)) void waiter_lock_site() {
  pthread_mutex_lock(&lock);
  pthread_mutex_unlock(&lock);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: offcpu_workload phases|mutex MS\n");
    return 2;
  }
  delay_ms = std::atol(argv[2]);
  if (std::strcmp(argv[1], "phases") == 0) {
    if (::pipe(pipe_fds) != 0 || ::pipe(start_fds) != 0) return 1;
    pthread_t thread;
    pthread_create(&thread, nullptr, feeder, nullptr);
    // "phases MS wait": the phases start once a byte comes on stdin (a recorder attached).
    char go = 0;
    if (argc > 3 && std::strcmp(argv[3], "wait") == 0 && ::read(0, &go, 1) != 1) return 1;
    std::uint64_t t0 = now_ns();
    spin_phase(delay_ms);
    std::uint64_t t1 = now_ns();
    sleep_phase(2 * delay_ms);
    std::uint64_t t2 = now_ns();
    if (::write(start_fds[1], "g", 1) != 1) return 1;
    read_phase();
    std::uint64_t t3 = now_ns();
    pthread_join(thread, nullptr);
    std::printf("measured %llu %llu %llu\n", static_cast<unsigned long long>(t1 - t0),
                static_cast<unsigned long long>(t2 - t1), static_cast<unsigned long long>(t3 - t2));
    return 0;
  }
  if (std::strcmp(argv[1], "pingpong") == 0) {
    if (::pipe(pipe_fds) != 0 || ::pipe(start_fds) != 0) return 1;
    pthread_t thread;
    pthread_create(&thread, nullptr, ponger, nullptr);
    std::uint64_t t0 = now_ns();
    char byte = 'p';
    for (long i = 0; i < delay_ms; ++i) {
      if (::write(start_fds[1], &byte, 1) != 1 || ::read(pipe_fds[0], &byte, 1) != 1) return 1;
    }
    std::uint64_t t1 = now_ns();
    ::close(start_fds[1]);
    pthread_join(thread, nullptr);
    std::printf("measured %llu\n", static_cast<unsigned long long>(t1 - t0));
    return 0;
  }
  if (std::strcmp(argv[1], "mutex") == 0) {
    pthread_t thread;
    pthread_create(&thread, nullptr, holder, nullptr);
    while (!held) sleep_ms(1);
    std::uint64_t t0 = now_ns();
    waiter_lock_site();
    std::uint64_t t1 = now_ns();
    pthread_join(thread, nullptr);
    std::printf("measured %llu\n", static_cast<unsigned long long>(t1 - t0));
    return 0;
  }
  return 2;
}
