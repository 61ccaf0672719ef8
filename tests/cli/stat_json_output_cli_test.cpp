// perf stat -j/--json-output (issue #44): perf's JSON lines, one object an event, with perf's
// keys in perf's order for a plain run, -r (variance), -I (interval), -A (cpu), --per-core and
// --per-socket (aggregate-number) and --per-thread (thread), checked against perf's own lines from
// the same command; exact counts where the kernel counts exactly (tracepoint hits).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string getpid_tracepoint = "syscalls:sys_enter_getpid";

std::string comm_of(const std::string& pid) {
  std::ifstream file("/proc/" + pid + "/comm");
  std::string comm;
  std::getline(file, comm);
  return comm;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// A line with its values blanked: what must equal perf's (keys, their order, the strings perf
// prints as they are: units, events, metric units, aggregate names).
std::string shape_of(const std::string& line) {
  static const std::regex number(R"(( : )-?[0-9]+(\.[0-9]+)?)");
  static const std::regex counter(R"("counter-value" : "[0-9.]+")");
  std::string shape = std::regex_replace(line, counter, R"("counter-value" : "N")");
  return std::regex_replace(shape, number, "$1N");
}

bool can_count_tracepoints() {
  return pt::tracefs_available() && pt::running_as_root() && ::access(perf_path.c_str(), X_OK) == 0;
}

// perf stat and perfscope stat with the same arguments: each line a JSON object (nothing else on
// stderr), the same number of lines and the same shapes. Returns perfscope's lines.
std::vector<nlohmann::json> expect_lines_as_perfs(const std::vector<std::string>& arguments) {
  std::vector<std::string> perf_command{perf_path, "stat", "-j"};
  std::vector<std::string> our_command{"stat", "-j"};
  perf_command.insert(perf_command.end(), arguments.begin(), arguments.end());
  our_command.insert(our_command.end(), arguments.begin(), arguments.end());
  auto perf = pt::run_command(perf_command);
  auto ours = pt::run_perfscope(our_command);
  EXPECT_EQ(ours.exit_status, perf.exit_status) << ours.err;
  auto perf_lines = lines_of(perf.err), our_lines = lines_of(ours.err);
  std::vector<std::string> perf_shapes, our_shapes;
  for (const auto& line : perf_lines) perf_shapes.push_back(shape_of(line));
  for (const auto& line : our_lines) our_shapes.push_back(shape_of(line));
  EXPECT_EQ(our_shapes, perf_shapes) << "perf:\n" << perf.err << "perfscope:\n" << ours.err;
  std::vector<nlohmann::json> parsed;
  for (const auto& line : our_lines) {
    auto object = nlohmann::json::parse(line, nullptr, false);
    EXPECT_FALSE(object.is_discarded()) << line;
    parsed.push_back(object);
  }
  return parsed;
}

TEST(StatJsonOutput, PerfsLinesForAPlainRunAndRepeats) {
  if (!can_count_tracepoints()) GTEST_SKIP() << "needs perf, root and tracefs";
  auto lines = expect_lines_as_perfs(
      {"-e", "task-clock," + getpid_tracepoint, "--", work_helper, "getpid", "1000"});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["event"], getpid_tracepoint);
  EXPECT_EQ(lines[1]["counter-value"], "1000.000000");
  EXPECT_EQ(lines[0]["unit"], "msec");
  EXPECT_EQ(lines[0]["metric-unit"], "CPUs utilized");
  EXPECT_DOUBLE_EQ(lines[0]["pcnt-running"].get<double>(), 100.0);
  // -r: the variance, after the event.
  auto repeated = expect_lines_as_perfs(
      {"-r", "3", "-e", getpid_tracepoint, "--", work_helper, "getpid", "1000"});
  ASSERT_EQ(repeated.size(), 1u);
  EXPECT_EQ(repeated[0]["counter-value"], "1000.000000");
  EXPECT_DOUBLE_EQ(repeated[0]["variance"].get<double>(), 0.0);
  // A counter that never ran: perf's words, no metric.
  auto idle = expect_lines_as_perfs({"-e", getpid_tracepoint, "--", "true"});
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0]["counter-value"], "0.000000");
}

TEST(StatJsonOutput, IntervalsAndAggregatesAsPerfs) {
  if (!can_count_tracepoints()) GTEST_SKIP() << "needs perf, root and tracefs";
  // Each interval's lines begin with its time.
  auto intervals = expect_lines_as_perfs(
      {"-I", "100", "--interval-count", "2", "-e", "task-clock", "--", "sleep", "1"});
  ASSERT_EQ(intervals.size(), 2u);
  EXPECT_NEAR(intervals[0]["interval"].get<double>(), 0.1, 0.05);
  EXPECT_NEAR(intervals[1]["interval"].get<double>(), 0.2, 0.05);
  for (const auto& aggregation : {"-A", "--per-core", "--per-socket"}) {
    auto lines =
        expect_lines_as_perfs({"-a", aggregation, "-e", getpid_tracepoint, "--", "sleep", "0.05"});
    EXPECT_FALSE(lines.empty()) << aggregation;
  }
  // The threads of a running process (perf takes --per-thread with -p, -t or -a only).
  pt::BackgroundCommand sleeper({"sleep", "10"});
  std::string pid = std::to_string(sleeper.pid());
  for (int tries = 0; tries < 200 && comm_of(pid) != "sleep"; ++tries) {
    ::usleep(5000);  // until it runs sleep (before its exec it is this test's copy)
  }
  auto per_thread = expect_lines_as_perfs(
      {"--per-thread", "-p", pid, "-e", getpid_tracepoint, "--", "sleep", "0.05"});
  ASSERT_EQ(per_thread.size(), 1u);
  EXPECT_EQ(per_thread[0]["thread"], "sleep-" + pid);
  // perfscope also counts a command's threads: named as the command is after its exec.
  auto command = pt::run_perfscope(
      {"stat", "-j", "--per-thread", "-e", getpid_tracepoint, "--", work_helper, "getpid", "1000"});
  ASSERT_EQ(command.exit_status, 0) << command.err;
  auto line = nlohmann::json::parse(lines_of(command.err).at(0));
  EXPECT_EQ(line["thread"].get<std::string>().rfind("work_helper-", 0), 0u) << command.err;
  EXPECT_EQ(line["counter-value"], "1000.000000");
}

TEST(StatJsonOutput, OneFormatAtATime) {
  auto both = pt::run_perfscope({"stat", "-j", "--json", "--", "true"});
  EXPECT_EQ(both.exit_status, 129) << both.err;
  EXPECT_NE(both.err.find("choose one of --json, -j/--json-output and CSV"), std::string::npos)
      << both.err;
}

}  // namespace
