// `perfscope report` end to end: the known-answer workload's shares and call trees in the text
// report, the same table as perf report on the same files, exports, and errors for bad options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string known_answer_fp = PERFSCOPE_KNOWN_ANSWER_FP_PATH;
const std::string known_answer_nofp = PERFSCOPE_KNOWN_ANSWER_NOFP_PATH;
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string perf_path = "/usr/bin/perf";

bool perf_available() { return ::access(perf_path.c_str(), X_OK) == 0; }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("perfscope_report_" + name + "_" + std::to_string(::getpid())))
      .string();
}

std::string record(const std::string& name, std::vector<std::string> extra,
                   std::vector<std::string> command) {
  std::string path = temp_path(name);
  std::vector<std::string> arguments{"record", "-F", "4000", "-e", "cpu-clock", "-o", path};
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  arguments.push_back("--");
  arguments.insert(arguments.end(), command.begin(), command.end());
  auto result = pt::run_perfscope(arguments);
  EXPECT_EQ(result.exit_status, 0) << result.err;
  return path;
}

struct Row {
  double percent = 0;
  std::string dso, symbol;  // symbol with its [.] / [k] mark
};

// The table rows of perf report --stdio text (ours or perf's): "  12.34%  comm  dso  [.] sym",
// with any number of numeric columns before the keys.
std::vector<Row> table_rows(const std::string& text) {
  static const std::regex row_pattern(
      R"(^\s+([0-9.]+)%\s+(?:[0-9.]+%\s+)?(?:[0-9]+\s+)?\S+\s+(\S+)\s+(\[[.k]\] .*?)\s*$)");
  std::vector<Row> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (std::regex_match(line, match, row_pattern)) {
      rows.push_back({std::stod(match[1]), match[2], match[3]});
    }
  }
  return rows;
}

std::map<std::string, double> by_symbol(const std::vector<Row>& rows) {
  std::map<std::string, double> out;
  for (const auto& row : rows) out[row.symbol] += row.percent;
  return out;
}

// The lines of the call tree printed below the row whose symbol is `symbol`.
std::vector<std::string> tree_below(const std::string& text, const std::string& symbol) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside) {
      inside = line.ends_with(symbol) && line.find('%') != std::string::npos &&
               line.find("--") == std::string::npos;
      continue;
    }
    if (line.empty()) break;
    lines.push_back(line);
  }
  return lines;
}

std::string trimmed(const std::string& line) {
  auto start = line.find_first_not_of(" |-");
  return start == std::string::npos ? "" : line.substr(start);
}

