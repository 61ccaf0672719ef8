// The recording the Python-scripting tests run perf's scripts over: four threads that contend
// for one mutex (futex waits and wakes), opens of files that do not exist (failed syscalls),
// and a spin long enough for cpu-clock samples with call chains.
#include <fcntl.h>
#include <unistd.h>

#include <mutex>
#include <thread>
#include <vector>

namespace {

std::mutex lock;
volatile unsigned long sink = 0;

__attribute__((noinline)) void spin(unsigned long rounds) {
  for (unsigned long i = 0; i < rounds; ++i) sink = sink + i;
}

void contend() {
  for (int i = 0; i < 400; ++i) {
    std::lock_guard guard(lock);
    spin(20000);
  }
}

}  // namespace

int main() {
  for (int i = 0; i < 25; ++i) {
    int fd = ::open("/nonexistent/perfscope-script-workload", O_RDONLY);
    if (fd >= 0) ::close(fd);
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back(contend);
  for (auto& thread : threads) thread.join();
  return 0;
}
