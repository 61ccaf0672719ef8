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
#include <fstream>
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

// perf's default versions are left out, as perfscope shows names ("_IO_file_xsputn@@GLIBC_2.2.5"
// is "_IO_file_xsputn").
std::string without_default_versions(const std::string& text) {
  static const std::regex default_version(R"(@@GLIBC_[0-9.]+\b)");
  return std::regex_replace(text, default_version, "");
}

// Frames perf names otherwise on purpose (docs/FOREIGN_FILES.md, counted and bounded in
// real_programs_cli_test): such lines are compared with the function's name left out.
//   - a compatibility alias of an old version (llseek@GLIBC_2.2.5 where perfscope names __lseek,
//     cfree@GLIBC_2.2.5 for free): perfscope shows the name a program links against;
//   - perf 6.1's unnamed .plt.got stubs ("@plt+0x0" in script, "[.] @plt" in report), which
//     perfscope names NAME@plt;
//   - a return address at the next symbol's first byte ("_dl_start_user+0x0"), which perfscope
//     names by the function that made the call;
//   - a static binary's .plt, which perf names by the _init before it.
bool named_otherwise_on_purpose(const std::string& perf_line) {
  static const std::regex compat(R"([A-Za-z0-9_.]@GLIBC_[0-9.]+\b)");
  static const std::regex unnamed_stub(R"( @plt(\+|$))");
  // perf also names a static binary's .plt by the _init before it ("_init+0x20"), where
  // perfscope names the section (".plt+0x8"), as it names other binaries' stubs.
  static const std::regex init_over_plt(R"( _init\+0x[0-9a-f]+ \(|\[\.\] _init\s*$)");
  return std::regex_search(perf_line, compat) || std::regex_search(perf_line, unnamed_stub) ||
         std::regex_search(perf_line, init_over_plt) ||
         perf_line.find("+0x0 (") != std::string::npos;
}
// perf 6.1 leaves a PIE's .plt header (lazy binding's first call) unnamed ("[unknown]" in
// script, the bare address in report), where perfscope names it ".plt" as perf 6.3 does.
bool plt_header_unnamed_by_perf(const std::string& perf_line, const std::string& our_line) {
  static const std::regex plt_frame(R"( \.plt\+0x[0-9a-f]+ \()");
  static const std::regex plt_row(R"(\[\.\] \.plt\s*$)");
  if (perf_line.find(" [unknown] (") != std::string::npos) {
    return std::regex_replace(our_line, plt_frame, " [unknown] (") == perf_line;
  }
  static const std::regex address_row(R"(\[\.\] 0x[0-9a-f]+\s*$)");
  return std::regex_search(perf_line, address_row) && std::regex_search(our_line, plt_row);
}

std::string without_function_name(const std::string& line) {
  static const std::regex frame(R"(([0-9a-f]+ |\] )[^ ]+?((\+0x[0-9a-f]+)? \(|$))");
  return std::regex_replace(line, frame, "$1<function>$2");
}

