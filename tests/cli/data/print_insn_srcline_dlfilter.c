/* A dlfilter built against perf's own header that asks, for every sample, the two callbacks that
 * read the sampled program's files: insn (the instruction at the ip, its bytes) and srcline (the
 * ip's source file and line). It prints both, with the ip's file, on stdout and keeps every
 * sample. */
#include <perf/perf_dlfilter.h>
#include <stdio.h>

struct perf_dlfilter_fns perf_dlfilter_fns;

int filter_event(void *data, const struct perf_dlfilter_sample *sample, void *ctx) {
  (void)data;
  __u32 length = 0, line = 0;
  const __u8 *insn = perf_dlfilter_fns.insn(ctx, &length);
  const char *file = perf_dlfilter_fns.srcline(ctx, &line);
  const struct perf_dlfilter_al *al = perf_dlfilter_fns.resolve_ip(ctx);
  printf("ip %llx dso %s insn", (unsigned long long)sample->ip,
         al != NULL && al->dso != NULL ? al->dso : "(none)");
  for (__u32 i = 0; insn != NULL && i < length; i++) printf(" %02x", insn[i]);
  printf(" srcline %s:%u\n", file != NULL ? file : "(none)", line);
  return 0;
}
