// Known answers for the stacks that frame pointers alone get wrong (issue #30). Built with frame
// pointers; the libc functions it calls keep none, so the kernel's frame-pointer walk from a
// sample inside them skips their caller.
//   stack_gaps_workload waits MS: this process and a forked child each wait MS ms in
//     sleep_part (nanosleep, called directly) and MS ms in pipe_part (read, called directly, of a
//     pipe that a helper thread writes MS ms later); each prints "waited SLEEP_NS PIPE_NS", and
//     the parent "measured" when both are done.
//   stack_gaps_workload leaves MS: for MS ms, scan_part runs strlen over 256 KiB and copy_part
//     memcpy over 256 KiB, in turn.
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr std::size_t buffer_size = 256 * 1024;
char* text;
char* copy;
volatile std::size_t sink;
long delay_ms = 100;
int pipe_fds[2];

double seconds_now() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

extern "C" __attribute__((noinline)) void sleep_part(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1000000L};
  while (::nanosleep(&t, &t) != 0) {
  }
  asm volatile("" ::: "memory");  // no tail call: the frame stays
}

extern "C" __attribute__((noinline)) void pipe_part() {
  char byte = 0;
  if (::read(pipe_fds[0], &byte, 1) != 1) std::abort();
  asm volatile("" ::: "memory");
}

void* writer(void*) {
  timespec t{delay_ms / 1000, (delay_ms % 1000) * 1000000L};
  while (::nanosleep(&t, &t) != 0) {
  }
  if (::write(pipe_fds[1], "x", 1) != 1) std::abort();
  return nullptr;
}

// Prints "waited SLEEP_NS PIPE_NS": how long this process spent in each (its own clock).
void wait_both() {
  if (::pipe(pipe_fds) != 0) std::abort();
  double start = seconds_now();
  sleep_part(delay_ms);
  double slept = seconds_now();
  pthread_t thread;
  pthread_create(&thread, nullptr, writer, nullptr);
  pipe_part();
  double read = seconds_now();
  pthread_join(thread, nullptr);
  std::printf("waited %.0f %.0f\n", (slept - start) * 1e9, (read - slept) * 1e9);
  std::fflush(stdout);
}

extern "C" __attribute__((noinline)) void scan_part() {
  sink = sink + std::strlen(text);
  asm volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void copy_part() {
  std::memcpy(copy, text, buffer_size);
  asm volatile("" ::: "memory");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: stack_gaps_workload waits|leaves MS\n");
    return 2;
  }
  delay_ms = std::atol(argv[2]);
  if (std::strcmp(argv[1], "waits") == 0) {
    pid_t child = ::fork();
    if (child < 0) return 1;
    wait_both();
    if (child == 0) std::_Exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    std::printf("measured\n");
    return 0;
  }
  if (std::strcmp(argv[1], "leaves") == 0) {
    text = static_cast<char*>(std::malloc(buffer_size + 1));
    copy = static_cast<char*>(std::malloc(buffer_size + 1));
    std::memset(text, 'a', buffer_size);
    text[buffer_size] = 0;
    double until = seconds_now() + static_cast<double>(delay_ms) / 1000;
    while (seconds_now() < until) {
      scan_part();
      copy_part();
    }
    std::printf("measured\n");
    return 0;
  }
  return 2;
}