std::vector<std::string> lines_of(const std::string& text) {
  std::istringstream stream(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
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
  theirs.out = without_default_versions(theirs.out);
  std::string joined = fmt::format("{}", fmt::join(selection, " "));
  EXPECT_NE(theirs.out.find("cpu-clock"), std::string::npos) << joined << ": nothing selected";
  std::vector<std::string> perf_lines = lines_of(theirs.out), our_lines = lines_of(ours.out);
  std::size_t aliases = 0;
  bool same = perf_lines.size() == our_lines.size();
  std::string differs;
  for (std::size_t i = 0; same && i < perf_lines.size(); ++i) {
    if (perf_lines[i] == our_lines[i]) continue;
    same = plt_header_unnamed_by_perf(perf_lines[i], our_lines[i]) ||
           (named_otherwise_on_purpose(perf_lines[i]) &&
            without_function_name(perf_lines[i]) == without_function_name(our_lines[i]));
    aliases += same ? 1 : 0;
    if (!same)
      differs = fmt::format("line {}:\nperf: {}\nours: {}", i + 1, perf_lines[i], our_lines[i]);
  }
  EXPECT_TRUE(same) << joined << ": perf printed " << perf_lines.size() << " lines, perfscope "
                    << our_lines.size() << "; " << differs
                    << "\nfrom the first byte that differs:\nperf:\n"
                    << from_first_difference(theirs.out, ours.out) << "\nours:\n"
                    << from_first_difference(ours.out, theirs.out);
  // Rare: samples in program start-up and in a few libc functions.
  EXPECT_LE(aliases * 100, perf_lines.size() * 2 + 100) << joined;
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
  std::vector<std::string> perf_rows = sorted_lines(rows_of(without_default_versions(theirs.out)));
  std::vector<std::string> our_rows = sorted_lines(rows_of(ours.out));
  std::vector<std::string> only_perf, only_ours;
  std::set_difference(perf_rows.begin(), perf_rows.end(), our_rows.begin(), our_rows.end(),
                      std::back_inserter(only_perf));
  std::set_difference(our_rows.begin(), our_rows.end(), perf_rows.begin(), perf_rows.end(),
                      std::back_inserter(only_ours));
  // A row perf names otherwise on purpose is ours with the same share, samples and file.
  auto before_symbol = [](const std::string& row) { return row.substr(0, row.rfind("] ")); };
  std::erase_if(only_perf, [&](const std::string& row) {
    bool on_purpose = named_otherwise_on_purpose(row);
    auto mine = std::find_if(only_ours.begin(), only_ours.end(), [&](const std::string& other) {
      return before_symbol(other) == before_symbol(row) &&
             (on_purpose || plt_header_unnamed_by_perf(row, other));
    });
    if (mine == only_ours.end()) return false;
    only_ours.erase(mine);
    return true;
  });
  EXPECT_TRUE(only_perf.empty() && only_ours.empty())
      << joined << ": perf's rows not ours:\n"
      << fmt::format("{}", fmt::join(only_perf, "\n")) << "\nour rows not perf's:\n"
      << fmt::format("{}", fmt::join(only_ours, "\n"));
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
      {"--time", "0%-10%,30%-40%"},
      {"--percentage", "relative", "--symbols", "leaf_60,leaf_30"},
      {"--percentage", "relative", "--comms", "known_answer_fp", "-S", "leaf_10"},
      {"--percentage", "absolute", "--dsos", "known_answer_fp"},
      // Functions whose names contain the text (leaf_10 ... leaf_60, not main).
      {"--symbol-filter", "leaf_"},
      {"--symbol-filter", "af_3"}};
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

// --no-demangle: the names as the symbol table holds them, as perf's; and --demangle, -f.
TEST(PerfSelection, DemanglingAsPerfs) {
  SKIP_WITHOUT_RECORDING();
  static pt::TempDir dir;
  std::string file = dir.path() + "/demo.data";
  auto recorded = pt::run_command({perf_path, "record", "-q", "-g", "-F", "2000", "-o", file, "--",
                                   PERFSCOPE_OVERLOADS_WORKLOAD_PATH, "300"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  for (const auto& words : std::vector<std::vector<std::string>>{
           {"--no-demangle"}, {"--demangle"}, {"-f", "--no-demangle", "-G"}}) {
    expect_same_script(file, words);
  }
  auto mangled = pt::run_perfscope({"script", "-i", file, "--no-demangle", "-F", "sym"});
  EXPECT_NE(mangled.out.find("_Z"), std::string::npos) << mangled.out.substr(0, 600);
}

// --kallsyms FILE: the kernel's names from that file, not /proc/kallsyms nor the build-id
// cache's copy: a copy whose names are all renamed names every kernel frame as perf's.
TEST(PerfSelection, KallsymsFromTheGivenFileAsPerfs) {
  SKIP_WITHOUT_RECORDING();
  const Recording& r = recording();
  if (r.cpu_path.empty()) GTEST_SKIP() << "perf record -a is not allowed here";
  std::ifstream kallsyms("/proc/kallsyms");
  std::string renamed, line;
  bool addresses = false;
  static const std::regex text_symbol(R"(^([0-9a-f]+ [tT] )([a-z].*)$)");
  while (std::getline(kallsyms, line)) {
    addresses = addresses || !line.starts_with("0000000000000000");
    renamed += std::regex_replace(line, text_symbol, "$1renamed_$2") + "\n";
  }
  if (!addresses) GTEST_SKIP() << "kptr_restrict hides kernel addresses from this user";
  static pt::TempDir dir;
  std::string copy = dir.write("kallsyms", renamed);
  expect_same_script(r.cpu_path, {"--kallsyms", copy});
  expect_same_report(r.cpu_path, {"--kallsyms", copy});
  auto ours = pt::run_perfscope({"script", "-i", r.cpu_path, "--kallsyms", copy});
  EXPECT_NE(ours.out.find("renamed_"), std::string::npos) << ours.out.substr(0, 800);
}

// script --header: the header report --header prints, then the same records as without it;
// --header-only: the header alone.
TEST(PerfSelection, ScriptHeaderIsReportsHeaderThenTheRecords) {
  SKIP_WITHOUT_RECORDING();
  const Recording& r = recording();
  auto header = pt::run_perfscope({"report", "-i", r.path, "--header-only"});
  auto plain = pt::run_perfscope({"script", "-i", r.path});
  auto with = pt::run_perfscope({"script", "-i", r.path, "--header"});
  auto only = pt::run_perfscope({"script", "-i", r.path, "--header-only"});
  ASSERT_EQ(header.exit_status, 0) << header.err;
  ASSERT_EQ(with.exit_status, 0) << with.err;
  ASSERT_EQ(only.exit_status, 0) << only.err;
  EXPECT_NE(header.out.find("# cmdline : "), std::string::npos) << header.out;
  EXPECT_EQ(with.out, header.out + plain.out);
  EXPECT_EQ(only.out, header.out);
}

TEST(PerfSelection, BadTimesAreOptionErrorsThatShowPerfsForms) {
  SKIP_WITHOUT_RECORDING();
  for (const char* bad : {"abc", "10%/11", "5%-2%", "3,1", "1.1234567891,"}) {
    auto result = pt::run_perfscope({"script", "-i", recording().path, "--time", bad});
    EXPECT_EQ(result.exit_status, 129) << bad;
    EXPECT_NE(result.err.find("A%/N"), std::string::npos) << result.err;
  }
}

// --switch-on/--switch-off: 300 getpid calls, a sleep (one clock_nanosleep), 500 more; the
// tracepoints count each call exactly, so the samples kept are exact.
TEST(PerfSelection, SwitchOnAndOffKeepTheSamplesBetweenTheirEvents) {
  if (!pt::tracefs_available()) GTEST_SKIP() << "no tracefs for syscall tracepoints";
  pt::TempDir dir;
  const std::string file = dir.path() + "/switch.data";
  const std::string getpid = "syscalls:sys_enter_getpid";
  const std::string sleep = "syscalls:sys_enter_clock_nanosleep";
  auto recorded =
      pt::run_perfscope({"record", "-q", "-e", getpid, "-e", sleep, "-o", file, "--",
                         PERFSCOPE_WORK_HELPER_PATH, "getpid-delay-getpid", "300", "20", "500"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  // {getpid samples, sleep samples} of `tool script OPTIONS`.
  auto counts = [&](const std::string& tool, std::vector<std::string> options) {
    std::vector<std::string> command{"script", "-F", "event", "-i", file};
    command.insert(command.end(), options.begin(), options.end());
    auto script =
        tool == "perf" ? pt::run_perf_or_perfscope("perf", command) : pt::run_perfscope(command);
    EXPECT_EQ(script.exit_status, 0) << script.err;
    std::pair<std::size_t, std::size_t> found{0, 0};
    std::istringstream lines(script.out);
    for (std::string line; std::getline(lines, line);) {
      found.first += line.find(getpid) != std::string::npos;
      found.second += line.find(sleep) != std::string::npos;
    }
    return found;
  };
  using Counts = std::pair<std::size_t, std::size_t>;
  EXPECT_EQ(counts("perfscope", {}), (Counts{800, 1}));
  EXPECT_EQ(counts("perfscope", {"--switch-on", sleep}), (Counts{500, 0}));
  EXPECT_EQ(counts("perfscope", {"--switch-on", sleep, "--show-on-off-events"}), (Counts{500, 1}));
  // Nothing after the switch-off event (perf 6.1 goes on after it; its manual says it stops).
  EXPECT_EQ(counts("perfscope", {"--switch-off", sleep}), (Counts{300, 0}));
  EXPECT_EQ(counts("perfscope", {"--switch-off", sleep, "--show-on-off-events"}), (Counts{300, 1}));
  if (::access(perf_path.c_str(), X_OK) == 0) {
    EXPECT_EQ(counts("perf", {"--switch-on", sleep}), (Counts{500, 0}));
    EXPECT_EQ(counts("perf", {"--switch-on", sleep, "--show-on-off-events"}), (Counts{500, 1}));
  }
  // report's totals leave the others out, as --time does.
  auto report = pt::run_perfscope({"report", "--stdio", "-i", file, "--switch-on", sleep});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  EXPECT_NE(report.out.find("# Samples: 500  of event '" + getpid + "'"), std::string::npos)
      << report.out;
  auto unknown = pt::run_perfscope({"script", "-i", file, "--switch-on", "cycles"});
  EXPECT_NE(unknown.exit_status, 0);
  EXPECT_NE(unknown.err.find("--switch-on cycles: there is no such event"), std::string::npos)
      << unknown.err;
}
