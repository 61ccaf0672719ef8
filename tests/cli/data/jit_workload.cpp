// A tiny JIT for annotate's JIT test: copies a counting loop into anonymous executable memory,
// names it in /tmp/perf-PID.map as perf's JIT convention asks, and runs it for about ROUNDS x
// 10 ms. Prints "jit pid PID" so that the test can remove the map file. x86-64 only.
//
//   jit_workload [ROUNDS]   (default 30)
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  long rounds = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 30;
  // mov %rdi,%rax; loop: sub $1,%rax; jne loop; ret
  const unsigned char code[] = {0x48, 0x89, 0xf8, 0x48, 0x83, 0xe8, 0x01, 0x75, 0xfa, 0xc3};
  void* memory =
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  std::memcpy(memory, code, sizeof code);
  char path[64];
  std::snprintf(path, sizeof path, "/tmp/perf-%d.map", static_cast<int>(getpid()));
  FILE* map = std::fopen(path, "w");
  if (!map) {
    std::perror(path);
    return 1;
  }
  std::fprintf(map, "%lx %zx jit_spin_loop\n", reinterpret_cast<unsigned long>(memory),
               sizeof code);
  std::fclose(map);
  std::printf("jit pid %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  auto spin = reinterpret_cast<std::uint64_t (*)(std::uint64_t)>(memory);
  for (long round = 0; round < rounds; ++round) spin(20000000);
  return 0;
}
