/* A dlfilter built against perf's own header (/usr/include/perf/perf_dlfilter.h), as users write
 * them for perf script --dlfilter: keeps the samples of one process (first --dlarg) whose ip lies
 * in one function (second --dlarg), and counts in stop() what it saw. */
#include <perf/perf_dlfilter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct perf_dlfilter_fns perf_dlfilter_fns;

struct state {
  int pid;
  const char *symbol;
  unsigned long early, seen, kept;
};

int start(void **data, void *ctx) {
  int argc = 0;
  char **argv = perf_dlfilter_fns.args(ctx, &argc);
  if (argc != 2) {
    fprintf(stderr, "keep_pid_symbol: give --dlarg PID --dlarg SYMBOL\n");
    return -1;
  }
  struct state *s = calloc(1, sizeof *s);
  s->pid = atoi(argv[0]);
  s->symbol = argv[1];
  *data = s;
  return 0;
}

int filter_event_early(void *data, const struct perf_dlfilter_sample *sample, void *ctx) {
  struct state *s = data;
  (void)ctx;
  s->early++;
  return sample->pid == s->pid ? 0 : 1;
}

int filter_event(void *data, const struct perf_dlfilter_sample *sample, void *ctx) {
  struct state *s = data;
  s->seen++;
  const struct perf_event_attr *attr = perf_dlfilter_fns.attr(ctx);
  if (attr == NULL || sample->size < sizeof(*sample) || sample->event == NULL) return -1;
  const struct perf_dlfilter_al *al = perf_dlfilter_fns.resolve_ip(ctx);
  if (al == NULL || al->sym == NULL || strcmp(al->sym, s->symbol) != 0) return 1;
  /* The function holds its ip, and the same address resolves alike. */
  struct perf_dlfilter_al again = {.size = sizeof again};
  if (perf_dlfilter_fns.resolve_address(ctx, sample->ip, &again) != 0 || again.sym == NULL ||
      strcmp(again.sym, al->sym) != 0 || al->addr < al->sym_start || al->addr >= al->sym_end) {
    return -1;
  }
  unsigned char code[4];
  if (perf_dlfilter_fns.object_code(ctx, sample->ip, code, sizeof code) != sizeof code) return -1;
  s->kept++;
  return 0;
}

int stop(void *data, void *ctx) {
  struct state *s = data;
  (void)ctx;
  fprintf(stderr, "keep_pid_symbol: kept %lu of %lu (%lu before the other filters)\n", s->kept,
          s->seen, s->early);
  free(s);
  return 0;
}

const char *filter_description(const char **long_description) {
  *long_description = "Keeps one process's samples in one function";
  return "keep one pid and one symbol";
}
