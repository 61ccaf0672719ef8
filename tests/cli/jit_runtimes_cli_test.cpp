// JIT code by name with the real runtimes from Debian's packages: Node.js with its perf map
// (--perf-basic-prof) and its jitdump (--perf-prof), `record --jit` with no switch from the user,
// the same recordings after the runtime's files are gone (the recording carries them), perf
// inject --jit + perf report on the same file as the oracle, and the JVM through --jit.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
namespace fs = std::filesystem;

const std::string node_path = "/usr/bin/node";
const std::string java_path = "/usr/bin/java";
const std::string javac_path = "/usr/bin/javac";
const std::string perf_path = "/usr/bin/perf";

// The workload's optimized JS: sieve, and run once TurboFan inlined sieve into it (after about
// two seconds here; perf inject + perf report split the samples the same way).
const std::string hot_js = R"(JS:\*(?:sieve|run) )";

// The share of the rows whose symbol matches `symbol` (a regex), summed.
double share_of(const std::string& report, const std::string& symbol) {
  double share = 0;
  std::regex row(R"((?:^|\n)\s*([0-9.]+)%[^\n]*\[\.\] )" + symbol + R"([^\n]*)");
  for (std::sregex_iterator it(report.begin(), report.end(), row), end; it != end; ++it) {
    share += std::stod((*it)[1]);
  }
  return share;
}

// The share of the rows a regex matches from the start of their shared-object column.
double share_of_regex(const std::string& report, const std::string& columns) {
  double share = 0;
  std::regex row(R"((?:^|\n)\s*([0-9.]+)%[^\n]*)" + columns);
  for (std::sregex_iterator it(report.begin(), report.end(), row), end; it != end; ++it) {
    share += std::stod((*it)[1]);
  }
  return share;
}

// The symbol of a report's first row ("JS:*sieve ..." of "[.] JS:*sieve ...").
std::string top_row_symbol(const std::string& report) {
  std::smatch match;
  if (!std::regex_search(report, match,
                         std::regex(R"((?:^|\n)\s*[0-9.]+%[^\n]*?\[[.k]\] ([^\n]*))"))) {
    return {};
  }
  return match[1].str();
}

// Removes what the runtime left: its perf map and the jitdumps in `dir`.
void remove_jit_files(const std::string& report, const std::string& dir) {
  std::smatch pid;
  if (std::regex_search(report, pid, std::regex(R"((?:\[JIT\] tid |jit-)([0-9]+))"))) {
    fs::remove("/tmp/perf-" + pid[1].str() + ".map");
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with("jit-")) fs::remove(entry.path());
  }
}

class NodeJit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(node_path.c_str(), X_OK) != 0) GTEST_SKIP() << "node is not installed (nodejs)";
  }
  // Records node in the test's directory (where --perf-prof writes its jitdump).
  pt::CommandResult record(std::vector<std::string> arguments, const std::string& file) {
    // A 4 MiB buffer per CPU, and no stack copies (-g takes 1 KiB per sample and a CFI walk to
    // fill frame-pointer gaps): the sanitizer build's recorder, starved on a loaded machine,
    // lost 14079 records of the hot loop with the default buffer, and 2592 of 13907 with this
    // one and -g, and the shares with them (the kernel drops records in bursts). Tests that
    // need call chains ask for the kernel's frame-pointer walk.
    std::vector<std::string> argv{"record", "-F", "1000", "-m", "1024", "-o", file};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    return pt::run_perfscope_in(dir_.path(), argv);
  }
  pt::CommandResult report(const std::string& file) {
    std::vector<std::string> argv{"report", "--stdio", "--no-children", "-g", "none", "-i", file};
    std::vector<std::string> thread = main_thread();
    argv.insert(argv.end(), thread.begin(), thread.end());
    return pt::run_perfscope(argv);
  }
  // --tid of node's main thread when sieve.js ran as the program (it writes sieve.pid): the
  // shares are of the thread that runs the JS, not of node's compiler and GC threads, which a
  // loaded machine once made a fifth of the samples.
  std::vector<std::string> main_thread() const {
    std::ifstream pid_file(dir_.path() + "/sieve.pid");
    std::string pid;
    if (!(pid_file >> pid)) return {};
    return {"--tid", pid};
  }
  // sieve() is the hot JS function: about nine tenths of the run.
  std::string script() const {
    return std::string(PERFSCOPE_SOURCE_DIR) + "/tests/cli/data/sieve.js";
  }
  pt::TempDir dir_;
};

