// time_runs: wall time of short commands, run interleaved so that machine noise (other load,
// frequency changes, cache state) falls on each of them alike; prints median/p10/p90 per command.
//
//   time_runs [-n RUNS] [-w WARMUP] ::: LABEL CMD [ARGS...] ::: LABEL CMD [ARGS...] ...
//
// Each round runs every command once, starting from a different one each round. Commands are
// started with posix_spawn (vfork-like, so the timer adds little of its own) with stdin, stdout
// and stderr on /dev/null; a run counts from just before the spawn to the return of waitpid. A
// command that exits non-zero stops the measurement: timing a failure path would be meaningless.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

extern char** environ;

namespace {

struct Command {
  std::string label;
  std::vector<char*> argv;  // null-terminated, pointing into main's argv
  std::vector<double> micros;
};

double now_micros() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "time_runs: %s\n"
               "usage: time_runs [-n RUNS] [-w WARMUP] ::: LABEL CMD [ARGS...] "
               "[::: LABEL CMD [ARGS...]]...\n",
               why);
  std::exit(2);
}

int parse_count(const char* text, const char* what) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > 1000000) {
    std::fprintf(stderr, "time_runs: %s must be a number from 0 to 1000000, not '%s'\n", what,
                 text);
    std::exit(2);
  }
  return static_cast<int>(value);
}

// Runs the command once; returns its wall time in microseconds, or exits on failure.
double run_once(const Command& command, const posix_spawn_file_actions_t& quiet) {
  double start = now_micros();
  pid_t pid = -1;
  int error = posix_spawnp(&pid, command.argv[0], &quiet, nullptr, command.argv.data(), environ);
  if (error != 0) {
    std::fprintf(stderr, "time_runs: cannot start '%s' (%s): %s\n", command.argv[0],
                 command.label.c_str(), std::strerror(error));
    std::exit(1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      std::perror("time_runs: waitpid");
      std::exit(1);
    }
  }
  double elapsed = now_micros() - start;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "time_runs: '%s' (%s) failed (%s %d); run it by hand to see why\n",
                 command.argv[0], command.label.c_str(),
                 WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    std::exit(1);
  }
  return elapsed;
}

double percentile(const std::vector<double>& sorted, double fraction) {
  // Nearest-rank on the sorted samples; the median of an even count is the mean of the middle two.
  if (fraction == 0.5 && sorted.size() % 2 == 0) {
    return (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  }
  auto index = static_cast<std::size_t>(fraction * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 200;
  int warmup = 20;
  int at = 1;
  for (; at < argc && std::string_view(argv[at]) != ":::"; ++at) {
    std::string_view option = argv[at];
    if ((option == "-n" || option == "-w") && at + 1 < argc) {
      (option == "-n" ? runs : warmup) =
          parse_count(argv[++at], option == "-n" ? "RUNS" : "WARMUP");
    } else {
      usage(("unknown option '" + std::string(option) + "'").c_str());
    }
  }
  if (runs < 1) usage("RUNS must be at least 1");
  std::vector<Command> commands;
  while (at < argc) {
    ++at;  // the ":::"
    if (at + 1 >= argc || std::string_view(argv[at + 1]) == ":::") {
      usage("each ':::' must be followed by a label and a command");
    }
    Command command;
    command.label = argv[at++];
    for (; at < argc && std::string_view(argv[at]) != ":::"; ++at) command.argv.push_back(argv[at]);
    command.argv.push_back(nullptr);
    commands.push_back(std::move(command));
  }
  if (commands.empty()) usage("no command given");

  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  for (int fd = 0; fd <= 2; ++fd) {
    posix_spawn_file_actions_addopen(&quiet, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  }

  for (int round = 0; round < warmup + runs; ++round) {
    for (std::size_t i = 0; i < commands.size(); ++i) {
      Command& command = commands[(i + static_cast<std::size_t>(round)) % commands.size()];
      double micros = run_once(command, quiet);
      if (round >= warmup) command.micros.push_back(micros);
    }
  }
  posix_spawn_file_actions_destroy(&quiet);

  std::printf("%-12s %6s %10s %10s %10s %10s\n", "command", "runs", "median_us", "p10_us", "p90_us",
              "mean_us");
  for (auto& command : commands) {
    std::sort(command.micros.begin(), command.micros.end());
    double sum = 0;
    for (double micros : command.micros) sum += micros;
    std::printf("%-12s %6zu %10.1f %10.1f %10.1f %10.1f\n", command.label.c_str(),
                command.micros.size(), percentile(command.micros, 0.5),
                percentile(command.micros, 0.1), percentile(command.micros, 0.9),
                sum / static_cast<double>(command.micros.size()));
  }
  return 0;
}
