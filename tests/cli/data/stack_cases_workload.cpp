// The cases a stack unwound while recording must get right or leave to the report (issue #30),
// built without frame pointers so that only DWARF finds the callers:
//   (MS: ms of the thread's CPU time)
//   stack_cases_workload dlopen LIB MS: loads LIB (stack_plugin) now and spins MS ms in its
//     plugin_spin, called from plugin_part;
//   stack_cases_workload vdso MS: vdso_part reads the clock through the vDSO for MS ms;
//   stack_cases_workload signal MS: signal_part raises SIGUSR1, whose handler on_signal spins MS
//     ms in handler_spin (the stack goes through the kernel's signal frame);
//   stack_cases_workload exits MS: a child spins MS ms in child_part and exits, then the parent
//     spins MS ms in parent_part.
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

volatile unsigned long sink;
long spin_ms = 200;

// The thread's CPU time, not the wall clock: MS ms of work gives the same samples however busy
// the machine is (on the wall clock, a run beside a compile and the sanitizer build got 99
// cpu-clock samples where the test needs more than 100).
double seconds_now() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

}  // namespace

extern "C" __attribute__((noinline)) void spin_for(long ms) {
  double until = seconds_now() + static_cast<double>(ms) / 1000;
  while (seconds_now() < until) {
    for (int i = 0; i < 10000; ++i) sink = sink + static_cast<unsigned long>(i);
  }
}

extern "C" __attribute__((noinline)) void plugin_part(const char* library) {
  void* handle = ::dlopen(library, RTLD_NOW);
  if (handle == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", library, ::dlerror());
    std::exit(1);
  }
  auto spin = reinterpret_cast<void (*)(long)>(::dlsym(handle, "plugin_spin"));
  if (spin == nullptr) std::exit(1);
  spin(spin_ms);
  asm volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void vdso_part() {
  double until = seconds_now() + static_cast<double>(spin_ms) / 1000;
  timespec t{};
  while (seconds_now() < until) {
    for (int i = 0; i < 100; ++i) ::clock_gettime(CLOCK_MONOTONIC, &t);
  }
  asm volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void handler_spin() {
  spin_for(spin_ms);
  asm volatile("" ::: "memory");
}

extern "C" void on_signal(int) {
  handler_spin();
  asm volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void signal_part() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  ::sigaction(SIGUSR1, &action, nullptr);
  ::raise(SIGUSR1);
  asm volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void child_part() {
  spin_for(spin_ms);
  asm volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void parent_part() {
  spin_for(spin_ms);
  asm volatile("" ::: "memory");
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: stack_cases_workload dlopen LIB MS | vdso|signal|exits MS\n");
    return 2;
  }
  if (std::strcmp(argv[1], "dlopen") == 0 && argc > 3) {
    spin_ms = std::atol(argv[3]);
    plugin_part(argv[2]);
  } else if (std::strcmp(argv[1], "vdso") == 0) {
    spin_ms = std::atol(argv[2]);
    vdso_part();
  } else if (std::strcmp(argv[1], "signal") == 0) {
    spin_ms = std::atol(argv[2]);
    signal_part();
  } else if (std::strcmp(argv[1], "exits") == 0) {
    spin_ms = std::atol(argv[2]);
    pid_t child = ::fork();
    if (child == 0) {
      child_part();
      std::_Exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    parent_part();
  } else {
    return 2;
  }
  std::printf("measured\n");
  return 0;
}
