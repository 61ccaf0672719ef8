// Helpers shared by the tests: conditions to skip on, and running the perfscope CLI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// PERFSCOPE_CLI_PATH, the workloads and data folders of this build (tests/CMakeLists.txt).
#include "perfscope_build_paths.hpp"

namespace perfscope::testing {

// True in the AddressSanitizer build (PERFSCOPE_SANITIZE, gcc or clang): its shadow memory, its
// quarantine and its frame-pointer-less runtime change memory figures and call chains.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool sanitized_build = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool sanitized_build = true;
#else
inline constexpr bool sanitized_build = false;
#endif
#else
inline constexpr bool sanitized_build = false;
#endif

bool running_as_root();
// True when a hardware instructions counter opens for this process (real PMU present).
bool hardware_counters_available();
// True when tracefs is mounted with events (tracepoint tests need it).
bool tracefs_available();
// Empty when this machine's hardware breakpoints count (a write watchpoint counts each of 3
// writes); otherwise why not, for GTEST_SKIP: some virtual machines (Firecracker) open
// breakpoint events whose debug registers never fire, so every count reads 0.
std::string hardware_breakpoints_problem();

// Why the browser tests cannot run here (no Chromium, no node, an npm package of `packages` not
// installed in `browser_dir`/node_modules), or nothing. Chromium is /usr/bin/chromium unless
// PERFSCOPE_CHROMIUM names another.
std::optional<std::string> missing_browser(const std::string& browser_dir,
                                           const std::vector<std::string>& packages);

struct CommandResult {
  int exit_status = -1;  // shell-style: exit code, or 128 + signal
  int signal = 0;        // the signal that ended it, 0 when it exited (129 is also an exit code)
  std::string out;       // stdout
  std::string err;       // stderr
};
// A file's whole text; empty when it cannot be read.
std::string read_file(const std::string& path);
// Runs argv (no shell), capturing stdout and stderr.
CommandResult run_command(const std::vector<std::string>& argv);
// The files a `buildid-list -i FILE` command (perfscope's or perf's, `lister` whole) lists;
// fails the test when it fails.
std::vector<std::string> build_id_list_files(const std::vector<std::string>& lister);
// perf's --control by FIFO: writes `command` and a newline to the FIFO `control`, then returns
// what the acknowledgement FIFO `ack` answers (at most 4 bytes, "ack\n", within 10 s).
std::string control_command(const std::string& control, const std::string& ack,
                            const std::string& command);
// run_command in `directory` (its working directory).
CommandResult run_command_in(const std::string& directory, const std::vector<std::string>& argv);
// Runs the built perfscope CLI with these arguments.
CommandResult run_perfscope(const std::vector<std::string>& arguments);
CommandResult run_perfscope_in(const std::string& directory,
                               const std::vector<std::string>& arguments);
// The same arguments to Linux perf (/usr/bin/perf) when `tool` is "perf", else to perfscope: for
// the tests that compare the two on each other's recordings.
CommandResult run_perf_or_perfscope(const std::string& tool,
                                    const std::vector<std::string>& arguments);
// Fails the test on what a crash or a sanitizer report leaves: death by a signal, ASan/UBSan
// reports, an uncaught exception.
// `ended_by` names the status a run interrupted on purpose ends with (130 after SIGINT, as perf
// stat), which is then not counted as a crash.
void expect_no_crash(const CommandResult& result, int ended_by = -1);

// The machine's CPU time in /proc/stat ticks: all of it, and what the host took (steal). Clocks
// that run while a task is on a CPU (task-clock, cpu-clock, switch timestamps) count stolen time;
// a thread's or process's own CPU time (CLOCK_THREAD_CPUTIME_ID, rusage) leaves it out.
struct CpuTicks {
  unsigned long long total = 0, steal = 0;
};
CpuTicks cpu_ticks();
// The fraction of the machine's CPU time the host stole between two readings.
double steal_fraction(const CpuTicks& before, const CpuTicks& after);

// A mapping of this process, as /proc/self/maps lists it.
struct OwnMapping {
  std::uint64_t start = 0, end = 0, pgoff = 0;
  std::string perms;  // "r-xp"
  std::string path;   // empty for an anonymous mapping
};
std::vector<OwnMapping> own_mappings();

// TMPDIR/perfscope_NAME_PID: a path of this test process's own (nothing is created).
std::string temp_path(const std::string& name);
// Removes `path` when the test process exits: for a file recorded once and shared by several
// tests (a function-local static), which no single test may remove.
void remove_at_exit(const std::string& path);

// A fresh directory under TMPDIR, removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `text` to the file `name` in the directory; returns its path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

// Checks the JSON file `document` against the JSON Schema file `schema` with python3's jsonschema
// (Debian python3-jsonschema), strictly: every object the schema lists properties for may hold
// only those (so a key written but not documented fails too).
struct SchemaCheck {
  bool ran = false;  // false: python3 or jsonschema is missing; `report` says which
  bool valid = false;
  std::string report;  // the validation errors, one per line, or why it did not run
};
SchemaCheck check_json_schema(const std::string& schema, const std::string& document);

// One line of a folded-stacks export (`report --format folded`): the stack and its weight.
struct FoldedLine {
  std::string stack;
  double weight = 0;
};
std::vector<FoldedLine> parse_folded(const std::string& text);

// A line of perfscope's script text as perf 6.1 prints it where perf 6.1 has no name for a PLT
// address: perfscope names the lazy-binding header of a library's PLT ".plt" and the library's
// .plt.got stubs (libc's own free@plt, malloc@plt) NAME@plt, as perf 6.3 and later do
// (docs/USER_GUIDE.md); perf 6.1 prints [unknown]. Our line unchanged unless that alone makes it
// perf's. A sample lands there now and then as a program starts or exits.
std::string plt_names_as_perf_6_1(const std::string& ours, const std::string& perfs);

}  // namespace perfscope::testing
