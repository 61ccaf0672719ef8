// What perf users type every day works as perf does it: a command after -p/-t is the measuring
// period (stat, record, trace), and stat -x SEP prints perf's CSV layout, compared with perf
// stat -x on the same events.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string perf_path = "/usr/bin/perf";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> fields_of(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, separator)) fields.push_back(field);
  if (!line.empty() && line.back() == separator) fields.push_back("");
  return fields;
}

// A busy process to attach to: a shell loop (no syscalls while it spins).
class BusyProcess {
 public:
  BusyProcess() : process_({"/bin/sh", "-c", "while :; do :; done"}) {}
  ~BusyProcess() { ::kill(process_.pid(), SIGKILL); }
  int pid() const { return process_.pid(); }

 private:
  pt::BackgroundCommand process_;
};

TEST(PerfHabits, StatOfAProcessForTheRunOfACommand) {
  BusyProcess busy;
  auto start = std::chrono::steady_clock::now();
  auto result = pt::run_perfscope({"stat", "-x", ",", "-e", "task-clock", "-p",
                                   std::to_string(busy.pid()), "--", "sleep", "0.5"});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_GE(seconds, 0.5);
  EXPECT_LT(seconds, 3.0);
  auto fields = fields_of(lines_of(result.err).at(0), ',');
  ASSERT_GE(fields.size(), 3u) << result.err;
  EXPECT_EQ(fields[2], "task-clock");
  // The busy loop ran for the half second sleep took (at least a tenth of it on a loaded
  // machine), and no longer than the half second on each of the two CPUs.
  double task_clock_ms = std::stod(fields[0]);
  EXPECT_GT(task_clock_ms, 50.0) << result.err;
  EXPECT_LT(task_clock_ms, 1100.0) << result.err;
  // Counted for the process, not the command: no user and system time of the command.
  auto text = pt::run_perfscope(
      {"stat", "-e", "task-clock", "-t", std::to_string(busy.pid()), "--", "sleep", "0.2"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(
      text.err.find("Performance counter stats for thread id '" + std::to_string(busy.pid()) + "'"),
      std::string::npos)
      << text.err;
  EXPECT_EQ(text.err.find("seconds user"), std::string::npos) << text.err;
}

TEST(PerfHabits, RecordOfAProcessForTheRunOfACommand) {
  BusyProcess busy;
  pt::TempDir dir;
  std::string file = dir.path() + "/busy.data";
  auto start = std::chrono::steady_clock::now();
  auto recorded = pt::run_perfscope(
      {"record", "-F", "1000", "-o", file, "-p", std::to_string(busy.pid()), "--", "sleep", "0.4"});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_LT(seconds, 3.0);
  auto report = pt::run_perfscope({"report", "--stdio", "--sort", "pid", "-i", file});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  // Only the process was sampled (the sleep is not the target), and for about 0.4 s.
  std::smatch samples;
  ASSERT_TRUE(std::regex_search(report.out, samples, std::regex(R"(# Samples: ([0-9]+) )")))
      << report.out;
  EXPECT_GT(std::stoul(samples[1].str()), 40u) << report.out;
  EXPECT_LT(std::stoul(samples[1].str()), 900u) << report.out;
  EXPECT_NE(report.out.find(std::to_string(busy.pid()) + ":sh"), std::string::npos) << report.out;
  EXPECT_EQ(report.out.find(":sleep"), std::string::npos) << report.out;
}

TEST(PerfHabits, TraceOfAProcessForTheRunOfACommand) {
  // A loop that sleeps: its clock_nanosleep calls are traced while `sleep 0.3` runs.
  pt::BackgroundCommand sleeper({"/bin/sh", "-c", "while :; do sleep 0.05; done"});
  auto start = std::chrono::steady_clock::now();
  auto result =
      pt::run_perfscope({"trace", "-s", "-p", std::to_string(sleeper.pid()), "--", "sleep", "0.3"});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::kill(sleeper.pid(), SIGKILL);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_LT(seconds, 3.0);
  EXPECT_NE((result.out + result.err).find("wait4"), std::string::npos) << result.out << result.err;
}

// The layout scripts parse: value, unit, event, run time, percentage running, metric value,
// metric unit, no header; -r adds the variance after the event; -I leads with the time.
TEST(PerfHabits, StatFieldSeparatorIsPerfsCsvLayout) {
  const std::string events = "task-clock,page-faults,context-switches";
  auto ours = pt::run_perfscope({"stat", "-x", ",", "-e", events, "--", "true"});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  auto our_lines = lines_of(ours.err);
  ASSERT_EQ(our_lines.size(), 3u) << ours.err;
  EXPECT_TRUE(std::regex_match(
      our_lines[0],
      std::regex(
          R"([0-9]+\.[0-9]{2},msec,task-clock,[0-9]+,100\.00,[0-9]+\.[0-9]{3},CPUs utilized)")))
      << our_lines[0];
  EXPECT_TRUE(std::regex_match(
      our_lines[1], std::regex(R"([0-9]+,,page-faults,[0-9]+,100\.00,[0-9]+\.[0-9]{3},[KM]?/sec)")))
      << our_lines[1];

  auto repeated =
      pt::run_perfscope({"stat", "-x", ";", "-r", "3", "-e", "page-faults", "--", "true"});
  ASSERT_EQ(repeated.exit_status, 0) << repeated.err;
  EXPECT_TRUE(
      std::regex_match(lines_of(repeated.err).at(0),
                       std::regex(R"([0-9]+;;page-faults;[0-9]+\.[0-9]{2}%;[0-9]+;100\.00;;)")))
      << repeated.err;

  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  auto theirs = pt::run_command({perf_path, "stat", "-x", ",", "-e", events, "--", "true"});
  ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
  auto their_lines = lines_of(theirs.err);
  ASSERT_EQ(their_lines.size(), our_lines.size()) << theirs.err;
  for (std::size_t i = 0; i < our_lines.size(); ++i) {
    auto mine = fields_of(our_lines[i], ','), perfs = fields_of(their_lines[i], ',');
    ASSERT_EQ(mine.size(), perfs.size()) << our_lines[i] << "\n" << their_lines[i];
    // Unit, event and percentage running are the same words; the values are this run's and
    // perf's, and so is the metric's prefix (K/sec or /sec, by the value).
    for (std::size_t field : {1u, 2u, 4u}) {
      EXPECT_EQ(mine[field], perfs[field]) << our_lines[i] << "\n" << their_lines[i];
    }
    auto without_prefix = [](std::string unit) {
      return unit.size() > 4 && unit.ends_with("/sec") ? unit.substr(unit.size() - 4) : unit;
    };
    EXPECT_EQ(without_prefix(mine[6]), without_prefix(perfs[6])) << our_lines[i] << "\n"
                                                                 << their_lines[i];
  }
  auto our_repeated = fields_of(lines_of(repeated.err).at(0), ';');
  auto their_repeated =
      pt::run_command({perf_path, "stat", "-x", ";", "-r", "3", "-e", "page-faults", "--", "true"});
  EXPECT_EQ(our_repeated.size(), fields_of(lines_of(their_repeated.err).at(0), ';').size())
      << repeated.err << their_repeated.err;
}

}  // namespace

namespace {

// perf trace with no target traces every process until Ctrl-C; -C traces some CPUs.
TEST(PerfHabits, TraceWithoutATargetTracesTheWholeSystem) {
  // A process of its own makes calls the whole-system trace must show.
  pt::BackgroundCommand sleeper({"/bin/sh", "-c", "while :; do sleep 0.05; done"});
  auto result = pt::run_command({"/usr/bin/timeout", "--preserve-status", "-s", "INT", "1",
                                 PERFSCOPE_CLI_PATH, "trace", "-s"});
  ::kill(sleeper.pid(), SIGKILL);
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.err.find("tracing every process"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("Summary of events"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("sleep ("), std::string::npos) << result.err;

  auto cpu = pt::run_perfscope({"trace", "-C", "0", "-s", "--", "sleep", "0.2"});
  EXPECT_EQ(cpu.exit_status, 0) << cpu.err;
  EXPECT_NE(cpu.err.find("Summary of events"), std::string::npos) << cpu.err;
  auto help = pt::run_perfscope({"trace", "--help"});
  for (const char* option : {"-C,--cpu CPUS", "-G,--cgroup CGROUP"}) {
    EXPECT_NE(help.out.find(option), std::string::npos) << help.out;
  }
}

}  // namespace

namespace {

// perf record's everyday options: taken as perf takes them, or refused with the reason.
TEST(PerfHabits, RecordTakesPerfsEverydayOptions) {
  pt::TempDir dir;
  std::string file = dir.path() + "/faults.data";
  // -q: nothing on stderr; -d: the faulting addresses, read back by perf itself.
  auto quiet = pt::run_perfscope(
      {"record", "-q", "-T", "-d", "-e", "page-faults", "-c", "1", "-o", file, "--", "/bin/true"});
  ASSERT_EQ(quiet.exit_status, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  auto ours = pt::run_perfscope({"script", "--json", "-i", file});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_NE(ours.out.find("\"addr\":"), std::string::npos) << ours.out.substr(0, 2000);
  if (::access(perf_path.c_str(), X_OK) == 0) {
    auto theirs = pt::run_command({perf_path, "script", "-F", "addr", "-i", file});
    ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
    std::size_t nonzero = 0;
    for (const auto& line : lines_of(theirs.out)) {
      if (line.find_first_not_of(" 0") != std::string::npos) ++nonzero;
    }
    EXPECT_GT(nonzero, 10u) << theirs.out;
  }

  // -B: no build ids in the file; --switch-events: SWITCH records, as perf shows them.
  std::string switches = dir.path() + "/switches.data";
  auto recorded = pt::run_perfscope(
      {"record", "-q", "-B", "--switch-events", "-o", switches, "--", "sleep", "0.01"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto script = pt::run_perfscope({"script", "--show-switch-events", "-i", switches});
  EXPECT_NE(script.out.find("PERF_RECORD_SWITCH OUT"), std::string::npos) << script.out;
  if (::access(perf_path.c_str(), X_OK) == 0) {
    // perf lists the files samples hit, none with a build id.
    auto ids = pt::run_command({perf_path, "buildid-list", "-i", switches});
    EXPECT_FALSE(std::regex_search(ids.out, std::regex("[0-9a-f]{40}"))) << ids.out;
    auto theirs = pt::run_command({perf_path, "script", "--show-switch-events", "-i", switches});
    // The switch lines, byte for byte (sample lines differ by perf's symbol versions).
    auto switch_lines = [](const std::string& text) {
      std::string kept;
      for (const auto& line : lines_of(text)) {
        if (line.find("PERF_RECORD_SWITCH") != std::string::npos) kept += line + "\n";
      }
      return kept;
    };
    EXPECT_FALSE(switch_lines(script.out).empty()) << script.out;
    EXPECT_EQ(switch_lines(script.out), switch_lines(theirs.out));
  }

  // -m takes sizes and rounds up to a power of two, saying so.
  auto sized = pt::run_perfscope({"record", "-m", "3", "-o", dir.path() + "/m.data", "--", "true"});
  ASSERT_EQ(sized.exit_status, 0) << sized.err;
  EXPECT_NE(sized.err.find("-m 3: rounded up to 4 pages"), std::string::npos) << sized.err;
  auto megabytes =
      pt::run_perfscope({"record", "-m", "1M", "-o", dir.path() + "/m.data", "--", "true"});
  ASSERT_EQ(megabytes.exit_status, 0) << megabytes.err;
  EXPECT_EQ(megabytes.err.find("rounded"), std::string::npos) << megabytes.err;

  // What perfscope does not write is refused with the reason and what to do instead.
  for (const std::vector<std::string>& refused : {std::vector<std::string>{"-z"}, {"-s"}}) {
    std::vector<std::string> argv{"record"};
    argv.insert(argv.end(), refused.begin(), refused.end());
    argv.insert(argv.end(), {"-o", dir.path() + "/no.data", "--", "true"});
    auto result = pt::run_perfscope(argv);
    EXPECT_EQ(result.exit_status, 129) << result.err;
    EXPECT_EQ(result.err.find("unknown option"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("perfscope"), std::string::npos) << result.err;
  }

  // top -F max, as record's.
  auto top = pt::run_perfscope({"top", "-F", "max", "--batch", "1", "-d", "0.3"});
  EXPECT_EQ(top.exit_status, 0) << top.err;
}

}  // namespace

namespace {

// perf report's everyday options and sort keys.
TEST(PerfHabits, ReportTakesPerfsEverydayOptions) {
  pt::TempDir dir;
  std::string file = dir.path() + "/fp.data";
  auto recorded = pt::run_perfscope(
      {"record", "-q", "-g", "-F", "1000", "-o", file, "--", PERFSCOPE_KNOWN_ANSWER_FP_PATH});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto report = [&](std::vector<std::string> words) {
    std::vector<std::string> argv{"report", "--stdio", "-i", file};
    argv.insert(argv.end(), words.begin(), words.end());
    return pt::run_perfscope(argv);
  };
  auto plain = report({});
  ASSERT_EQ(plain.exit_status, 0) << plain.err;
  // -g alone, also as the last word, is the default graph; perf's comma syntax is understood.
  EXPECT_EQ(report({"-g"}).out, plain.out);
  EXPECT_EQ(pt::run_perfscope({"report", "--stdio", "-i", file, "-g"}).out, plain.out);
  EXPECT_EQ(report({"-g", "graph,0.5,caller"}).out, report({"-g", "caller"}).out);
  EXPECT_EQ(report({"-G"}).out, report({"-g", "caller"}).out);
  auto folded = report({"-g", "folded"});
  EXPECT_EQ(folded.exit_status, 129);
  EXPECT_NE(folded.err.find("--format folded"), std::string::npos) << folded.err;
  // -n (the Samples column is always there), -q (only the rows).
  EXPECT_EQ(report({"-n"}).out, plain.out);
  auto quiet = report({"-q"});
  ASSERT_EQ(quiet.exit_status, 0) << quiet.err;
  EXPECT_EQ(quiet.out.find('#'), std::string::npos) << quiet.out;
  EXPECT_NE(quiet.out.find("leaf_60"), std::string::npos) << quiet.out;
  // --max-stack 2: the sample's ip and one caller (leaf_60 and work_60), so main is gone.
  auto whole = report({"--no-children", "-g", "caller"});
  auto short_chains = report({"--no-children", "-g", "caller", "--max-stack", "2"});
  EXPECT_NE(whole.out.find("\n               main\n"), std::string::npos) << whole.out;
  EXPECT_NE(short_chains.out.find("---work_60"), std::string::npos) << short_chains.out;
  EXPECT_EQ(short_chains.out.find("\n               main\n"), std::string::npos)
      << short_chains.out;
  // -F: the columns; perf's sort keys, symbol for sym, and ordering words.
  auto fields = report({"--no-children", "-F", "overhead,sym"});
  ASSERT_EQ(fields.exit_status, 0) << fields.err;
  EXPECT_NE(fields.out.find("# Overhead  Symbol\n"), std::string::npos) << fields.out;
  EXPECT_EQ(report({"--sort", "symbol"}).out, report({"--sort", "sym"}).out);
  auto files = report({"--no-children", "--sort", "srcfile"});
  EXPECT_NE(files.out.find("known_answer.cpp"), std::string::npos) << files.out;
  auto parents = report({"--no-children", "--sort", "parent"});
  EXPECT_NE(parents.out.find("[other]"), std::string::npos) << parents.out;
  auto by_samples = report({"--no-children", "--sort", "sample,sym"});
  EXPECT_EQ(by_samples.exit_status, 0) << by_samples.err;
  // --show-total-period and -F period: each row's own period sum, as perf's Period column; the
  // rows add up to the event's count.
  auto with_period = report({"--no-children", "--show-total-period", "-g", "none"});
  ASSERT_EQ(with_period.exit_status, 0) << with_period.err;
  EXPECT_NE(with_period.out.find("# Overhead       Samples        Period  Command"),
            std::string::npos)
      << with_period.out;
  auto count_at = with_period.out.find("# Event count (approx.): ");
  ASSERT_NE(count_at, std::string::npos);
  std::uint64_t event_count = std::stoull(with_period.out.substr(count_at + 25));
  std::uint64_t summed = 0;
  std::istringstream rows(with_period.out);
  for (std::string row; std::getline(rows, row);) {
    std::istringstream words(row);
    std::string share, samples, period;
    if (row.starts_with("  ") && (words >> share >> samples >> period) && share.ends_with("%")) {
      summed += std::stoull(period);
    }
  }
  EXPECT_EQ(summed, event_count) << with_period.out;
  auto period_fields = report({"--no-children", "-F", "overhead,period,sym", "-q", "-g", "none"});
  ASSERT_EQ(period_fields.exit_status, 0) << period_fields.err;
  if (::access(perf_path.c_str(), X_OK) == 0) {
    // The shares and periods of perf's rows, in perf's order.
    auto numbers = [](const std::string& text) {
      std::vector<std::string> found;
      std::istringstream lines(text);
      for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string share, period;
        if ((words >> share >> period) && share.ends_with("%")) found.push_back(share + period);
      }
      return found;
    };
    auto theirs = pt::run_command({perf_path, "report", "--stdio", "-i", file, "--no-children",
                                   "-F", "overhead,period,sym", "-q", "-g", "none"});
    EXPECT_EQ(numbers(period_fields.out), numbers(theirs.out)) << period_fields.out << theirs.out;
  }
  // What perfscope does not print is refused with the reason.
  for (const char* refused : {"-T", "--hierarchy"}) {
    auto result = report({refused});
    EXPECT_EQ(result.exit_status, 129) << result.err;
    EXPECT_EQ(result.err.find("unknown option"), std::string::npos) << result.err;
  }
  // --header-only: the lines perf prints for the same file.
  auto header = pt::run_perfscope({"report", "--header-only", "-i", file});
  ASSERT_EQ(header.exit_status, 0) << header.err;
  EXPECT_NE(header.out.find("# event : name = cpu-clock"), std::string::npos) << header.out;
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  auto theirs = pt::run_command({perf_path, "report", "--header-only", "-i", file});
  for (const char* label :
       {"# hostname : ", "# os release : ", "# arch : ", "# nrcpus online : ", "# cpudesc : "}) {
    auto line_of = [&](const std::string& text) {
      std::size_t at = text.find(label);
      return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
    };
    EXPECT_FALSE(line_of(header.out).empty()) << label;
    EXPECT_EQ(line_of(header.out), line_of(theirs.out)) << label;
  }
}

}  // namespace

namespace {

// Code run from a memfd is named by its mapping, "memfd:NAME (deleted)", as perf names it: no
// perf map is looked for and no JIT advice is given.
// --hide-unresolved: the samples in code without symbols (Debian's stripped coreutils) are left
// out of the rows and the totals, and the rest are perf's rows with perf's shares.
TEST(PerfHabits, ReportHidesUnresolvedSamplesAsPerf) {
  pt::TempDir dir;
  std::string file = dir.path() + "/stripped.data";
  auto recorded = pt::run_perfscope({"record", "-q", "-e", "cpu-clock", "-o", file, "--", "sh",
                                     "-c", "yes | head -c 200000000 > /dev/null"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto rows = [&](const std::string& tool, std::vector<std::string> words) {
    std::vector<std::string> argv{
        "report", "--stdio", "-q", "-i", file, "-F", "overhead,comm,dso,sym"};
    argv.insert(argv.end(), words.begin(), words.end());
    auto result = pt::run_perf_or_perfscope(tool, argv);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    // perf's symbol versions (cfree@GLIBC_2.2.5) are names perfscope prints bare.
    static const std::regex version(R"(@@?GLIBC_[0-9.]+)");
    std::string text = std::regex_replace(result.out, version, "");
    std::vector<std::string> lines;
    std::istringstream split(text);
    for (std::string line; std::getline(split, line);) {
      if (line.find('%') != std::string::npos) lines.push_back(line);
    }
    return lines;
  };
  auto unresolved = [](const std::vector<std::string>& lines) {
    return std::count_if(lines.begin(), lines.end(), [](const std::string& line) {
      return line.find("[.] 0x") != std::string::npos;
    });
  };
  auto all = rows("perfscope", {});
  auto hidden = rows("perfscope", {"--hide-unresolved"});
  EXPECT_EQ(unresolved(hidden), 0) << ::testing::PrintToString(hidden);
  if (unresolved(all) == 0) GTEST_SKIP() << "yes and head have symbols here (debug files)";
  EXPECT_LT(hidden.size(), all.size());
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  // perf 6.1 leaves the C library's PLT stubs unnamed ("@plt") where perfscope names them
  // (__tunable_get_val@plt): the same rows, compared with the stubs' names left out, in any
  // order among rows of the same share.
  // (And perf names free by its compatibility alias, cfree@GLIBC_2.2.5.)
  auto unnamed_stubs = [](std::vector<std::string> lines) {
    static const std::regex stub(R"(\[\.\] [A-Za-z0-9_.]*@plt)");
    static const std::regex cfree(R"(\[\.\] cfree$)");
    for (std::string& line : lines) {
      line = std::regex_replace(std::regex_replace(line, stub, "[.] @plt"), cfree, "[.] free");
    }
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  std::vector<std::string> ours = unnamed_stubs(hidden);
  std::vector<std::string> perfs = unnamed_stubs(rows("perf", {"--hide-unresolved"}));
  std::vector<std::string> ours_only, perfs_only;
  std::set_difference(ours.begin(), ours.end(), perfs.begin(), perfs.end(),
                      std::back_inserter(ours_only));
  std::set_difference(perfs.begin(), perfs.end(), ours.begin(), ours.end(),
                      std::back_inserter(perfs_only));
  EXPECT_TRUE(ours_only.empty() && perfs_only.empty())
      << "perfscope's rows only:\n"
      << ::testing::PrintToString(ours_only) << "\nperf's rows only:\n"
      << ::testing::PrintToString(perfs_only);
}

TEST(PerfHabits, MemfdCodeIsNamedByItsMapping) {
#ifndef PERFSCOPE_MEMFD_CODE_WORKLOAD_PATH
  GTEST_SKIP() << "the workload is x86-64 machine code";
#else
  pt::TempDir dir;
  std::string file = dir.path() + "/memfd.data";
  auto recorded = pt::run_perfscope(
      {"record", "-q", "-F", "1000", "-o", file, "--", PERFSCOPE_MEMFD_CODE_WORKLOAD_PATH});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto ours = pt::run_perfscope({"report", "--stdio", "--sort", "dso", "-i", file});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_NE(ours.out.find("memfd:sealed-code (deleted)"), std::string::npos) << ours.out;
  for (const char* wrong : {"perf-", "--perf-basic-prof", "--jit"}) {
    EXPECT_EQ((ours.out + ours.err).find(wrong), std::string::npos)
        << wrong << ours.out << ours.err;
  }
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  auto theirs = pt::run_command({perf_path, "report", "--stdio", "--sort", "dso", "-i", file});
  EXPECT_NE(theirs.out.find("memfd:sealed-code (deleted)"), std::string::npos) << theirs.out;
#endif
}

}  // namespace

namespace {

// The smaller hard edges: each answer a sentence that names what was wrong.
TEST(PerfHabits, SmallerEdgesAreSentences) {
  auto sched = pt::run_perfscope({"sched", "bogus"});
  EXPECT_EQ(sched.exit_status, 129);
  EXPECT_NE(sched.err.find("'bogus' is not a sched subcommand (they are record, timehist"),
            std::string::npos)
      << sched.err;
  pt::TempDir dir;
  auto push = pt::run_perfscope({"push", dir.path(), "http://127.0.0.1:9"});
  EXPECT_EQ(push.exit_status, 129);
  EXPECT_NE(push.err.find("cannot read " + dir.path() + ": it is a directory"), std::string::npos)
      << push.err;
  auto top = pt::run_perfscope({"top", "--percent-limit", "200"});
  EXPECT_EQ(top.exit_status, 129);
  EXPECT_NE(top.err.find("not in the range 0 to 100"), std::string::npos) << top.err;
  auto stat = pt::run_perfscope({"stat", "-e", "", "--", "true"});
  EXPECT_EQ(stat.exit_status, 129);
  EXPECT_NE(stat.err.find("no event given"), std::string::npos) << stat.err;
  if (::geteuid() == 0) {
    // Root may lock any amount: a buffer too large for memory says so, and does not advise
    // CAP_IPC_LOCK to a process that has it.
    auto huge =
        pt::run_perfscope({"record", "-m", "64G", "-o", dir.path() + "/huge.data", "--", "true"});
    EXPECT_NE(huge.exit_status, 0);
    EXPECT_NE(huge.err.find("this process may lock any amount"), std::string::npos) << huge.err;
    EXPECT_EQ(huge.err.find("run with CAP_IPC_LOCK"), std::string::npos) << huge.err;
  }
}

}  // namespace

namespace {

// Help texts are written for people: no option parser's leftovers, and -v says what it shows
// only where events are opened.
TEST(PerfHabits, HelpTextsHaveNoParserLeftovers) {
  const std::vector<std::vector<std::string>> helps{{"stat"},
                                                    {"record"},
                                                    {"report"},
                                                    {"script"},
                                                    {"annotate"},
                                                    {"diff"},
                                                    {"list"},
                                                    {"top"},
                                                    {"trace"},
                                                    {"sched"},
                                                    {"archive"},
                                                    {"inject"},
                                                    {"push"},
                                                    {"doctor"},
                                                    {"sched", "record"},
                                                    {"sched", "timehist"},
                                                    {"sched", "latency"},
                                                    {"sched", "states"}};
  const std::vector<std::string> opens_events{"stat",  "record", "list",  "top",
                                              "trace", "sched",  "doctor"};
  for (const auto& words : helps) {
    std::vector<std::string> argv = words;
    argv.push_back("--help");
    auto help = pt::run_perfscope(argv);
    SCOPED_TRACE(words.back());
    ASSERT_EQ(help.exit_status, 0) << help.err;
    for (const char* leftover : {"{false}", "{true}", "INT:", "UINT:", "FLOAT:", "TEXT:",
                                 "Excludes:", "Needs:", " in [", "POSITIVE"}) {
      EXPECT_EQ(help.out.find(leftover), std::string::npos) << leftover << "\n" << help.out;
    }
    // sched's own subcommands: only its record opens events.
    bool events =
        std::find(opens_events.begin(), opens_events.end(), words.front()) != opens_events.end() &&
        (words.size() == 1 || words.back() == "record");
    EXPECT_EQ(help.out.find("perf_event_attr of a failed event") != std::string::npos, events)
        << help.out;
  }
}

}  // namespace
