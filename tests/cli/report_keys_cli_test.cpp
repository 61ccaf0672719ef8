// perf report's keys in the forms perf's options give them (issue #44): the time key (--sort
// time) with --time-quantum and --ns, samples folded by the quantum their time falls in, and
// srcline and srcfile with --full-source-path; as perf 6.1 prints them on the same recording.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string workload = PERFSCOPE_KNOWN_ANSWER_FP_PATH;

// The table's rows and column titles (without their trailing padding).
std::vector<std::string> table_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("# Overhead") || line.starts_with("# ....")) {
      lines.push_back(line.substr(0, line.find_last_not_of(' ') + 1));
    } else if (!line.empty() && !line.starts_with("#")) {
      lines.push_back(line);
    }
  }
  return lines;
}

TEST(ReportKeys, TimeQuantaOfSampleTimesAsPerf) {
  pt::TempDir dir;
  std::string data = dir.path() + "/ka.data";
  auto recorded =
      pt::run_perfscope({"record", "-q", "-F", "2000", "-o", data, "--", workload, "5"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;

  // Independently of perf: one row per 10 ms step that holds a sample (script's times).
  auto times = pt::run_perfscope({"script", "-F", "time", "--ns", "-i", data});
  ASSERT_EQ(times.exit_status, 0) << times.err;
  std::set<unsigned long long> steps;
  std::istringstream words(times.out);
  for (std::string word; words >> word;) {
    auto dot = word.find('.');
    ASSERT_NE(dot, std::string::npos) << word;
    unsigned long long ns =
        std::stoull(word.substr(0, dot)) * 1000000000ULL + std::stoull(word.substr(dot + 1, 9));
    steps.insert(ns / 10000000ULL);
  }
  ASSERT_GE(steps.size(), 3u) << "the workload ran under 30 ms";
  auto by_step = pt::run_perfscope(
      {"report", "--stdio", "-i", data, "--sort", "time", "--time-quantum", "10ms"});
  ASSERT_EQ(by_step.exit_status, 0) << by_step.err;
  EXPECT_EQ(table_lines(by_step.out).size(), steps.size() + 2) << by_step.out;
  std::string first = std::to_string(*steps.begin() / 100) + "." +
                      std::to_string(*steps.begin() % 100 + 100).substr(1) + "0000";
  EXPECT_NE(by_step.out.find("  " + first + "\n"), std::string::npos) << first << by_step.out;

  const std::vector<std::vector<std::string>> variants{
      {"--sort", "time", "-n"},
      {"--sort", "time", "--time-quantum", "10ms", "-n"},
      {"--sort", "time,comm", "--time-quantum", "5000000", "--ns", "-n"},
      {"--sort", "comm,time", "--time-quantum", "20ms", "-n"},
  };
  // (-n: perfscope shows the Samples column without it too, perf with it only.)
  for (const auto& options : variants) {
    std::vector<std::string> command{"report", "--stdio", "-i", data};
    command.insert(command.end(), options.begin(), options.end());
    auto ours = pt::run_perfscope(command);
    ASSERT_EQ(ours.exit_status, 0) << ours.err;
    if (::access(perf_path.c_str(), X_OK) != 0) continue;
    std::vector<std::string> perf_command{perf_path};
    perf_command.insert(perf_command.end(), command.begin(), command.end());
    auto theirs = pt::run_command(perf_command);
    ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
    EXPECT_EQ(table_lines(ours.out), table_lines(theirs.out)) << options[1];
  }

  for (const char* bad : {"0", "1m", "ms"}) {
    auto refused = pt::run_perfscope(
        {"report", "--stdio", "-i", data, "--sort", "time", "--time-quantum", bad});
    EXPECT_EQ(refused.exit_status, 129) << bad << ": " << refused.err;
    EXPECT_NE(refused.err.find("--time-quantum"), std::string::npos) << refused.err;
  }
  auto diff = pt::run_perfscope({"diff", "--sort", "time", data, data});
  EXPECT_NE(diff.exit_status, 0);
  EXPECT_NE(diff.err.find("--sort time pairs no rows"), std::string::npos) << diff.err;
}

// The row of `key` naming the workload's source file: its text, after the columns before it.
std::string workload_source_row(const std::string& report) {
  for (const std::string& line : table_lines(report)) {
    if (line.find("known_answer.cpp") == std::string::npos) continue;
    return line.substr(line.rfind("  ") + 2);
  }
  return "";
}

// --full-source-path: srcline and srcfile name the workload's file by its whole path (perf's,
// shortened lexically: "build/../tests" is "tests"), script's srcline too; its name alone without.
TEST(ReportKeys, FullSourcePathNamesTheWholePath) {
  pt::TempDir dir;
  std::string data = dir.path() + "/ka.data";
  auto recorded = pt::run_perfscope({"record", "-q", "-o", data, "--", workload, "5"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  for (const char* key : {"srcline", "srcfile"}) {
    auto report = [&](bool full) {
      std::vector<std::string> command{"report", "--stdio", "-n", "--sort", key, "-i", data};
      if (full) command.push_back("--full-source-path");
      auto ours = pt::run_perfscope(command);
      EXPECT_EQ(ours.exit_status, 0) << ours.err;
      return workload_source_row(ours.out);
    };
    std::string name = report(false), path = report(true);
    EXPECT_TRUE(name.starts_with("known_answer.cpp")) << key << ": " << name;
    EXPECT_TRUE(path.starts_with("/")) << key << ": " << path;
    EXPECT_NE(path.find("/tests/analysis/data/known_answer.cpp"), std::string::npos) << path;
    EXPECT_TRUE(path.ends_with(name)) << path << " " << name;
    if (::access(perf_path.c_str(), X_OK) != 0) continue;
    auto theirs = pt::run_command(
        {perf_path, "report", "--stdio", "-n", "--sort", key, "--full-source-path", "-i", data});
    ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
    std::string perf_path_text = workload_source_row(theirs.out);
    std::string line = perf_path_text.substr(perf_path_text.find(".cpp") + 4);
    std::string file = perf_path_text.substr(0, perf_path_text.size() - line.size());
    EXPECT_EQ(std::filesystem::path(file).lexically_normal().string() + line, path)
        << perf_path_text;
  }
  auto script = pt::run_perfscope({"script", "-F", "ip,srcline", "--full-source-path", "-i", data});
  ASSERT_EQ(script.exit_status, 0) << script.err;
  EXPECT_NE(script.out.find("  /"), std::string::npos) << script.out.substr(0, 1000);
  EXPECT_NE(script.out.find("/tests/analysis/data/known_answer.cpp:"), std::string::npos)
      << script.out.substr(0, 1000);
}

}  // namespace
