// A program that does an exact, known amount of work named on its command line, so that tests
// can compare counts with the truth:
//   work_helper faults N          touch N fresh anonymous pages (N write page faults)
//   work_helper getpid N          N getpid(2) system calls
//   work_helper wait-getpid N     read one byte from stdin, then N getpid(2)
//   work_helper fork-getpid N     fork a child that makes N getpid(2); this process makes none
//   work_helper delay-getpid MS N sleep MS milliseconds, then N getpid(2)
//   work_helper threads T N       start T threads, print "ready\n", read one byte from stdin,
//                                 then each thread makes N getpid(2)
//   work_helper exit CODE         exit with CODE
// Nothing here calls getpid except the loops (glibc stopped caching it, and does not call it).
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void make_getpid_calls(long calls) {
  for (long i = 0; i < calls; ++i) ::syscall(SYS_getpid);
}

int touch_fresh_pages(long pages) {
  if (pages == 0) return 0;
  const auto page_size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t length = static_cast<std::size_t>(pages) * page_size;
  void* memory =
      ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return 1;
  // One fault per 4 KiB page, never one per 2 MiB huge page.
  ::madvise(memory, length, MADV_NOHUGEPAGE);
  auto* bytes = static_cast<volatile char*>(memory);
  for (long i = 0; i < pages; ++i) bytes[static_cast<std::size_t>(i) * page_size] = 1;
  ::munmap(memory, length);
  return 0;
}

bool wait_for_go_byte() {
  char byte;
  ssize_t n;
  do {
    n = ::read(0, &byte, 1);
  } while (n < 0 && errno == EINTR);
  return n == 1;
}

pthread_mutex_t go_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t go_condition = PTHREAD_COND_INITIALIZER;
bool go = false;
long calls_per_thread = 0;

void* thread_body(void*) {
  pthread_mutex_lock(&go_mutex);
  while (!go) pthread_cond_wait(&go_condition, &go_mutex);
  pthread_mutex_unlock(&go_mutex);
  make_getpid_calls(calls_per_thread);
  return nullptr;
}

int run_threads(long threads, long calls) {
  calls_per_thread = calls;
  std::vector<pthread_t> ids(static_cast<std::size_t>(threads));
  for (auto& id : ids) {
    if (pthread_create(&id, nullptr, thread_body, nullptr) != 0) return 1;
  }
  const char ready[] = "ready\n";
  if (::write(1, ready, sizeof ready - 1) != static_cast<ssize_t>(sizeof ready - 1)) return 1;
  if (!wait_for_go_byte()) return 1;
  pthread_mutex_lock(&go_mutex);
  go = true;
  pthread_cond_broadcast(&go_condition);
  pthread_mutex_unlock(&go_mutex);
  for (auto& id : ids) pthread_join(id, nullptr);
  return 0;
}

int fork_and_call_getpid(long calls) {
  pid_t child = ::fork();
  if (child < 0) return 1;
  if (child == 0) {
    make_getpid_calls(calls);
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int usage() {
  std::fputs(
      "usage: work_helper faults N | getpid N | wait-getpid N | fork-getpid N | "
      "delay-getpid MS N | getpid-delay-getpid A MS B | threads T N | exit CODE\n",
      stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const char* mode = argv[1];
  long n = std::strtol(argv[2], nullptr, 10);
  if (std::strcmp(mode, "faults") == 0) return touch_fresh_pages(n);
  if (std::strcmp(mode, "getpid") == 0) {
    make_getpid_calls(n);
    return 0;
  }
  if (std::strcmp(mode, "wait-getpid") == 0) {
    if (!wait_for_go_byte()) return 1;
    make_getpid_calls(n);
    return 0;
  }
  if (std::strcmp(mode, "fork-getpid") == 0) return fork_and_call_getpid(n);
  if (std::strcmp(mode, "delay-getpid") == 0 && argc >= 4) {
    timespec delay{n / 1000, (n % 1000) * 1'000'000};
    while (::nanosleep(&delay, &delay) < 0 && errno == EINTR) {
    }
    make_getpid_calls(std::strtol(argv[3], nullptr, 10));
    return 0;
  }
  // A calls, a pause of MS milliseconds, B calls: what a delayed start (stat -D) counts.
  if (std::strcmp(mode, "getpid-delay-getpid") == 0 && argc >= 5) {
    make_getpid_calls(n);
    long ms = std::strtol(argv[3], nullptr, 10);
    timespec delay{ms / 1000, (ms % 1000) * 1'000'000};
    while (::nanosleep(&delay, &delay) < 0 && errno == EINTR) {
    }
    make_getpid_calls(std::strtol(argv[4], nullptr, 10));
    return 0;
  }
  if (std::strcmp(mode, "threads") == 0 && argc >= 4) {
    return run_threads(n, std::strtol(argv[3], nullptr, 10));
  }
  if (std::strcmp(mode, "exit") == 0) return static_cast<int>(n);
  return usage();
}
