/* minimal_stat: the floor for `perfscope stat -e task-clock -- CMD`. It does only what any
 * counting front end must do: fork, hold the child at a pipe, open task-clock on it
 * (enable_on_exec), release it, wait, read, print. Plain C with no C++ runtime, so its start-up is
 * what the dynamic loader and libc cost and nothing more. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The first 64 bytes of perf_event_attr (PERF_ATTR_SIZE_VER0), spelled out here because the
 * project never includes <linux/perf_event.h> and this program must not need our C++ headers. */
struct attr_ver0 {
  uint32_t type;
  uint32_t size;
  uint64_t config;
  uint64_t sample_period;
  uint64_t sample_type;
  uint64_t read_format;
  uint64_t flags;
  uint32_t wakeup_events;
  uint32_t bp_type;
  uint64_t config1;
};

enum {
  type_software = 1,
  sw_task_clock = 1,
  flag_disabled = 1u << 0,
  flag_inherit = 1u << 1,
  flag_enable_on_exec = 1u << 12,
};

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: minimal_stat COMMAND [ARGS...]\n");
    return 2;
  }
  int gate[2];
  if (pipe2(gate, O_CLOEXEC) != 0) {
    perror("minimal_stat: pipe2");
    return 1;
  }
  pid_t child = fork();
  if (child < 0) {
    perror("minimal_stat: fork");
    return 1;
  }
  if (child == 0) {
    char byte;
    close(gate[1]);
    if (read(gate[0], &byte, 1) != 1) _exit(126);
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  close(gate[0]);

  struct attr_ver0 attr;
  memset(&attr, 0, sizeof attr);
  attr.type = type_software;
  attr.size = sizeof attr;
  attr.config = sw_task_clock;
  attr.flags = flag_disabled | flag_inherit | flag_enable_on_exec;
  int fd = (int)syscall(SYS_perf_event_open, &attr, child, -1, -1, 0UL);
  if (fd < 0) {
    fprintf(stderr, "minimal_stat: perf_event_open: %s\n", strerror(errno));
    close(gate[1]); /* EOF: the child exits without exec */
    waitpid(child, NULL, 0);
    return 1;
  }
  if (write(gate[1], "x", 1) != 1) {
    perror("minimal_stat: write");
    return 1;
  }
  close(gate[1]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  uint64_t count = 0;
  if (read(fd, &count, sizeof count) != (ssize_t)sizeof count) {
    perror("minimal_stat: read");
    return 1;
  }
  fprintf(stderr, "%" PRIu64 " ns task-clock\n", count);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
