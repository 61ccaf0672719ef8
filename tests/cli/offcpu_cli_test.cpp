// `perfscope record --off-cpu / --wall` and what reads it, against known answers: a thread that
// spins, sleeps and waits for a pipe in measured proportions; a waiter blocked on a mutex; the
// same recording made by an unprivileged user (time per thread, no stacks); Linux perf reading
// the file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
using namespace perfscope;

const std::string workload = PERFSCOPE_OFFCPU_WORKLOAD_PATH;
const std::string perf_path = "/usr/bin/perf";

// "measured N N N" from the workload's output: its own clock's account of each phase.
std::vector<double> measured(const std::string& out) {
  std::vector<double> values;
  auto at = out.find("measured ");
  if (at == std::string::npos) return values;
  std::istringstream in(out.substr(at + 9));
  double value = 0;
  while (in >> value) values.push_back(value);
  return values;
}

using pt::FoldedLine;

// The weight of the lines that start with `prefix` and contain every one of `parts`.
double weight_of(const std::vector<FoldedLine>& lines, const std::string& prefix,
                 const std::vector<std::string>& parts = {}) {
  double total = 0;
  for (const auto& line : lines) {
    if (line.stack.rfind(prefix, 0) != 0) continue;
    bool all = true;
    for (const auto& part : parts) all = all && line.stack.find(part) != std::string::npos;
    if (all) total += line.weight;
  }
  return total;
}

// The offcpu-time samples of a file: their periods.
std::vector<std::uint64_t> off_cpu_periods(const std::string& path) {
  std::vector<std::uint64_t> periods;
  PerfDataReader reader = PerfDataReader::open(path);
  SampleRecord sample;
  reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    if (record.view.header.type != 9 || record.event >= reader.events().size()) return;
    const auto& event = reader.events()[record.event];
    if (event.name != "offcpu-time") return;
    DecodeError error;
    if (decode_sample(record.view, event.config, sample, error)) periods.push_back(sample.period);
  });
  return periods;
}

bool can_record_stacks() {
  if (!pt::running_as_root()) return false;
  return pt::tracefs_available();
}

