// Names right everywhere (issue #47), on real programs recorded by perf, perf's own report of the
// same file as the oracle: C++ operators, conversion operators, lambdas and thunks; Rust names,
// legacy and v0 mangled; the signal trampoline a handler returns into; Go's goroutine stacks;
// and perfscope's own recording of a launched command, which holds nothing of the recorder.
// The programs are in tests/cli/data/names, compiled here by the compilers a user has (g++,
// gcc, Debian's rustc, go); a missing compiler skips its test with the reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string perf_path = "/usr/bin/perf";
const std::string sources = PERFSCOPE_NAMES_SOURCE_DIR;

// Why perf cannot be the oracle here, or nothing.
std::string perf_missing() {
  if (::access(perf_path.c_str(), X_OK) != 0) return "perf (linux-perf) is not installed";
  auto probe = pt::run_command({perf_path, "record", "-q", "-o", "/dev/null", "--", "true"});
  if (probe.exit_status != 0) return "perf record does not work here: " + probe.err;
  return {};
}

// A report row with --children -g none --sort sym: its shares and its name.
struct Row {
  double children = 0, self = 0;
};

// Rows by name; rows of one name (two symbols of one name, as perf keeps them) are added up.
std::map<std::string, Row> report_rows(const std::string& text) {
  // perfscope's rows have a Samples column before the symbol; perf 6.1's do not.
  static const std::regex row(R"(^\s+([0-9.]+)%\s+([0-9.]+)%\s+(?:[0-9]+\s+)?\[.\]\s+(.*?)\s*$)");
  std::map<std::string, Row> rows;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch match;
    if (!std::regex_match(line, match, row)) continue;
    Row& into = rows[match[3].str()];
    into.children += std::stod(match[1].str());
    into.self += std::stod(match[2].str());
  }
  return rows;
}

std::map<std::string, Row> perf_rows(const std::string& file) {
  auto result = pt::run_command({perf_path, "report", "-i", file, "--stdio", "--children", "-g",
                                 "none", "--sort", "sym", "--percent-limit", "0"});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  return report_rows(result.out);
}

std::map<std::string, Row> our_rows(const std::string& file) {
  auto result = pt::run_perfscope({"report", "-i", file, "--stdio", "--children", "-g", "none",
                                   "--sort", "sym", "--percent-limit", "0"});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  pt::expect_no_crash(result);
  return report_rows(result.out);
}

std::string listed(const std::map<std::string, Row>& rows) {
  std::vector<std::pair<double, std::string>> by_self;
  for (const auto& [name, row] : rows) by_self.emplace_back(row.self, name);
  std::sort(by_self.rbegin(), by_self.rend());
  std::string text;
  for (std::size_t i = 0; i < by_self.size() && i < 25; ++i) {
    text += "  " + std::to_string(by_self[i].first) + "  " + by_self[i].second + "\n";
  }
  return text;
}

// Every name perf gives at least `floor` % self has the same name in ours, within a point; at
// least `least` of them. perf's versioned names are left out: perfscope shows the name alone, and
// perf may pick a compatibility alias of another name (cfree@GLIBC_2.2.5 for free:
// docs/FOREIGN_FILES.md).
void expect_perfs_names(const std::map<std::string, Row>& perf,
                        const std::map<std::string, Row>& ours, double floor,
                        std::size_t least = 4) {
  std::size_t compared = 0;
  for (const auto& [name, row] : perf) {
    if (row.self < floor || name.find('@') != std::string::npos) continue;
    ++compared;
    auto found = ours.find(name);
    if (found == ours.end()) {
      ADD_FAILURE() << "perf's row '" << name << "' (" << row.self << " %) is not ours:\n"
                    << listed(ours);
      continue;
    }
    EXPECT_NEAR(found->second.self, row.self, 1.0) << name;
  }
  EXPECT_GE(compared, least) << listed(perf);
}

class NamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = perf_missing(); !why.empty()) GTEST_SKIP() << why;
  }
  // Compiles with `command` (the output path last); false with the reason when it cannot.
  bool compile(std::vector<std::string> command, const std::string& output) {
    command.push_back(output);
    auto result = pt::run_command(command);
    if (result.exit_status != 0) {
      ADD_FAILURE() << command.front() << " failed: " << result.err;
      return false;
    }
    return true;
  }
  std::string record_with_perf(const std::string& program, const std::string& name,
                               std::vector<std::string> options = {"-g"}) {
    std::string file = dir_.path() + "/" + name + ".data";
    std::vector<std::string> command{perf_path, "record", "-q", "-F", "2000", "-o", file};
    command.insert(command.end(), options.begin(), options.end());
    command.insert(command.end(), {"--", program, "600"});
    auto result = pt::run_command(command);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return file;
  }
  pt::TempDir dir_;
};

