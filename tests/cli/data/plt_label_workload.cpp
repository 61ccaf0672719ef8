// plt_label_workload MS: calls library_step (in libplt_library.so) through the PLT, then runs
// labelled_loop, a sized function with an untyped label (loop_body_label) at its loop's head.
#include <cstdio>
#include <cstdlib>

extern "C" unsigned long library_step(unsigned long x);
extern "C" unsigned long labelled_loop(unsigned long n);

asm(R"(
  .text
  .globl labelled_loop
  .type labelled_loop, @function
labelled_loop:
  xor %eax, %eax
  xor %ecx, %ecx
loop_body_label:
  add %rcx, %rax
  imul $7, %rax, %rax
  inc %rcx
  cmp %rdi, %rcx
  jb loop_body_label
  ret
  .size labelled_loop, .-labelled_loop
)");

int main(int argc, char** argv) {
  unsigned long ms = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 300;
  unsigned long s = 0;
  for (unsigned long i = 0; i < ms * 400000UL; ++i) s = library_step(s + i);
  s += labelled_loop(ms * 400000UL);
  std::printf("%lu\n", s);
}
