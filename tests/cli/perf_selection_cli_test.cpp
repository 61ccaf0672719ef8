// perf's sample selection on script and report (issue #44): --comms, --pid, --tid, --cpu,
// --time (ranges and percentage slices), -S/--symbols and --dsos pick the same samples as perf
// on the same file; script prints the same bytes (perf's compatibility aliases aside), report the
// same rows and shares (of the whole event, --time and --cpu leaving samples out of the totals),
// the same columns left out for a filter that keeps one value, and the same header lines.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";

struct Recording {
  std::string problem;  // why the tests skip
  std::string path, cpu_path;
  std::string second_pid;   // the workload started second
  std::string middle_time;  // the time of the middle sample, as perf script prints it
};

// The rows of a --stdio report (no '#' lines, blank lines or perf's closing tip), trailing blanks
// dropped.
std::string rows_of(const std::string& text) {
  std::istringstream lines(text);
  std::string rows;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    line.erase(line.find_last_not_of(' ') + 1);
    rows += line + "\n";
  }
  return rows;
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::istringstream lines(text);
  std::vector<std::string> all;
  for (std::string line; std::getline(lines, line);) all.push_back(line);
  std::sort(all.begin(), all.end());
  return all;
}

// The header lines perf and perfscope share: "# comm: X" and the Samples line.
std::vector<std::string> shared_header_lines(const std::string& text) {
  static const std::regex wanted(R"(^# (comm|dso|symbol): .*|^# Samples: .*)");
  std::istringstream lines(text);
  std::vector<std::string> found;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, wanted)) found.push_back(line);
  }
  return found;
}

const Recording& recording() {
  static const Recording made = [] {
    Recording r;
    if (::access(perf_path.c_str(), X_OK) != 0) {
      r.problem = "perf (linux-perf) is not installed";
      return r;
    }
    static pt::TempDir dir;
    r.path = dir.path() + "/two.data";
    std::string workload = PERFSCOPE_KNOWN_ANSWER_FP_PATH;
    auto recorded = pt::run_command(
        {perf_path, "record", "-q", "-F", "2000", "-g", "-o", r.path, "--", "sh", "-c",
         workload + " 60 >/dev/null & " + workload + " 60 3,6,1 >/dev/null; wait"});
    if (recorded.exit_status != 0) {
      r.problem = "perf record failed here: " + recorded.err;
      return r;
    }
    auto tasks = pt::run_command({perf_path, "script", "-i", r.path, "-F", "pid,time"});
    std::istringstream lines(tasks.out);
    std::string pid, time;
    std::vector<std::string> pids, times;
    while (lines >> pid >> time) {
      times.push_back(time.substr(0, time.size() - 1));
      if (pids.empty() || pids.back() != pid) pids.push_back(pid);
    }
    if (!times.empty()) r.middle_time = times[times.size() / 2];
    r.second_pid = pids.empty() ? "" : pids.back();
    // A -a recording carries each sample's CPU; an unprivileged user may not make one.
    r.cpu_path = dir.path() + "/cpus.data";
    auto wide = pt::run_command(
        {perf_path, "record", "-q", "-a", "-F", "999", "-o", r.cpu_path, "--", workload, "30"});
    if (wide.exit_status != 0) r.cpu_path.clear();
    return r;
  }();
  return made;
}

// `text` from the start of the line where it and `other` first differ (a few lines of it).
std::string from_first_difference(const std::string& text, const std::string& other) {
  std::size_t at = 0;
  while (at < text.size() && at < other.size() && text[at] == other[at]) ++at;
  std::size_t line = text.rfind('\n', at == 0 ? 0 : at - 1);
  line = line == std::string::npos ? 0 : line + 1;
  std::size_t from = line > 300 ? text.rfind('\n', line - 300) : 0;
  return text.substr(from == std::string::npos ? 0 : from, 900);
}

// perf's names in perfscope's spelling: where several symbols name one address perf may pick a
// compatibility alias of an old version (pthread_sigmask@GLIBC_2.2.5, cfree@GLIBC_2.2.5 for
// free), perfscope the name a program links against (docs/FOREIGN_FILES.md).
std::string with_perfscope_names(const std::string& text) {
  static const std::regex old_free(R"(\bcfree@GLIBC_2\.2\.5\b)");
  static const std::regex old_version(R"(@GLIBC_[0-9.]+\b)");
  return std::regex_replace(std::regex_replace(text, old_free, "free"), old_version, "");
}

void expect_same_script(const std::string& file, const std::vector<std::string>& selection) {
  std::vector<std::string> words{"script", "-i", file};
  words.insert(words.end(), selection.begin(), selection.end());
  std::vector<std::string> perf{perf_path};
  perf.insert(perf.end(), words.begin(), words.end());
  auto theirs = pt::run_command(perf);
  auto ours = pt::run_perfscope(words);
  ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  theirs.out = with_perfscope_names(theirs.out);
  std::string joined = fmt::format("{}", fmt::join(selection, " "));
  EXPECT_NE(theirs.out.find("cpu-clock"), std::string::npos) << joined << ": nothing selected";
  EXPECT_TRUE(theirs.out == ours.out)
      << joined << ": perf printed " << theirs.out.size() << " bytes, perfscope " << ours.out.size()
      << "; from the first line that differs:\nperf:\n"
      << from_first_difference(theirs.out, ours.out) << "\nours:\n"
      << from_first_difference(ours.out, theirs.out);
}

