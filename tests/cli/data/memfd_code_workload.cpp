// Runs code from a memfd mapping ("memfd:sealed-code (deleted)" in /proc/PID/maps), as sandboxes
// that run a sealed copy of a binary do: perf names its samples by the mapping, not a perf map.
// x86-64: the code is a countdown loop (dec %rax; jnz; ret).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

int main() {
  int fd = ::memfd_create("sealed-code", MFD_ALLOW_SEALING);
  const unsigned char code[] = {0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3};
  if (fd < 0 || ::ftruncate(fd, 4096) != 0 || ::write(fd, code, sizeof code) != sizeof code) {
    std::perror("memfd");
    return 1;
  }
  void* mapped = ::mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  if (mapped == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  for (int i = 0; i < 20; ++i) {
    __asm__ volatile("mov $50000000, %%rax\n\tcall *%0" : : "r"(mapped) : "rax", "memory");
  }
  return 0;
}
