// perf report -t/--field-separator on perfscope (issue #44): the layout scripts parse, as perf
// 6.1 prints it on the same recording: the separator between columns that keep their padding,
// Samples only with -n, no dotted line, and the separator's character in a value as '.'.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string workload = PERFSCOPE_KNOWN_ANSWER_FP_PATH;

// The table's lines: the column titles and the rows. Symbol versions perf prints
// ("pthread_mutex_unlock@@GLIBC_2.2.5") are left out, as perfscope names functions, and the
// titles' trailing padding, which follows the symbols' widths. Under "-t _" perf writes the
// version's own '_' as '.' too (pthread_mutex_lock@@GLIBC.2.2.5).
std::vector<std::string> table_lines(const std::string& text) {
  static const std::regex version(R"(@@?GLIBC[_.][0-9.]+)");
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("# Overhead") || line.starts_with("# Children")) {
      lines.push_back(line.substr(0, line.find_last_not_of(' ') + 1));
    } else if (!line.empty() && !line.starts_with("#")) {
      lines.push_back(std::regex_replace(line, version, ""));
    }
  }
  return lines;
}

TEST(ReportFieldSeparator, ColumnsAreThoseOfPerf) {
  pt::TempDir dir;
  std::string data = dir.path() + "/ka.data";
  auto recorded = pt::run_perfscope({"record", "-q", "-o", data, "--", workload, "5"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  const std::vector<std::vector<std::string>> variants{
      {"-t", ","},
      {"-t", "|", "-n", "--sort", "comm,dso"},
      {"-t", ";", "--sort", "dso,sym", "--show-total-period"},
      {"--field-separator", "_", "--sort", "sym"},
  };
  for (const auto& options : variants) {
    std::vector<std::string> words{"report", "--stdio", "-i", data};
    words.insert(words.end(), options.begin(), options.end());
    auto ours = pt::run_perfscope(words);
    ASSERT_EQ(ours.exit_status, 0) << ours.err;
    std::vector<std::string> lines = table_lines(ours.out);
    ASSERT_GT(lines.size(), 3u) << ours.out;
    // No dotted line, and the separator between the columns of every row.
    EXPECT_EQ(ours.out.find("# ....."), std::string::npos) << ours.out;
    const std::string& separator = options[1];
    for (const std::string& line : lines) {
      EXPECT_NE(line.find(separator), std::string::npos) << line;
    }
    if (options[1] == "_") {
      // A value's own '_' is a '.': leaf_60 is leaf.60.
      EXPECT_NE(ours.out.find("[.] leaf.60"), std::string::npos) << ours.out;
    }
    if (::access(perf_path.c_str(), X_OK) != 0) continue;
    std::vector<std::string> perf_words{perf_path};
    perf_words.insert(perf_words.end(), words.begin(), words.end());
    auto theirs = pt::run_command(perf_words);
    ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
    EXPECT_EQ(lines, table_lines(theirs.out)) << options[0] << " " << options[1];
  }
}

}  // namespace