void expect_same_report(const std::string& file, const std::vector<std::string>& selection) {
  std::vector<std::string> words{"report",        "--stdio", "-n",   "-i",     file,
                                 "--no-children", "-g",      "none", "--sort", "comm,dso,sym"};
  words.insert(words.end(), selection.begin(), selection.end());
  std::vector<std::string> perf{perf_path};
  perf.insert(perf.end(), words.begin(), words.end());
  auto theirs = pt::run_command(perf);
  auto ours = pt::run_perfscope(words);
  ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  std::string joined = fmt::format("{}", fmt::join(selection, " "));
  // As sets of rows: among rows of equal share perf's order is its sort keys' (unresolved
  // addresses after names), which this test does not check.
  EXPECT_EQ(sorted_lines(rows_of(ours.out)),
            sorted_lines(rows_of(with_perfscope_names(theirs.out))))
      << joined;
  EXPECT_EQ(shared_header_lines(ours.out), shared_header_lines(theirs.out)) << joined;
}

#define SKIP_WITHOUT_RECORDING() \
  if (!recording().problem.empty()) GTEST_SKIP() << recording().problem

}  // namespace

TEST(PerfSelection, ScriptPicksPerfsSamples) {
  SKIP_WITHOUT_RECORDING();
  const Recording& r = recording();
  ASSERT_FALSE(r.second_pid.empty());
  const std::vector<std::vector<std::string>> selections{
      {"--pid", r.second_pid},
      {"--tid", r.second_pid},
      {"--comms", "known_answer_fp"},
      {"-c", "sh,known_answer_fp"},
      {"--time", "10%/2"},
      {"--time", "0%-10%,30%-40%"},
      {"--time", r.middle_time + ","},
      {"--time", "," + r.middle_time},
      {"-S", "leaf_60"},
      {"--symbols", "leaf_30,leaf_10"},
      {"--dsos", "known_answer_fp"},
      {"--comms", "known_answer_fp", "--time", "50%-100%", "-S", "leaf_10"}};
  for (const auto& selection : selections) expect_same_script(r.path, selection);
}

// perf script's --ns, --reltime, --deltatime, -G/--hide-call-graph and --max-stack, alone and
// with a selection: the same bytes.
TEST(PerfSelection, ScriptTimesAndCallChainsAsPerfs) {
  SKIP_WITHOUT_RECORDING();
  const Recording& r = recording();
  const std::vector<std::vector<std::string>> options{
      {"--ns"},
      {"--reltime"},
      {"--deltatime"},
      {"--ns", "--reltime"},
      {"-G"},
      {"--hide-call-graph", "--comms", "sh"},
      {"--max-stack", "2"},
      {"--max-stack", "0"},
      {"--ns", "--deltatime", "-G", "--time", "50%-100%"}};
  for (const auto& words : options) expect_same_script(r.path, words);
  auto both = pt::run_perfscope({"script", "-i", r.path, "--reltime", "--deltatime"});
  EXPECT_EQ(both.exit_status, 129) << both.err;
}

TEST(PerfSelection, ReportKeepsPerfsRowsSharesAndColumns) {
  SKIP_WITHOUT_RECORDING();
  const Recording& r = recording();
  const std::vector<std::vector<std::string>> selections{
      {"--comms", "known_answer_fp"},
      {"--comms", "known_answer_fp", "--dsos", "known_answer_fp"},
      {"-S", "leaf_60"},
      {"--symbols", "leaf_60,leaf_30"},
      {"--time", "10%/3"},
      {"--time", "0%-10%,30%-40%"}};
  for (const auto& selection : selections) expect_same_report(r.path, selection);
  // Not --pid and --tid: perf report applies them to merged rows (a row of two processes' samples
  // is kept or dropped whole, by the thread of its first sample); script, above, agrees with
  // perf's, and report keeps the same samples script does (docs/FOREIGN_FILES.md).
}

TEST(PerfSelection, CpuListsPickPerfsSamples) {
  SKIP_WITHOUT_RECORDING();
  const Recording& r = recording();
  if (r.cpu_path.empty()) GTEST_SKIP() << "perf record -a is not allowed here";
  for (const auto& selection :
       std::vector<std::vector<std::string>>{{"--cpu", "0"}, {"-C", "0-1"}}) {
    expect_same_script(r.cpu_path, selection);
    expect_same_report(r.cpu_path, selection);
  }
  // Samples without a CPU: perf refuses -C; so does perfscope, saying why.
  auto refused = pt::run_perfscope({"script", "-i", r.path, "--cpu", "0"});
  EXPECT_EQ(refused.exit_status, 129);
  EXPECT_NE(refused.err.find("carry no CPU"), std::string::npos) << refused.err;
}

TEST(PerfSelection, BadTimesAreOptionErrorsThatShowPerfsForms) {
  SKIP_WITHOUT_RECORDING();
  for (const char* bad : {"abc", "10%/11", "5%-2%", "3,1", "1.1234567891,"}) {
    auto result = pt::run_perfscope({"script", "-i", recording().path, "--time", bad});
    EXPECT_EQ(result.exit_status, 129) << bad;
    EXPECT_NE(result.err.find("A%/N"), std::string::npos) << result.err;
  }
}
