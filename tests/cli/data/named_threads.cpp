// Threads that name themselves with bytes no terminal should see raw (issue #22): an escape
// sequence, invalid UTF-8, the folded format's ';' and a newline. Each burns CPU for argv[1]
// milliseconds (default 300) so that a cpu-clock recording samples every one of them.
#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>

#include <cstdlib>
#include <thread>
#include <vector>

namespace {

volatile unsigned long sink;

double now_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

__attribute__((noinline)) void burn(double milliseconds) {
  double until = now_ms() + milliseconds;
  while (now_ms() < until) {
    for (int i = 0; i < 10000; ++i) sink = sink + static_cast<unsigned long>(i);
  }
}

}  // namespace

int main(int argc, char** argv) {
  double milliseconds = argc > 1 ? std::atof(argv[1]) : 300;
  // At most 15 bytes each: the kernel keeps TASK_COMM_LEN - 1.
  const char* names[] = {"\x1b]0;pwn\x07\x1b[31mX", "bad\xff\xfe", "semi;colon", "new\nline"};
  std::vector<std::thread> threads;
  for (const char* name : names) {
    threads.emplace_back([name, milliseconds] {
      ::prctl(PR_SET_NAME, name, 0, 0, 0);
      burn(milliseconds);
    });
  }
  for (auto& thread : threads) thread.join();
  return 0;
}
