// A known set of system calls for `perfscope trace` tests: 1000 getpid, 10 openat of a missing
// file (ENOENT) and 5 one-byte writes to standard output, made with syscall(2) so that libc adds
// nothing. Linked statically: no dynamic loader, whose own openat calls would blur the counts.
//   syscall_workload [--thread] [--child] [--linger MS]
//     --thread  a second thread makes the same calls (after the main thread's)
//     --child   a forked child makes the same calls (after the threads')
//     --linger  sleep MS milliseconds first
//     --wait-stdin  read one byte from standard input first (a tracer attaches with -p meanwhile)
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace {

void known_calls() {
  for (int i = 0; i < 1000; ++i) ::syscall(SYS_getpid);
  for (int i = 0; i < 10; ++i) {
    ::syscall(SYS_openat, AT_FDCWD, "/nonexistent/perfscope-trace-test", 0, 0);
  }
  for (int i = 0; i < 5; ++i) ::syscall(SYS_write, 1, "x", 1);
}

void* thread_main(void*) {
  known_calls();
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  bool thread = false, child = false, wait_stdin = false;
  long linger_ms = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--thread") == 0) thread = true;
    if (std::strcmp(argv[i], "--child") == 0) child = true;
    if (std::strcmp(argv[i], "--wait-stdin") == 0) wait_stdin = true;
    if (std::strcmp(argv[i], "--linger") == 0 && i + 1 < argc) linger_ms = std::atol(argv[++i]);
  }
  if (linger_ms > 0) {
    timespec pause{linger_ms / 1000, (linger_ms % 1000) * 1000000};
    ::nanosleep(&pause, nullptr);
  }
  if (wait_stdin) {
    char byte = 0;
    if (::read(0, &byte, 1) != 1) return 3;
  }
  known_calls();
  if (thread) {
    pthread_t second;
    if (pthread_create(&second, nullptr, thread_main, nullptr) != 0) return 2;
    pthread_join(second, nullptr);
  }
  if (child) {
    pid_t pid = ::fork();
    if (pid == 0) {
      known_calls();
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  return 0;
}
