/* A program for probe tests with arguments fetched by name: work() runs exactly argv[1] times,
 * its call i with n = i % 7, m = 1000 + i, s = "label" and p pointing at a point whose x is 7
 * and whose next point's x is 8. Built at -O0 (arguments on the stack, found after the
 * prologue) and at -O2 (arguments in registers). */
#include <stdlib.h>
#include <string.h>

struct point {
  int x;
  long y;
  const char *name;
  struct point *next;
  short corners[4];
};

int global_count;

__attribute__((noinline)) long work(int n, long m, const char *s, struct point *p) {
  long total = n + m + (long)strlen(s) + p->x + p->next->x;
  for (int i = 0; i < n; i++) total += i * m;
  global_count++;
  return total;
}

int main(int argc, char **argv) {
  struct point second = {8, 9, "second", NULL, {5, 6, 7, 8}};
  struct point first = {7, 4, "first", &second, {1, 2, 3, 4}};
  int times = argc > 1 ? atoi(argv[1]) : 0;
  long sum = 0;
  for (int i = 0; i < times; i++) sum += work(i % 7, 1000 + i, "label", &first);
  return sum == 0 && times > 0;
}
