// Workloads with known scheduler behaviour for the `perfscope sched` tests.
//
//   sched_workload split SPIN_MS SLEEP_MS   a thread that runs SPIN_MS of CPU time, sleeps
//                                           SLEEP_MS in nanosleep (then 1 ms), runs SPIN_MS again;
//                                           prints "tid N" for it
//   sched_workload pingpong ROUNDS          two threads passing a byte back and forth through
//                                           two pipes ROUNDS times: two switches per round
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

long thread_id() { return syscall(SYS_gettid); }

double thread_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

// Runs until this thread has had `ms` more of CPU time, however long that takes on a busy
// machine.
void spin(long ms) {
  double until = thread_cpu_ms() + static_cast<double>(ms);
  volatile unsigned long sink = 0;
  while (thread_cpu_ms() < until) {
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<unsigned long>(i);
  }
}

struct Split {
  long spin_ms = 0, sleep_ms = 0;
};

void* split_thread(void* argument) {
  const auto* split = static_cast<const Split*>(argument);
  std::printf("tid %ld\n", thread_id());
  std::fflush(stdout);
  spin(split->spin_ms);
  timespec pause{split->sleep_ms / 1000, (split->sleep_ms % 1000) * 1000000};
  timespec before{}, after{};
  clock_gettime(CLOCK_MONOTONIC, &before);
  while (nanosleep(&pause, &pause) != 0) {
  }
  clock_gettime(CLOCK_MONOTONIC, &after);
  // The sleep as the wall clock saw it: on a loaded machine the wake-up can come late.
  std::printf("slept_ms %.3f\n", static_cast<double>(after.tv_sec - before.tv_sec) * 1e3 +
                                     static_cast<double>(after.tv_nsec - before.tv_nsec) / 1e6);
  std::fflush(stdout);
  // A switch-out of its own right after the wake-up: the row that shows the sleep as its wait.
  // The thread's last switch-out is its exit, which the kernel reports for tid -1.
  timespec brief{0, 1000000};
  nanosleep(&brief, nullptr);
  spin(split->spin_ms);
  return nullptr;
}

int pipes[2][2];
long rounds = 0;

void* pong_thread(void*) {
  char byte = 0;
  for (long i = 0; i < rounds; ++i) {
    if (read(pipes[0][0], &byte, 1) != 1 || write(pipes[1][1], &byte, 1) != 1) return nullptr;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "split") == 0) {
    Split split{std::strtol(argv[2], nullptr, 10), std::strtol(argv[3], nullptr, 10)};
    pthread_t thread;
    if (pthread_create(&thread, nullptr, split_thread, &split) != 0) return 1;
    pthread_join(thread, nullptr);
    return 0;
  }
  if (argc >= 3 && std::strcmp(argv[1], "pingpong") == 0) {
    rounds = std::strtol(argv[2], nullptr, 10);
    if (pipe(pipes[0]) != 0 || pipe(pipes[1]) != 0) return 1;
    pthread_t thread;
    if (pthread_create(&thread, nullptr, pong_thread, nullptr) != 0) return 1;
    char byte = 'x';
    for (long i = 0; i < rounds; ++i) {
      if (write(pipes[0][1], &byte, 1) != 1 || read(pipes[1][0], &byte, 1) != 1) return 1;
    }
    pthread_join(thread, nullptr);
    return 0;
  }
  std::fprintf(stderr, "usage: sched_workload split SPIN_MS SLEEP_MS | pingpong ROUNDS\n");
  return 2;
}