TEST_F(NodeJit, PerfMapNamesTheHotFunctionAndTheRecordingCarriesIt) {
  std::string file = dir_.path() + "/map.data";
  auto recorded = record({"--", node_path, "--perf-basic-prof", script()}, file);
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_NE(recorded.err.find("carried 1 JIT symbol file"), std::string::npos) << recorded.err;
  auto before = report(file);
  ASSERT_EQ(before.exit_status, 0) << before.err;
  // The map names the JIT code: sieve() is the main thread's top row and no JIT address is left
  // unnamed. Its share is of node's main thread, whose start (parsing, writing the map's first
  // entries) took up to a third of the samples in a sanitizer pass on a 2-CPU machine, not the
  // usual tenth.
  EXPECT_GE(share_of(before.out, hot_js), 60.0) << before.out;
  EXPECT_EQ(top_row_symbol(before.out).rfind("JS:*sieve ", 0), 0u) << before.out;
  EXPECT_LT(share_of_regex(before.out, R"(\[JIT\] tid [0-9]+\s+\[\.\] 0x)"), 0.5) << before.out;
  remove_jit_files(before.out, dir_.path());
  auto after = report(file);
  ASSERT_EQ(after.exit_status, 0) << after.err;
  EXPECT_EQ(after.out, before.out) << "the map is gone: names from the recording's copy";
}

TEST_F(NodeJit, JitdumpNamesTheHotFunctionAsPerfInjectDoes) {
  std::string file = dir_.path() + "/dump.data";
  auto recorded = record({"--", node_path, "--perf-prof", script()}, file);
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto ours = report(file);
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  double sieve = share_of(ours.out, R"(JS:\*sieve )");
  double run = share_of(ours.out, R"(JS:\*run )");
  // As with the map: node's start took up to a third of the main thread's samples in a
  // sanitizer pass on a 2-CPU machine (68 % left for sieve and run), a tenth when quiet.
  EXPECT_GE(sieve + run, 60.0) << ours.out;
  EXPECT_NE(ours.out.find(" jit-"), std::string::npos) << "the dump names the code's file";

  if (::access(perf_path.c_str(), X_OK) == 0) {
    // perf's way: one ELF file per function written by perf inject --jit, read by perf report.
    std::string injected = dir_.path() + "/injected.data";
    auto inject = pt::run_command({perf_path, "inject", "--jit", "-i", file, "-o", injected});
    ASSERT_EQ(inject.exit_status, 0) << inject.err;
    std::vector<std::string> perf_report{perf_path, "report", "--stdio", "--no-children",
                                         "-g",      "none",   "-i",      injected};
    std::vector<std::string> thread = main_thread();
    perf_report.insert(perf_report.end(), thread.begin(), thread.end());
    auto theirs = pt::run_command(perf_report);
    ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
    EXPECT_NEAR(sieve, share_of(theirs.out, R"(JS:\*sieve )"), 2.0) << theirs.out;
    EXPECT_NEAR(run, share_of(theirs.out, R"(JS:\*run )"), 2.0) << theirs.out;
  }

  remove_jit_files(ours.out, dir_.path());
  auto after = report(file);
  ASSERT_EQ(after.exit_status, 0) << after.err;
  EXPECT_NEAR(share_of(after.out, R"(JS:\*sieve )"), sieve, 0.01) << after.out;

  // annotate disassembles the code bytes the jitdump recorded (here the recording's copy), each
  // load of the function (TurboFan's, on-stack replacement's) apart: every sample lands on one
  // of their instructions.
  std::smatch name;
  ASSERT_TRUE(std::regex_search(after.out, name, std::regex(R"(JS:\*sieve \S+)"))) << after.out;
  auto annotated = pt::run_perfscope({"annotate", "--stdio", "-i", file, name.str()});
  ASSERT_EQ(annotated.exit_status, 0) << annotated.err;
  EXPECT_NE(annotated.out.find("in " + dir_.path() + "/jit-"), std::string::npos) << annotated.out;
  std::size_t total = 0;
  std::regex header(R"(\n([0-9]+) samples, )");
  for (std::sregex_iterator it(annotated.out.begin(), annotated.out.end(), header), end; it != end;
       ++it) {
    total += std::stoul((*it)[1].str());
  }
  EXPECT_GT(total, 100u) << annotated.out;
  std::size_t instructions = 0, samples = 0;
  std::istringstream lines(annotated.out);
  static const std::regex instruction(R"(^\s+(?:[0-9.]+\s+)?([0-9]+)\s+[0-9a-f]{8,}\s+\S.*$)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (!std::regex_match(line, match, instruction)) continue;
    ++instructions;
    samples += std::stoul(match[1].str());
  }
  EXPECT_GT(instructions, 50u) << annotated.out;
  EXPECT_EQ(samples, total) << annotated.out;
}

