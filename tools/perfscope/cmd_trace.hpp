// perfscope trace: the system calls of a command, a process, a thread or every CPU, one line per
// call like strace (without ptrace: from the raw_syscalls tracepoints), or perf trace -s's
// summary table.
#pragma once

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace perfscope::cli {

struct TraceOptions {
  int pid = -1;
  int tid = -1;
  bool all_cpus = false;
  std::string cpu_list;               // -C
  std::string cgroup;                 // -G
  std::vector<std::string> syscalls;  // -e, split at commas
  bool exclude_syscalls = false;      // -e '!a,b': every call but these
  double min_duration_ms = -1;        // --duration: only calls that took longer
  bool summary_only = false;          // -s
  bool with_summary = false;          // -S
  bool failure_only = false;          // --failure
  bool json = false;
  std::string output;  // default: standard error, as strace and perf trace
  std::size_t mmap_pages = 0;
  bool no_inherit = false;
  std::vector<std::string> command;
  std::string input;               // -i: a recording's calls (trace record's, perf trace record's)
  bool show_comm = true;           // --comm (--no-comm: the thread id alone)
  bool absolute_time = false;      // -T: the clock's milliseconds, not since the first
  std::uint64_t max_events = 0;    // --max-events: stop after printing this many calls
  bool errno_summary = false;      // --errno-summary: errnos under the summary's rows
  std::vector<pid_t> filter_pids;  // --filter-pids: these threads' calls left out
  int delay_ms = 0;                // --delay: tracing starts this long after the start
};

class TraceCommand {
 public:
  explicit TraceCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  // The traced command's exit status (128 + signal when killed), 0 for other targets.
  int run(bool verbose, std::vector<std::string> command);

 private:
  int replay(const TraceOptions& options);
  CLI::App* app_;
  TraceOptions options_;
};

}  // namespace perfscope::cli