TEST(OffCpuRecord, WallAttributesSpinSleepAndPipeWaitToTheirFunctions) {
  if (!can_record_stacks()) GTEST_SKIP() << "needs root and tracefs for sched:sched_switch";
  pt::TempDir dir;
  std::string file = dir.path() + "/wall.data";
  pt::CpuTicks before = pt::cpu_ticks();
  auto recorded =
      pt::run_perfscope({"record", "--wall", "-g", "-o", file, "--", workload, "phases", "100"});
  double steal = pt::steal_fraction(before, pt::cpu_ticks());
  pt::expect_no_crash(recorded);
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_NE(recorded.err.find("off-CPU (sched:sched_switch, with stacks)"), std::string::npos)
      << recorded.err;
  std::vector<double> phases = measured(recorded.out);
  ASSERT_EQ(phases.size(), 3u) << recorded.out;
  double spin = phases[0], sleep = phases[1], wait = phases[2];
  double all = spin + sleep + wait;

  auto wall = pt::run_perfscope({"report", "-i", file, "--wall", "--format", "folded"});
  ASSERT_EQ(wall.exit_status, 0) << wall.err;
  auto lines = pt::parse_folded(wall.out);
  const std::string main_thread = "offcpu_workload;";
  double thread_total = weight_of(lines, main_thread);
  ASSERT_GT(thread_total, 0) << wall.out;
  // The thread's wall time, on- and off-CPU, covers its lifetime: the phases and its start-up.
  // (Less what the host stole from the spin: see below.)
  EXPECT_GE(thread_total, all * 0.97 - 2.0 * steal * spin);
  // Each phase's share of the three, from the profile and from the workload's own clock (the
  // start-up before them, longer on a loaded machine, is left out of both).
  auto share = [&](const char* function) {
    return 100.0 * weight_of(lines, main_thread, {function}) / all;
  };
  // While the host steals the vCPU, cpu-clock's timer fires once when it comes back, however many
  // periods went by: the on-CPU phase loses that time (a CI run lost 11 of 100 ms), twice the
  // machine-wide share, as the steal may fall on the spinning vCPU. The base is 4.5 points: with
  // the suite's other tests on the second core, spin took 28.6 % of the profile against 25.0 % of
  // the workload's own clock in one run.
  const double tolerance = 4.5 + 2.0 * 100.0 * steal;
  EXPECT_NEAR(share(";spin_phase"), 100.0 * spin / all, tolerance)
      << "steal " << steal * 100 << " %\n"
      << wall.out;
  EXPECT_NEAR(share(";sleep_phase"), 100.0 * sleep / all, tolerance) << wall.out;
  EXPECT_NEAR(share(";read_phase"), 100.0 * wait / all, tolerance) << wall.out;

  // Off-CPU alone: the blocked time in the sleep and the pipe read is the measured one.
  auto split = pt::run_perfscope({"report", "-i", file, "--format", "folded"});
  ASSERT_EQ(split.exit_status, 0) << split.err;
  auto split_lines = pt::parse_folded(split.out);
  double blocked = weight_of(split_lines, "[offcpu-time];offcpu_workload;", {";sleep_phase"}) +
                   weight_of(split_lines, "[offcpu-time];offcpu_workload;", {";read_phase"});
  EXPECT_NEAR(blocked, sleep + wait, (sleep + wait) * 0.03) << split.out;

  // The states: sleeping for nanosleep and the pipe read, in the per-thread table too.
  auto table = pt::run_perfscope({"report", "-i", file, "--wall", "--stdio", "--sort", "comm,state",
                                  "--no-children", "-g", "none"});
  ASSERT_EQ(table.exit_status, 0) << table.err;
  EXPECT_NE(table.out.find("of event 'wall-time'"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("offcpu_workload  sleeping"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("offcpu_workload  on-cpu"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("# Per-thread time"), std::string::npos) << table.out;
}

TEST(OffCpuRecord, MutexWaiterBlocksAtItsLockCallSite) {
  if (!can_record_stacks()) GTEST_SKIP() << "needs root and tracefs for sched:sched_switch";
  pt::TempDir dir;
  std::string file = dir.path() + "/mutex.data";
  auto recorded = pt::run_perfscope(
      {"record", "--off-cpu", "--call-graph", "dwarf", "-o", file, "--", workload, "mutex", "150"});
  pt::expect_no_crash(recorded);
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  std::vector<double> waited = measured(recorded.out);
  ASSERT_EQ(waited.size(), 1u) << recorded.out;
  auto report = pt::run_perfscope({"report", "-i", file, "--format", "folded"});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  auto lines = pt::parse_folded(report.out);
  // The waiter (the main thread) blocked in the kernel's futex wait, called from its lock site.
  double at_lock =
      weight_of(lines, "[offcpu-time];offcpu_workload;", {";waiter_lock_site;", "futex"});
  EXPECT_NEAR(at_lock, waited[0], waited[0] * 0.03) << report.out;
}

TEST(OffCpuRecord, ThresholdLeavesOutShortIntervalsAndCountsThem) {
  if (!can_record_stacks()) GTEST_SKIP() << "needs root and tracefs for sched:sched_switch";
  pt::TempDir dir;
  std::string file = dir.path() + "/thresh.data";
  auto recorded = pt::run_perfscope({"record", "--off-cpu", "--off-cpu-thresh", "50ms", "-o", file,
                                     "--", workload, "phases", "100"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto periods = off_cpu_periods(file);
  // The sleep (200 ms), the pipe wait and the feeder's sleep (100 ms each): nothing shorter.
  ASSERT_GE(periods.size(), 3u);
  for (auto period : periods) EXPECT_GE(period, 50'000'000u);
  EXPECT_NE(recorded.err.find(std::to_string(periods.size()) + " intervals written"),
            std::string::npos)
      << recorded.err;
  // The three known waits slept (nanosleep, a pipe read): script says so. (A preemption of 50 ms
  // or more in the spin, on a loaded host, is a fourth interval, preempted.)
  auto script = pt::run_perfscope({"script", "-i", file});
  ASSERT_EQ(script.exit_status, 0) << script.err;
  std::size_t sleeping = 0;
  for (std::size_t at = script.out.find("offcpu-time: state=sleeping"); at != std::string::npos;
       at = script.out.find("offcpu-time: state=sleeping", at + 1)) {
    ++sleeping;
  }
  EXPECT_GE(sleeping, 3u) << script.out;
  EXPECT_LE(sleeping, periods.size()) << script.out;
}

TEST(OffCpuRecord, LinuxPerfReadsTheOffCpuSamples) {
  if (!can_record_stacks()) GTEST_SKIP() << "needs root and tracefs for sched:sched_switch";
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  pt::TempDir dir;
  std::string file = dir.path() + "/perf.data";
  auto recorded =
      pt::run_perfscope({"record", "--off-cpu", "-g", "-o", file, "--", workload, "phases", "50"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto periods = off_cpu_periods(file);
  ASSERT_FALSE(periods.empty());
  std::uint64_t total = 0;
  for (auto period : periods) total += period;

  auto script = pt::run_command({perf_path, "script", "-i", file, "-F", "event,period"});
  ASSERT_EQ(script.exit_status, 0) << script.err;
  std::size_t lines = 0;
  std::uint64_t perf_total = 0;
  std::istringstream in(script.out);
  std::string line;
  while (std::getline(in, line)) {
    auto at = line.find("offcpu-time");
    if (at == std::string::npos) continue;
    ++lines;
    std::istringstream words(line);
    std::uint64_t period = 0;
    words >> period;
    perf_total += period;
  }
  EXPECT_EQ(lines, periods.size()) << script.out;
  EXPECT_EQ(perf_total, total);

  auto report = pt::run_command({perf_path, "report", "-i", file, "--stdio"});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  EXPECT_NE(report.out.find("of event 'offcpu-time'"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("Event count (approx.): " + std::to_string(total)), std::string::npos)
      << report.out;
}

TEST(OffCpuRecord, UnprivilegedGetsPerThreadTimeWithoutStacksAndIsToldWhy) {
  if (!pt::running_as_root()) GTEST_SKIP() << "needs root to become nobody";
  auto paranoid = sys::read_sysctl("perf_event_paranoid");
  if (!paranoid || *paranoid < 2) GTEST_SKIP() << "perf_event_paranoid < 2: nobody sees more";
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "setpriv (util-linux) is missing";
  pt::TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  std::string file = dir.path() + "/nobody.data";
  std::string perfscope = PERFSCOPE_CLI_PATH;
  auto recorded = pt::run_command({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                   "--clear-groups", perfscope, "record", "--wall", "-g", "-o",
                                   file, "--", workload, "phases", "100"});
  pt::expect_no_crash(recorded);
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_NE(recorded.err.find("off-CPU via switch records: no kernel context"), std::string::npos)
      << recorded.err;
  EXPECT_NE(recorded.err.find("Fix: run as root or grant CAP_PERFMON"), std::string::npos)
      << recorded.err;
  std::vector<double> phases = measured(recorded.out);
  ASSERT_EQ(phases.size(), 3u) << recorded.out;
  double all = phases[0] + phases[1] + phases[2];

  auto table = pt::run_perfscope({"report", "-i", file, "--wall", "--stdio", "--sort", "state"});
  ASSERT_EQ(table.exit_status, 0) << table.err;
  EXPECT_NE(table.out.find("off-CPU samples without stacks"), std::string::npos) << table.out;
  // The main thread's row of the per-thread table: its total (ms) covers its lifetime, and its
  // off-CPU time holds at least the sleep and the pipe wait.
  auto at = table.out.find("offcpu_workload", table.out.find("# Per-thread time"));
  ASSERT_NE(at, std::string::npos) << table.out;
  std::string row = table.out.substr(at, table.out.find('\n', at) - at);
  std::istringstream words(row);
  std::vector<std::string> columns;  // comm, on-CPU, off-CPU, the states, total, off %, intervals
  for (std::string column; words >> column;) columns.push_back(column);
  ASSERT_GE(columns.size(), 6u) << row;
  double total_ns = std::stod(columns[columns.size() - 3]) * 1e6;
  EXPECT_GE(total_ns, all * 0.97) << table.out;
  EXPECT_GE(std::stod(columns[2]) * 1e6, (phases[1] + phases[2]) * 0.97) << table.out;
}

// The targets other than a command: a process (-p) and a thread (-t) attached while they run,
// and the whole machine (-a). The sleep and the pipe wait of the workload's main thread come
// back with their stacks and their measured lengths.
TEST(OffCpuRecord, AttachedProcessThreadAndSystemWideTargets) {
  if (!can_record_stacks()) GTEST_SKIP() << "needs root and tracefs for sched:sched_switch";
  pt::TempDir dir;
  const std::string perfscope = PERFSCOPE_CLI_PATH;
  for (std::string target : {"-p", "-t", "-a"}) {
    SCOPED_TRACE(target);
    std::string file = dir.path() + "/target" + target + ".data";
    std::string out = dir.path() + "/workload" + target + ".txt";
    pt::CommandResult recorded;
    if (target == "-a") {
      recorded = pt::run_perfscope(
          {"record", "--off-cpu", "-g", "-a", "-o", file, "--", workload, "phases", "250"});
      std::ofstream(out) << recorded.out;
    } else {
      // The workload waits on a FIFO until the recorder says it records, then runs its phases;
      // perfscope stays attached until it exits.
      recorded = pt::run_command(
          {"/bin/sh", "-c",
           "mkdir -p \"$6\" && mkfifo \"$6/go\" || exit 8; "
           "\"$1\" phases 250 wait < \"$6/go\" > \"$2\" & pid=$!; exec 3> \"$6/go\"; \"$3\" -v "
           "record --off-cpu -g $4 $pid -o \"$5\" 2> \"$6/err\" & "
           "recorder=$!; tries=0; until grep -q 'perfscope: recording' \"$6/err\"; do "
           "sleep 0.05; tries=$((tries + 1)); [ $tries -lt 600 ] || exit 9; done; echo g >&3; "
           "wait $recorder; status=$?; cat \"$6/err\" >&2; exit $status",
           "sh", workload, out, perfscope, target, file, dir.path() + "/fifo" + target});
    }
    pt::expect_no_crash(recorded);
    ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
    if (target == "-a" && (recorded.err.find("(0 records lost)") == std::string::npos ||
                           recorded.err.find("never came") != std::string::npos)) {
      // System-wide, the suite's neighbours (a browser test) switch too: a lost or missing
      // switch-in leaves a whole interval out, so the measured lengths cannot be checked.
      GTEST_SKIP() << "-a: switches were lost or never came: " << recorded.err;
    }
    std::ifstream in(out);
    std::string printed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<double> phases = measured(printed);
    ASSERT_EQ(phases.size(), 3u) << printed << recorded.err;
    auto report = pt::run_perfscope({"report", "-i", file, "--format", "folded"});
    ASSERT_EQ(report.exit_status, 0) << report.err;
    auto lines = pt::parse_folded(report.out);
    double slept = weight_of(lines, "[offcpu-time];offcpu_workload;", {";sleep_phase"});
    double waited = weight_of(lines, "[offcpu-time];offcpu_workload;", {";read_phase"});
    // The workload times each phase with its own clock: that time holds the blocked interval
    // and, on a busy machine, the wait for a CPU between the wake-up and the clock read, which is
    // no blocked time (a loaded clean-clone run drew 239 ms blocked of a 250 ms phase). So the
    // interval is at most the phase (and 3 % of timer slack), and at least nine tenths of it.
    for (auto [blocked, phase] : {std::pair{slept, phases[1]}, std::pair{waited, phases[2]}}) {
      EXPECT_LE(blocked, phase * 1.03) << report.out.substr(0, 3000);
      EXPECT_GE(blocked, phase * 0.9) << report.out.substr(0, 3000);
    }
  }
}

TEST(OffCpuRecord, OptionMistakesSayWhatToDo) {
  auto thresh = pt::run_perfscope(
      {"record", "--off-cpu", "--off-cpu-thresh", "5parsecs", "-o", "/dev/null", "--", "true"});
  EXPECT_NE(thresh.exit_status, 0);
  EXPECT_NE(thresh.err.find("not a duration"), std::string::npos) << thresh.err;
  auto every =
      pt::run_perfscope({"record", "--off-cpu-every", "4", "-o", "/dev/null", "--", "true"});
  EXPECT_NE(every.exit_status, 0);
  EXPECT_NE(every.err.find("add --off-cpu"), std::string::npos) << every.err;
  auto wall =
      pt::run_perfscope({"record", "--wall", "-e", "page-faults", "-o", "/dev/null", "--", "true"});
  EXPECT_NE(wall.exit_status, 0);
  EXPECT_NE(wall.err.find("counts events, not time"), std::string::npos) << wall.err;
}

}  // namespace