TEST_F(NodeJit, RecordJitNeedsNoSwitchFromTheUser) {
  std::string file = dir_.path() + "/jit.data";
  auto recorded = record({"--call-graph", "fp", "--jit", "--", node_path, script()}, file);
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_NE(recorded.err.find("--jit: set NODE_OPTIONS=\"--perf-prof"), std::string::npos)
      << recorded.err;
  auto ours = report(file);
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_GE(share_of(ours.out, hot_js), 80.0) << ours.out;
  remove_jit_files(ours.out, dir_.path());
  auto after = report(file);
  EXPECT_GE(share_of(after.out, hot_js), 80.0) << after.out;
  // Frame pointers through JIT code: sieve's caller, run, is in its stacks (its children share
  // holds them).
  auto callers = pt::run_perfscope(
      {"report", "--stdio", "--children", "-g", "none", "--sort", "sym", "-i", file});
  EXPECT_GE(share_of(callers.out, R"(JS:[~^*+]?run \S*sieve\.js)"), 60.0) << callers.out;
}

// DWARF stacks through JIT code: the unwinder has no CFI for the runtime's code and continues by
// its frame pointers, so the JS caller of the hot function is in its chains.
TEST_F(NodeJit, DwarfStacksReachTheJsCallerThroughJitCode) {
  std::string file = dir_.path() + "/dwarf.data";
  auto recorded = pt::run_perfscope_in(
      dir_.path(), {"record", "--jit", "--call-graph", "dwarf", "-F", "500", "-m", "1024", "-o",
                    file, "--", node_path, script(), "800"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto callers = pt::run_perfscope(
      {"report", "--stdio", "--no-children", "-g", "caller", "--percent-limit", "50", "-i", file});
  remove_jit_files(callers.out, dir_.path());
  ASSERT_EQ(callers.exit_status, 0) << callers.err;
  // Most samples (58.6 % in a busy sanitizer pass, where node's start-up takes longer).
  EXPECT_GE(share_of(callers.out, hot_js), 50.0) << callers.out;
  // A line of the call graph of its own, or after the share of a branch ("--93.28%--JS:~run")
  // where a few samples took another way.
  EXPECT_TRUE(std::regex_search(callers.out,
                                std::regex(R"(\n[\s|]*(--[0-9.]+%--)?JS:[~^*+]?run .*sieve\.js)")))
      << callers.out;
}

// Stack copies kept in the file are unwound by each report, through JIT code by the CFI V8 wrote
// into the jitdump (--perf-prof-unwinding-info, which --jit sets): the report says how many
// samples went that way, and every optimized (*) JS frame is in the copies' chains.
TEST_F(NodeJit, KeptStacksAreUnwoundByTheJitdumpsUnwindingInformation) {
  std::string file = dir_.path() + "/kept.data";
  auto recorded = pt::run_perfscope_in(
      dir_.path(), {"record", "--jit", "--call-graph", "dwarf", "--keep-stacks", "-F", "500", "-m",
                    "1024", "-o", file, "--", node_path, script(), "800"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto callers = pt::run_perfscope(
      {"report", "--stdio", "--no-children", "-g", "caller", "--percent-limit", "50", "-i", file});
  remove_jit_files(callers.out, dir_.path());
  ASSERT_EQ(callers.exit_status, 0) << callers.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(
      callers.out, match,
      std::regex(R"(# DWARF unwinding: \d+ of (\d+) stacks complete \([0-9.]+ %\); (\d+) through )"
                 R"(JIT code by the unwinding information of its jitdump)")))
      << callers.out;
  // The hot function is optimized code with CFI: most samples begin in it.
  EXPECT_GE(std::stod(match[2]), 0.6 * std::stod(match[1])) << callers.out;
  // Most samples (58.6 % in a busy sanitizer pass, where node's start-up takes longer).
  EXPECT_GE(share_of(callers.out, hot_js), 50.0) << callers.out;
  // run: a frame of the chain, or a branch where V8 ran it both interpreted and compiled
  // ("|--58.27%--JS:~run", "--20.83%--JS:^run").
  EXPECT_TRUE(std::regex_search(callers.out, std::regex(R"((\n\s+|--)JS:[~^*+]?run .*sieve\.js)")))
      << callers.out;
}

// A recording whose clock is not the runtime's: named all the same, with a warning that says
// which clock and how to record.
TEST_F(NodeJit, ARecordingOnAnotherClockIsNamedWithAWarning) {
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  std::string file = dir_.path() + "/perf-clock.data";
  auto recorded = pt::run_command_in(dir_.path(), {perf_path, "record", "-q", "-F", "1000", "-o",
                                                   file, "--", node_path, "--perf-prof", script()});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto ours = report(file);
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_GE(share_of(ours.out, hot_js), 80.0) << ours.out;
  EXPECT_NE(ours.out.find("is timed by CLOCK_MONOTONIC, the recording by another clock"),
            std::string::npos)
      << ours.out;
  remove_jit_files(ours.out, dir_.path());
}

// perf record's file carries no copy of the jitdump: archive packs it, and a report with the
// archive names the code after the dump is gone (without it, the report says what is missing).
TEST_F(NodeJit, ArchiveCarriesTheJitdumpOfAPerfRecording) {
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  std::string file = dir_.path() + "/perf.data";
  auto recorded =
      pt::run_command_in(dir_.path(), {perf_path, "record", "-q", "-k", "mono", "-F", "1000", "-o",
                                       file, "--", node_path, "--perf-prof", script()});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto archived = pt::run_perfscope({"archive", "-i", file, "-o", file + ".tar.zst"});
  ASSERT_EQ(archived.exit_status, 0) << archived.err;
  auto before = report(file);
  remove_jit_files(before.out, dir_.path());
  auto without = report(file);
  EXPECT_NE(without.out.find("cannot be read (No such file or directory) and the recording "
                             "carries no copy"),
            std::string::npos)
      << without.out;
  EXPECT_LT(share_of(without.out, hot_js), 1.0) << without.out;
  auto with = pt::run_perfscope({"report", "--stdio", "--no-children", "-g", "none", "-i", file,
                                 "--archive", file + ".tar.zst"});
  ASSERT_EQ(with.exit_status, 0) << with.err;
  EXPECT_GE(share_of(with.out, hot_js), 80.0) << with.out;
}

TEST(JitRuntimes, JvmThroughRecordJit) {
  if (::access(java_path.c_str(), X_OK) != 0 || ::access(javac_path.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no JDK (openjdk-17-jdk-headless)";
  }
  pt::TempDir dir;
  dir.write("Hot.java", R"(public class Hot {
  static long spin(long n) {
    long s = 0;
    for (long i = 0; i < n; i++) s += (i * 31) ^ (s >>> 3);
    return s;
  }
  public static void main(String[] args) {
    // CPU time of this thread, not wall-clock time: the JVM's start keeps its share however busy
    // the machine is.
    java.lang.management.ThreadMXBean cpu =
        java.lang.management.ManagementFactory.getThreadMXBean();
    long end = cpu.getCurrentThreadCpuTime() + Long.parseLong(args[0]) * 1_000_000L;
    long total = 0;
    while (cpu.getCurrentThreadCpuTime() < end) total += spin(1_000_000);
    System.out.println(total);
  }
}
)");
  auto compiled = pt::run_command({javac_path, "-d", dir.path(), dir.path() + "/Hot.java"});
  ASSERT_EQ(compiled.exit_status, 0) << compiled.err;
  std::string file = dir.path() + "/java.data";
  auto recorded = pt::run_perfscope({"record", "--jit", "-g", "-F", "1000", "-m", "1024", "-o",
                                     file, "--", java_path, "-cp", dir.path(), "Hot", "1200"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_NE(recorded.err.find("-XX:+DumpPerfMapAtExit"), std::string::npos) << recorded.err;
  auto ours = pt::run_perfscope({"report", "--stdio", "--no-children", "-g", "none", "-i", file});
  remove_jit_files(ours.out, dir.path());
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_GE(share_of(ours.out, R"(long Hot\.spin\(long\))"), 60.0) << ours.out;
}

TEST(JitRuntimes, UnknownRuntimesAreSaidAndNothingIsSet) {
  pt::TempDir dir;
  auto recorded =
      pt::run_perfscope({"record", "--jit", "-o", dir.path() + "/true.data", "--", "/bin/true"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_NE(recorded.err.find("/bin/true is not a runtime --jit knows (node, java, python 3.12 "
                              "and later): nothing was set"),
            std::string::npos)
      << recorded.err;
  EXPECT_EQ(recorded.err.find("--jit: set "), std::string::npos) << recorded.err;
  auto without_command = pt::run_perfscope({"record", "--jit", "-p", "1", "-o", "x.data"});
  EXPECT_NE(without_command.exit_status, 0);
  EXPECT_NE(without_command.err.find("--jit tells a runtime perfscope starts"), std::string::npos)
      << without_command.err;
}

}  // namespace
