// A program that keeps creating and ending threads, for the fault and load tests:
//   thread_churn [--live N] [--churn-ms MS | --churn-until-signal] [--spinners M]
//                [--spin-us US] [--tids FILE] [--gate]
// It prints "ready" first. Churn phase: N threads alive at a time, each ending at once and
// replaced by a new one, for MS milliseconds or until SIGUSR1 (tids come and go all the time).
// Spinner phase: M threads, N alive at a time, each spinning exactly US microseconds of its own
// CPU time; their tids go to FILE, one a line. Last it prints
// "spinners=M spin_us=US churned=C cpu_us=T" (T: the process's user+system time, all threads).
// --gate: every spinner waits, once all M exist ("spinners ready"), for SIGUSR2 before it spins
// (M <= N: all alive at once), so that a recorder attached before the signal sees each one.
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::atomic<bool> stop_churn{false};
void on_usr1(int) { stop_churn.store(true); }
std::atomic<bool> gate_open{true};
std::atomic<long> at_gate{0};
long gated_spinners = 0;
void on_usr2(int) { gate_open.store(true); }

long long thread_cpu_us() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<long long>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
}

long long monotonic_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

struct Spinner {
  long long spin_us = 0;
  pid_t tid = 0;
};

void* spin(void* arg) {
  auto* spinner = static_cast<Spinner*>(arg);
  spinner->tid = static_cast<pid_t>(::syscall(SYS_gettid));
  if (!gate_open.load()) {
    if (at_gate.fetch_add(1) + 1 == gated_spinners) {
      std::printf("spinners ready\n");
      std::fflush(stdout);
    }
    while (!gate_open.load()) ::usleep(1000);
  }
  long long until = thread_cpu_us() + spinner->spin_us;
  while (thread_cpu_us() < until) {
  }
  return nullptr;
}

void* end_at_once(void*) { return nullptr; }

// Runs `count` threads of `body`, at most `live` at a time (the oldest is joined to make room).
// `next` gives each thread's argument; stops early when `keep_going` says so.
template <class Next, class KeepGoing>
long run_threads(long count, long live, void* (*body)(void*), Next next, KeepGoing keep_going) {
  std::vector<pthread_t> ring(static_cast<std::size_t>(live));
  std::vector<bool> used(static_cast<std::size_t>(live), false);
  long started = 0;
  for (; (count < 0 || started < count) && keep_going(); ++started) {
    std::size_t slot = static_cast<std::size_t>(started % live);
    if (used[slot]) pthread_join(ring[slot], nullptr);
    if (pthread_create(&ring[slot], nullptr, body, next(started)) != 0) {
      std::perror("pthread_create");
      std::exit(1);
    }
    used[slot] = true;
  }
  for (std::size_t slot = 0; slot < ring.size(); ++slot) {
    if (used[slot]) pthread_join(ring[slot], nullptr);
  }
  return started;
}

}  // namespace

int main(int argc, char** argv) {
  long live = 8, spinners = 0, churn_ms = 0, spin_us = 1000;
  bool until_signal = false, gate = false;
  const char* tids_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "thread_churn: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--live") {
      live = std::atol(value());
    } else if (arg == "--churn-ms") {
      churn_ms = std::atol(value());
    } else if (arg == "--churn-until-signal") {
      until_signal = true;
    } else if (arg == "--spinners") {
      spinners = std::atol(value());
    } else if (arg == "--spin-us") {
      spin_us = std::atol(value());
    } else if (arg == "--gate") {
      gate = true;
    } else if (arg == "--tids") {
      tids_path = value();
    } else {
      std::fprintf(stderr, "thread_churn: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  if (live < 1) live = 1;
  if (until_signal) {
    struct sigaction action {};
    action.sa_handler = on_usr1;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGUSR1, &action, nullptr);
  }
  if (gate) {
    if (live < spinners) live = spinners;
    gated_spinners = spinners;
    gate_open.store(false);
    struct sigaction action {};
    action.sa_handler = on_usr2;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGUSR2, &action, nullptr);
  }
  std::printf("ready\n");
  std::fflush(stdout);

  long churned = 0;
  if (until_signal || churn_ms > 0) {
    long long end = monotonic_ms() + churn_ms;
    churned = run_threads(
        -1, live, end_at_once, [](long) -> void* { return nullptr; },
        [&] { return until_signal ? !stop_churn.load() : monotonic_ms() < end; });
  }

  std::vector<Spinner> threads(static_cast<std::size_t>(spinners));
  for (auto& thread : threads) thread.spin_us = spin_us;
  run_threads(
      spinners, live, spin,
      [&](long index) -> void* { return &threads[static_cast<std::size_t>(index)]; },
      [] { return true; });

  if (tids_path != nullptr) {
    std::FILE* out = std::fopen(tids_path, "w");
    if (out == nullptr) {
      std::perror(tids_path);
      return 1;
    }
    for (const auto& thread : threads) std::fprintf(out, "%d\n", thread.tid);
    std::fclose(out);
  }
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  long long cpu_us = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000LL +
                     usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
  std::printf("spinners=%ld spin_us=%ld churned=%ld cpu_us=%lld\n", spinners, spin_us, churned,
              cpu_us);
  return 0;
}
