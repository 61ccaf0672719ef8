// The bundled example for `make demo`: a small program with a known amount of work — it touches
// 256 fresh pages (256 page faults), sleeps 5 times (5 context switches) and spins ~100 ms. Its
// functions are kept out of line so that `perfscope report` (make demo) shows each of them.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace {

__attribute__((noinline)) void touch_fresh_pages(std::size_t pages) {
  const std::size_t page_size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* memory = ::mmap(nullptr, pages * page_size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return;
  ::madvise(memory, pages * page_size, MADV_NOHUGEPAGE);
  auto* bytes = static_cast<volatile char*>(memory);
  for (std::size_t i = 0; i < pages; ++i) bytes[i * page_size] = 1;
  ::munmap(memory, pages * page_size);
}

__attribute__((noinline)) double spin(std::chrono::milliseconds duration) {
  auto end = std::chrono::steady_clock::now() + duration;
  double x = 1.0;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 0.0000001;
  }
  return x;
}

}  // namespace

int main() {
  touch_fresh_pages(256);
  for (int i = 0; i < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  double result = spin(std::chrono::milliseconds(100));
  std::printf("demo_workload: done (%.3f)\n", result);
  return 0;
}