TEST_F(NamesTest, CxxOperatorsLambdasAndThunksKeepPerfsNames) {
  std::string program = dir_.path() + "/operators";
  if (!compile({"g++", "-O1", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
                sources + "/operators.cpp", "-o"},
               program)) {
    return;
  }
  std::string file = record_with_perf(program, "operators");
  auto perf = perf_rows(file);
  auto ours = our_rows(file);
  expect_perfs_names(perf, ours, 1.0);
  // What a short-name rule without operators made of them: "long", ">", "Accumulator::operator".
  for (const char* name : {"Big::operator long long", "Accumulator::operator()", "Sink::operator<<",
                           "main::{lambda(unsigned long long)#1}::operator()",
                           "(anonymous namespace)::hidden", "Both::step"}) {
    EXPECT_TRUE(ours.count(name)) << name << " missing:\n" << listed(ours);
  }
  EXPECT_FALSE(ours.count("long")) << listed(ours);
  // The thunk Second* calls Both::step through, whole, as libiberty prints it.
  const std::string thunk = "non-virtual thunk to Both::step(unsigned long long)";
  if (perf.count(thunk)) {
    ASSERT_TRUE(ours.count(thunk)) << listed(ours);
    EXPECT_NEAR(ours[thunk].children, perf[thunk].children, 1.0);
  }
}

class RustNamesTest : public NamesTest, public ::testing::WithParamInterface<std::string> {};

