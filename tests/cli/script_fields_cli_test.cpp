// script prints what perf script prints: tracepoint payloads decoded from the recording's own
// formats (byte for byte as perf script on the same file), the fields -F names and the changes
// +field/-field make, source lines, data addresses, and the named fields in --json.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string perf_path = "/usr/bin/perf";

bool have_perf() { return ::access(perf_path.c_str(), X_OK) == 0; }

// perf's text without the symbol versions it prints (pthread_rwlock_wrlock@@GLIBC_2.34):
// perfscope prints the name alone, a documented difference.
std::string without_symbol_versions(const std::string& text) {
  // (After the name comes its offset, or with -F sym alone the space before the library.)
  static const std::regex version(R"(@@?[A-Za-z][A-Za-z0-9_]*_[0-9][0-9.]*([+ ]))");
  return std::regex_replace(text, version, "$1");
}

// pt::plt_names_as_perf_6_1 line by line, for a whole script's text.
std::string plt_lines_as_perf_6_1(const std::string& ours, const std::string& perfs) {
  std::istringstream our_lines(ours), perf_lines(perfs);
  std::string out, mine, theirs;
  while (std::getline(our_lines, mine)) {
    if (!std::getline(perf_lines, theirs)) theirs.clear();
    out += pt::plt_names_as_perf_6_1(mine, theirs) + "\n";
  }
  return out;
}

TEST(ScriptFields, TracepointLinesAreThoseOfPerfScript) {
  pt::TempDir dir;
  std::string file = dir.path() + "/tracepoints.data";
  auto recorded = pt::run_perfscope(
      {"record", "-q", "-e", "sched:sched_switch,raw_syscalls:sys_exit,syscalls:sys_enter_openat",
       "-o", file, "--", "/bin/sh", "-c", "cat /etc/hostname > /dev/null; sleep 0.01"});
  if (recorded.exit_status != 0) GTEST_SKIP() << "tracepoints do not open here: " << recorded.err;
  auto ours = pt::run_perfscope({"script", "-i", file});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_NE(ours.out.find("sched:sched_switch: prev_comm="), std::string::npos) << ours.out;
  EXPECT_NE(ours.out.find(" ==> next_comm="), std::string::npos) << ours.out;
  EXPECT_NE(ours.out.find("syscalls:sys_enter_openat: dfd: "), std::string::npos) << ours.out;
  if (have_perf()) {
    auto theirs = pt::run_command({perf_path, "script", "-i", file});
    ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
    EXPECT_EQ(ours.out, theirs.out);
  }
  // The payload's fields by name in --json, as its format names them.
  auto json = pt::run_perfscope({"script", "--json", "-i", file});
  ASSERT_EQ(json.exit_status, 0) << json.err;
  std::size_t switches = 0;
  std::istringstream lines(json.out);
  for (std::string line; std::getline(lines, line);) {
    auto record = nlohmann::json::parse(line);
    if (!record.contains("trace") || !record["trace"].contains("prev_comm")) continue;
    ++switches;
    EXPECT_TRUE(record["trace"]["prev_pid"].is_number_integer()) << line;
    EXPECT_TRUE(record["trace"]["next_comm"].is_string()) << line;
  }
  EXPECT_GT(switches, 0u) << json.out.substr(0, 2000);
}

// `script -F comm,ip,sym,srcline` output as samples: each sample's line and the source line
// printed below it ("" when none).
std::vector<std::pair<std::string, std::string>> srcline_samples(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> samples;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("  ") && !samples.empty() && samples.back().second.empty()) {
      samples.back().second = line;
    } else {
      samples.emplace_back(line, "");
    }
  }
  return samples;
}

TEST(ScriptFields, FieldChangesAndSourceLinesAsPerfScript) {
  pt::TempDir dir;
  std::string file = dir.path() + "/cpu.data";
  auto recorded = pt::run_perfscope(
      {"record", "-q", "-F", "1000", "-o", file, "--", PERFSCOPE_KNOWN_ANSWER_FP_PATH});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto without_period = pt::run_perfscope({"script", "-F", "-period,-cpu", "-i", file});
  ASSERT_EQ(without_period.exit_status, 0) << without_period.err;
  auto with_lines = pt::run_perfscope({"script", "-F", "comm,ip,sym,srcline", "-i", file});
  ASSERT_EQ(with_lines.exit_status, 0) << with_lines.err;
  EXPECT_NE(with_lines.out.find("  known_answer.cpp:"), std::string::npos) << with_lines.out;
  auto mixed = pt::run_perfscope({"script", "-F", "comm,-period", "-i", file});
  EXPECT_EQ(mixed.exit_status, 129) << mixed.err;
  auto perf_only = pt::run_perfscope({"script", "-F", "ipc", "-i", file});
  EXPECT_EQ(perf_only.exit_status, 129) << perf_only.err;
  EXPECT_NE(perf_only.err.find("perf script's field 'ipc' is not printed by perfscope"),
            std::string::npos)
      << perf_only.err;
  if (!have_perf()) GTEST_SKIP() << "perf is not installed";
  std::string perf_text = without_symbol_versions(
      pt::run_command({perf_path, "script", "-F", "-period", "-i", file}).out);
  EXPECT_EQ(plt_lines_as_perf_6_1(without_period.out, perf_text), perf_text);
  // The same samples, and below each the same source line, or none where perf prints none (an
  // address of a library without line tables: perf's addr2line answered ??:0). In the dynamic
  // loader's start-up code binutils' addr2line (perf's) names another file than the line
  // table's for inlined code (DWARF 5; llvm-symbolizer agrees with us), so there the line
  // number alone is compared.
  auto with_dsos = pt::run_perfscope({"script", "-F", "comm,ip,sym,dso,srcline", "-i", file});
  ASSERT_EQ(with_dsos.exit_status, 0) << with_dsos.err;
  auto ours = srcline_samples(with_dsos.out);
  auto perfs = srcline_samples(without_symbol_versions(
      pt::run_command({perf_path, "script", "-F", "comm,ip,sym,dso,srcline", "-i", file}).out));
  ASSERT_EQ(ours.size(), perfs.size()) << with_dsos.out.substr(0, 2000);
  auto line_number = [](const std::string& srcline) {
    return srcline.substr(srcline.rfind(':') + 1);
  };
  for (std::size_t i = 0; i < ours.size(); ++i) {
    EXPECT_EQ(pt::plt_names_as_perf_6_1(ours[i].first, perfs[i].first), perfs[i].first);
    // (perf 6.1, having no name there, prints the address as dso[offset]; a named address
    // without a line gets none, as perf 6.3 names it.)
    if (ours[i].first != perfs[i].first) continue;
    if (ours[i].first.find("/ld-linux") == std::string::npos) {
      EXPECT_EQ(ours[i].second, perfs[i].second) << ours[i].first;
    } else if (!(ours[i].second.empty() && line_number(perfs[i].second) == "0")) {
      // (Where the loader's assembly start has no line, perf prints one numbered 0.)
      EXPECT_EQ(ours[i].second.empty(), perfs[i].second.empty()) << ours[i].first;
      EXPECT_EQ(line_number(ours[i].second), line_number(perfs[i].second)) << ours[i].first;
    }
  }
}

}  // namespace