TEST(ReportCliTest, KnownSharesAndCallersFromFramePointers) {
  std::string path = record("fp", {"-g"}, {known_answer_fp, "300"});
  auto result = pt::run_perfscope({"report", "--stdio", "--no-children", "-i", path});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const std::string& out = result.out;
  EXPECT_NE(out.find("of event 'cpu-clock'"), std::string::npos) << out.substr(0, 600);
  EXPECT_NE(out.find("# Event count (approx.): "), std::string::npos);
  EXPECT_NE(out.find("# Overhead  Samples  Command"), std::string::npos) << out.substr(0, 800);
  auto shares = by_symbol(table_rows(out));
  EXPECT_NEAR(shares["[.] leaf_60"], 60.0, 5.0) << out.substr(0, 2000);
  EXPECT_NEAR(shares["[.] leaf_30"], 30.0, 5.0);
  EXPECT_NEAR(shares["[.] leaf_10"], 10.0, 5.0);
  // Callee order (perf's default without children): the leaf, then its caller, then main.
  for (std::string share : {"60", "30", "10"}) {
    auto tree = tree_below(out, "[.] leaf_" + share);
    ASSERT_GE(tree.size(), 4u) << "leaf_" << share << "\n" << out.substr(0, 3000);
    EXPECT_EQ(tree[0], "            |");
    EXPECT_EQ(tree[1], "            ---leaf_" + share);
    EXPECT_EQ(trimmed(tree[2]), "work_" + share);
    EXPECT_EQ(trimmed(tree[3]), "main");
  }
  // Caller order with children: main holds everything, then the work_N branches by share.
  auto children = pt::run_perfscope({"report", "--stdio", "--sort", "sym", "-i", path});
  ASSERT_EQ(children.exit_status, 0) << children.err;
  EXPECT_NE(children.out.find("# Children      Self  Samples  Symbol"), std::string::npos)
      << children.out.substr(0, 800);
  auto inclusive = by_symbol(table_rows(children.out));
  EXPECT_GT(inclusive["[.] main"], 95.0) << children.out.substr(0, 2000);
  EXPECT_NEAR(inclusive["[.] work_60"], 60.0, 5.0);
  EXPECT_NEAR(inclusive["[.] work_10"], 10.0, 5.0);
  auto main_tree = tree_below(children.out, "[.] main");
  std::string joined;
  for (const auto& line : main_tree) joined += line + "\n";
  std::smatch match;
  ASSERT_TRUE(std::regex_search(joined, match, std::regex(R"(--([0-9.]+)%--work_60\n)"))) << joined;
  EXPECT_NEAR(std::stod(match[1]), 60.0, 5.0);
  // --percent-limit hides the small rows; -g none drops the trees.
  auto limited = pt::run_perfscope(
      {"report", "--stdio", "--no-children", "-g", "none", "--percent-limit", "20", "-i", path});
  ASSERT_EQ(limited.exit_status, 0) << limited.err;
  auto rows = table_rows(limited.out);
  ASSERT_EQ(rows.size(), 2u) << limited.out;
  EXPECT_EQ(rows[0].symbol, "[.] leaf_60");
  EXPECT_EQ(rows[1].symbol, "[.] leaf_30");
  EXPECT_EQ(limited.out.find("---"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(ReportCliTest, KnownSharesAndCallersFromDwarfStacks) {
  std::string path = record("dwarf", {"--call-graph", "dwarf"}, {known_answer_nofp, "300"});
  auto result = pt::run_perfscope({"report", "--stdio", "--no-children", "-i", path});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(
      result.out, match,
      std::regex(R"(# DWARF unwinding: ([0-9]+) of ([0-9]+) stacks complete \(([0-9.]+) %\))")))
      << result.out.substr(0, 800);
  EXPECT_GT(std::stod(match[3]), 90.0);
  auto shares = by_symbol(table_rows(result.out));
  EXPECT_NEAR(shares["[.] leaf_60"], 60.0, 5.0) << result.out.substr(0, 2000);
  EXPECT_NEAR(shares["[.] leaf_30"], 30.0, 5.0);
  EXPECT_NEAR(shares["[.] leaf_10"], 10.0, 5.0);
  for (std::string share : {"60", "30", "10"}) {
    auto tree = tree_below(result.out, "[.] leaf_" + share);
    ASSERT_GE(tree.size(), 4u) << "leaf_" << share << "\n" << result.out.substr(0, 3000);
    EXPECT_EQ(trimmed(tree[2]), "work_" + share);
    EXPECT_EQ(trimmed(tree[3]), "main");
  }
  std::filesystem::remove(path);
}

// Our table against perf report's on the same file: the same top symbols, within 0.5 points.
TEST(ReportCliTest, MatchesPerfReport) {
  if (!perf_available()) GTEST_SKIP() << "Linux perf is not installed at " << perf_path;
  for (std::vector<std::string> extra :
       {std::vector<std::string>{"-g"}, std::vector<std::string>{}}) {
    std::string path = record("perf", extra, {work_helper, "getpid", "2000000"});
    auto theirs = pt::run_command({perf_path, "report", "--stdio", "--sort", "comm,dso,sym",
                                   "--no-children", "-g", "none", "-i", path});
    ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
    auto ours = pt::run_perfscope(
        {"report", "--stdio", "--sort", "comm,dso,sym", "--no-children", "-i", path});
    ASSERT_EQ(ours.exit_status, 0) << ours.err;
    auto perf_rows = table_rows(theirs.out);
    auto our_rows = by_symbol(table_rows(ours.out));
    ASSERT_GE(perf_rows.size(), 3u) << theirs.out;
    for (std::size_t i = 0; i < 5 && i < perf_rows.size(); ++i) {
      if (perf_rows[i].percent < 1.0) break;
      ASSERT_TRUE(our_rows.count(perf_rows[i].symbol))
          << perf_rows[i].symbol << " is missing from ours:\n"
          << ours.out << "\nperf:\n"
          << theirs.out;
      EXPECT_NEAR(our_rows[perf_rows[i].symbol], perf_rows[i].percent, 0.5) << perf_rows[i].symbol;
    }
    std::filesystem::remove(path);
  }
}

TEST(ReportCliTest, ExportsAndFilters) {
  std::string path = record("export", {"-g"}, {known_answer_fp, "100"});
  auto folded = pt::run_perfscope({"report", "-i", path, "--format", "folded"});
  ASSERT_EQ(folded.exit_status, 0) << folded.err;
  EXPECT_NE(folded.out.find(";main;work_60;leaf_60 "), std::string::npos)
      << folded.out.substr(0, 1000);
  std::string pprof = temp_path("pprof");
  auto written = pt::run_perfscope({"report", "-i", path, "--format", "pprof", "-o", pprof});
  ASSERT_EQ(written.exit_status, 0) << written.err;
  EXPECT_GT(std::filesystem::file_size(pprof), 100u);
  std::filesystem::remove(pprof);
  auto filtered = pt::run_perfscope(
      {"report", "--stdio", "--no-children", "--symbol", "leaf_10", "-g", "none", "-i", path});
  ASSERT_EQ(filtered.exit_status, 0) << filtered.err;
  auto rows = table_rows(filtered.out);
  ASSERT_EQ(rows.size(), 1u) << filtered.out;
  EXPECT_EQ(rows[0].symbol, "[.] leaf_10");
  EXPECT_DOUBLE_EQ(rows[0].percent, 100.0);
  std::filesystem::remove(path);
}

TEST(ReportCliTest, BadOptionsSayWhatIsWrong) {
  std::string path = record("errors", {}, {known_answer_fp, "10"});
  auto sort = pt::run_perfscope({"report", "-i", path, "--sort", "comm,bogus"});
  EXPECT_NE(sort.exit_status, 0);
  EXPECT_NE(sort.err.find("unknown key 'bogus'"), std::string::npos) << sort.err;
  auto graph = pt::run_perfscope({"report", "-i", path, "-g", "sideways"});
  EXPECT_NE(graph.exit_status, 0);
  EXPECT_NE(graph.err.find("caller, callee or none"), std::string::npos) << graph.err;
  auto format = pt::run_perfscope({"report", "-i", path, "--format", "png"});
  EXPECT_NE(format.exit_status, 0);
  EXPECT_NE(format.err.find("folded, speedscope"), std::string::npos) << format.err;
  auto missing = pt::run_perfscope({"report", "-i", path + ".missing"});
  EXPECT_NE(missing.exit_status, 0);
  EXPECT_NE(missing.err.find(".missing"), std::string::npos) << missing.err;
  std::filesystem::remove(path);
}

}  // namespace