// Debian's rustc (1.63: legacy mangling by default, v0 on request; its std is legacy).
TEST_P(RustNamesTest, TopNamesEqualPerfsAndClosuresStayApart) {
  const std::string rustc = "/usr/bin/rustc";
  if (::access(rustc.c_str(), X_OK) != 0) GTEST_SKIP() << "Debian's rustc is not installed";
  const std::string mangling = GetParam();
  std::string program = dir_.path() + "/closures_" + mangling;
  // Legacy is 1.63's default; naming it takes -Z unstable-options.
  std::vector<std::string> command{rustc, "-O", "-g", "-C", "force-frame-pointers=yes"};
  if (mangling == "v0") command.insert(command.end(), {"-C", "symbol-mangling-version=v0"});
  command.insert(command.end(), {sources + "/closures.rs", "-o"});
  if (!compile(command, program)) return;
  for (const std::vector<std::string>& options :
       {std::vector<std::string>{"-g"}, std::vector<std::string>{"--call-graph", "dwarf"}}) {
    SCOPED_TRACE(options.back());
    std::string file = record_with_perf(program, "closures_" + mangling, options);
    auto perf = perf_rows(file);
    auto ours = our_rows(file);
    // The top 15 of perf's by self time, each ours too (hashes dropped, escapes decoded).
    expect_perfs_names(perf, ours, 0.5, 3);
    for (const auto& [name, row] : ours) {
      EXPECT_EQ(name.find("$LT$"), std::string::npos) << name;
      EXPECT_EQ(name.find("$u20$"), std::string::npos) << name;
      EXPECT_FALSE(std::regex_search(name, std::regex("::h[0-9a-f]{16}$"))) << name;
      EXPECT_FALSE(name.starts_with("_R") || name.starts_with("_ZN")) << name;
    }
    EXPECT_TRUE(ours.count("<closures::Square as closures::Shape>::area")) << listed(ours);
    if (mangling == "v0") {
      EXPECT_TRUE(ours.count("closures::generic_sum::<u8>")) << listed(ours);
      EXPECT_TRUE(ours.count("closures::generic_sum::<u16>")) << listed(ours);
      // The two closures, inlined into their apply: two rows each way.
      std::size_t closures = 0;
      for (const auto& [name, row] : ours) {
        closures += name.starts_with("closures::apply::<closures::main::{closure#");
      }
      EXPECT_EQ(closures, 2U) << listed(ours);
    } else {
      EXPECT_TRUE(ours.count("closures::generic_sum")) << listed(ours);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Mangling, RustNamesTest, ::testing::Values("legacy", "v0"));

TEST_F(NamesTest, SignalTrampolineIsNamedAsPerfNamesIt) {
  std::string program = dir_.path() + "/sigalrm";
  if (!compile({"gcc", "-O0", "-g", "-fno-omit-frame-pointer", sources + "/sigalrm.c", "-o"},
               program)) {
    return;
  }
  std::string file = record_with_perf(program, "sigalrm");
  auto perf = perf_rows(file);
  auto ours = our_rows(file);
  ASSERT_TRUE(perf.count("__restore_rt")) << "perf names no trampoline:\n" << listed(perf);
  ASSERT_TRUE(ours.count("__restore_rt")) << listed(ours);
  EXPECT_GT(perf["__restore_rt"].children, 5.0);
  EXPECT_NEAR(ours["__restore_rt"].children, perf["__restore_rt"].children, 1.0);
  EXPECT_NEAR(ours["handler_work"].children, perf["handler_work"].children, 1.0);
}

TEST_F(NamesTest, GoStacksReachTheirStartAsPerfsDo) {
  std::string go = "/usr/bin/go";
  if (::access(go.c_str(), X_OK) != 0) GTEST_SKIP() << "go (golang-go) is not installed";
  std::string program = dir_.path() + "/goroutines";
  auto built = pt::run_command({"env", "GOCACHE=" + dir_.path() + "/go-cache", "GO111MODULE=off",
                                go, "build", "-o", program, sources + "/goroutines.go"});
  ASSERT_EQ(built.exit_status, 0) << built.err;
  std::string file = record_with_perf(program, "goroutines");
  auto perf = perf_rows(file);
  auto ours = our_rows(file);
  expect_perfs_names(perf, ours, 1.0, 1);  // main.spin does the work
  ASSERT_TRUE(ours.count("runtime.goexit.abi0")) << listed(ours);
  EXPECT_NEAR(ours["runtime.goexit.abi0"].children, perf["runtime.goexit.abi0"].children, 1.0);
  for (const char* trampoline : {"runtime.sigreturn.abi0", "runtime.sigreturn__sigaction.abi0"}) {
    if (perf.count(trampoline)) {
      EXPECT_NEAR(ours[trampoline].children, perf[trampoline].children, 1.0) << trampoline;
    }
  }
  auto report = pt::run_perfscope({"report", "-i", file, "--stdio", "--no-children", "-g", "none"});
  std::smatch match;
  ASSERT_TRUE(std::regex_search(report.out, match,
                                std::regex(R"(reach a thread's first frame \(([0-9.]+) %\))")))
      << report.out;
  EXPECT_GE(std::stod(match[1].str()), 50.0) << report.out.substr(0, 600);
}

// A launched command is a copy of the recorder until its exec: its maps name nothing of the
// command's, and perf writes none of them.
TEST_F(NamesTest, OwnRecordingOfACommandHoldsNothingOfTheRecorder) {
  std::string file = dir_.path() + "/python.data";
  auto recorded = pt::run_perfscope(
      {"record", "-q", "-g", "-F", "2000", "-o", file, "--", "/usr/bin/python3", "-c",
       "import time\nend = time.time() + 0.5\nx = 0\nwhile time.time() < end: x += 1"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  // perf reads the file: what it shows of the maps is what the file holds.
  auto mmaps = pt::run_command({perf_path, "script", "-i", file, "--show-mmap-events"});
  ASSERT_EQ(mmaps.exit_status, 0) << mmaps.err;
  EXPECT_NE(mmaps.out.find("python3"), std::string::npos) << mmaps.out.substr(0, 2000);
  EXPECT_EQ(mmaps.out.find(PERFSCOPE_CLI_PATH), std::string::npos)
      << "a map of the recorder's own image";
  for (const auto& [name, row] : our_rows(file)) {
    EXPECT_EQ(name.find("__facet_shims"), std::string::npos) << name;
    EXPECT_EQ(name.find("money_get"), std::string::npos) << name;
  }
  auto dsos = pt::run_perfscope({"report", "-i", file, "--stdio", "--sort", "dso", "-g", "none"});
  EXPECT_EQ(dsos.out.find(" perfscope\n"), std::string::npos) << dsos.out;
}

}  // namespace
