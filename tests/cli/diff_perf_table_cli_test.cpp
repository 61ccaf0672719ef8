// perf diff's own table on perfscope (issue #44): -c delta-abs|delta|ratio|wdiff:W1,W2, -p, -F,
// -o, -t, -q and --percentage print what perf 6.1 prints on the same two recordings (the
// known-answer workload, 60/30/10 against its rebuilt 30/60/10), and the values are the
// workload's: leaf_60 30 points down, leaf_30 30 up; the formulas are the periods'.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string known_answer = PERFSCOPE_KNOWN_ANSWER_FP_PATH;
const std::string known_answer_rebuilt = PERFSCOPE_KNOWN_ANSWER_REBUILT_PATH;

struct Recordings {
  std::string base, current;
};

const Recordings& recordings() {
  static Recordings pair = [] {
    Recordings made{pt::temp_path("perf_table_base"), pt::temp_path("perf_table_new")};
    for (auto [path, command] :
         {std::pair{&made.base, std::vector<std::string>{known_answer, "300"}},
          std::pair{&made.current,
                    std::vector<std::string>{known_answer_rebuilt, "300", "3,6,1"}}}) {
      std::vector<std::string> words{"record",    "-q", "-F",  "4000", "-e",
                                     "cpu-clock", "-o", *path, "--"};
      words.insert(words.end(), command.begin(), command.end());
      auto recorded = pt::run_perfscope(words);
      EXPECT_EQ(recorded.exit_status, 0) << recorded.err;
      pt::remove_at_exit(*path);
    }
    return made;
  }();
  return pair;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A parsed table: its header lines without their trailing padding (the symbol column is as wide
// as perf's versioned names; the dotted line's last column too), and its rows, each split into
// the computed values and the keys, the symbols without the versions perf shows.
struct Table {
  std::vector<std::string> header;
  std::vector<std::pair<std::string, std::string>> rows;  // values, keys
};

// `keys_at`: where the keys start in a table without headers (-q).
Table parse_table(const std::string& text, const std::string& separator,
                  std::size_t keys_at = std::string::npos) {
  static const std::regex version(R"(@@?GLIBC_[0-9.]+)");
  static const std::regex unresolved(R"(\[\.\] 0x[0-9a-f]+$)");
  Table table;
  for (std::string line : lines_of(text)) {
    line = std::regex_replace(line, version, "");
    if (line.empty()) continue;
    if (line.starts_with("#")) {
      std::size_t key = line.find(separator.empty() ? "  Shared Object" : "Shared Object");
      if (key == std::string::npos) key = line.find(separator.empty() ? "  Symbol" : "Symbol");
      if (key != std::string::npos && line.starts_with("# Baseline")) {
        keys_at = separator.empty()
                      ? key
                      : std::count(line.begin(), line.begin() + key, separator.front());
      }
      line = line.substr(0, line.find_last_not_of(' ') + 1);
      if (line.starts_with("# ..")) line = line.substr(0, line.rfind("  "));
      table.header.push_back(line);
      continue;
    }
    std::size_t at = std::min(keys_at, line.size());
    if (!separator.empty()) {
      at = 0;
      for (std::size_t field = 0; field < keys_at && at != std::string::npos; ++field) {
        at = line.find(separator, at + (field == 0 ? 0 : 1));
      }
      at = std::min(at, line.size());
    }
    std::string keys = line.substr(at);
    keys = keys.substr(0, keys.find_last_not_of(' ') + 1);
    // Unresolved addresses: perf 6.1 pairs them across the files otherwise (table_runs).
    if (std::regex_search(keys, unresolved)) continue;
    table.rows.emplace_back(line.substr(0, at), keys);
  }
  return table;
}

// The rows as runs of equal computed values (perf orders such rows by addresses perfscope does
// not keep: each run is compared as a set), leaving out the rows whose keys the other table
// lacks: functions perf names otherwise on purpose (docs/FOREIGN_FILES.md: perf 6.1's unnamed
// "@plt" stubs, compatibility aliases such as cfree@GLIBC_2.2.5), each one added to
// `left_out`. (parse_table left out the unresolved addresses, which perf 6.1 was seen pairing
// across the files at two different offsets of one DSO, libstdc++'s 0xda5d0 with 0xa58f3, where
// perfscope pairs the same offset only.)
std::vector<std::vector<std::string>> table_runs(const Table& table, const Table& other,
                                                 std::size_t& left_out) {
  std::set<std::string> other_keys;
  for (const auto& row : other.rows) other_keys.insert(row.second);
  std::vector<std::vector<std::string>> runs;
  for (const auto& line : table.header) runs.push_back({line});
  std::string previous;
  bool first = true;
  for (const auto& [values, keys] : table.rows) {
    if (!other_keys.count(keys)) {
      ++left_out;
      continue;
    }
    if (first || values != previous) runs.push_back({});
    first = false;
    runs.back().push_back(values + keys);
    std::sort(runs.back().begin(), runs.back().end());
    previous = values;
  }
  return runs;
}

TEST(DiffPerfTable, TheTablesOfPerf) {
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  const Recordings& files = recordings();
  const std::vector<std::vector<std::string>> variants{
      {"-c", "delta-abs"},
      {"-c", "delta"},
      {"-c", "ratio", "-p", "-F"},
      {"-c", "wdiff:2,3", "-o", "0"},
      {"-t", "|", "-c", "ratio", "-p"},
      {"--percentage", "relative", "-S", "leaf_60,leaf_30", "-F"},
      {"-S", "leaf_60", "-p"},
      {"-q", "-c", "delta"},
      {"-s", "dso", "-c", "delta"},
  };
  for (const auto& options : variants) {
    std::vector<std::string> words{"diff"};
    words.insert(words.end(), options.begin(), options.end());
    words.insert(words.end(), {files.base, files.current});
    std::string separator = options.front() == "-t" ? options[1] : "";
    auto ours = pt::run_perfscope(words);
    ASSERT_EQ(ours.exit_status, 0) << ours.err;
    words.insert(words.begin(), perf_path);
    auto theirs = pt::run_command(words);
    ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
    // -q -c delta: Baseline and Delta, 2 + 8 + 2 + 7 characters, then the keys.
    std::size_t keys_at = options.front() == "-q" ? 19 : std::string::npos;
    Table our_table = parse_table(ours.out, separator, keys_at);
    Table perf_table = parse_table(theirs.out, separator, keys_at);
    std::size_t ours_left_out = 0, perfs_left_out = 0;
    auto our_runs = table_runs(our_table, perf_table, ours_left_out);
    auto perf_runs = table_runs(perf_table, our_table, perfs_left_out);
    EXPECT_GE(our_runs.size(), options.front() == "-q" ? 3u : 6u) << ours.out;
    // A few rows named otherwise, of some tens.
    EXPECT_LE(ours_left_out, 4u) << ours.out;
    EXPECT_LE(perfs_left_out, 4u) << theirs.out;
    EXPECT_EQ(our_runs, perf_runs) << options.front() << " " << options.back() << "\nperfscope:\n"
                                   << ours.out << "\nperf:\n"
                                   << theirs.out;
  }
}

// The workload's own answer, without perf: 60/30/10 then 30/60/10.
TEST(DiffPerfTable, DeltasAndFormulasOfTheWorkload) {
  const Recordings& files = recordings();
  auto delta = pt::run_perfscope({"diff", "-c", "delta", "-t", ";", "-s", "sym", "-S",
                                  "leaf_60,leaf_30,leaf_10", files.base, files.current});
  ASSERT_EQ(delta.exit_status, 0) << delta.err;
  std::map<std::string, double> deltas;
  for (const std::string& line : lines_of(delta.out)) {
    if (line.starts_with("#") || line.empty()) continue;
    auto first = line.find(';'), second = line.find(';', first + 1);
    ASSERT_NE(second, std::string::npos) << line;
    deltas[line.substr(second + 1)] = std::stod(line.substr(first + 1, second - first - 1));
  }
  ASSERT_EQ(deltas.size(), 3u) << delta.out;
  EXPECT_NEAR(deltas["[.] leaf_60"], -30, 6) << delta.out;
  EXPECT_NEAR(deltas["[.] leaf_30"], 30, 6) << delta.out;
  EXPECT_NEAR(deltas["[.] leaf_10"], 0, 4) << delta.out;
  // Rows in the order of the deltas: leaf_30 first, leaf_60 last.
  EXPECT_LT(delta.out.find("leaf_30"), delta.out.find("leaf_60")) << delta.out;

  // wdiff:1,1 is NEW's period minus BASE's, which -p prints and -F spells out.
  auto weighted = pt::run_perfscope(
      {"diff", "-c", "wdiff:1,1", "-p", "-F", "-t", ";", "-s", "sym", files.base, files.current});
  ASSERT_EQ(weighted.exit_status, 0) << weighted.err;
  static const std::regex row(
      R"(([0-9.]+) *;(\d+) *; *(-?\d+);\((\d+) \* 1\) - \((\d+) \* 1\) *;(\d+) *;(.*))");
  int rows = 0;
  for (const std::string& line : lines_of(weighted.out)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    ++rows;
    long long base = std::stoll(m[2]), current = std::stoll(m[6]), difference = std::stoll(m[3]);
    EXPECT_EQ(difference, current - base) << line;
    EXPECT_EQ(std::stoll(m[4]), current) << line;
    EXPECT_EQ(std::stoll(m[5]), base) << line;
  }
  EXPECT_GE(rows, 3) << weighted.out;

  // -b: the rows both recordings have, Baseline a share of those (the shares add up to 100 %).
  auto both = pt::run_perfscope({"diff", "-b", "-t", ";", files.base, files.current});
  ASSERT_EQ(both.exit_status, 0) << both.err;
  double baseline_sum = 0;
  int kept = 0;
  for (const std::string& line : lines_of(both.out)) {
    if (line.starts_with("#") || line.empty()) continue;
    ++kept;
    std::size_t first = line.find(';'), second = line.find(';', first + 1);
    ASSERT_NE(second, std::string::npos) << line;
    baseline_sum += std::stod(line.substr(0, first));
    EXPECT_NE(line.find('%', first), std::string::npos) << "no Delta: " << line;
  }
  EXPECT_GE(kept, 3) << both.out;
  EXPECT_NEAR(baseline_sum, 100.0, 0.01 * kept + 0.01) << both.out;
}

TEST(DiffPerfTable, BadValuesAreExplained) {
  const Recordings& files = recordings();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"-c", "median"}, "is not a computation"},
      {{"-c", "wdiff:0,1"}, "two non-zero integers"},
      {{"-c", "wdiff"}, "two non-zero integers"},
      {{"-c", "delta:2"}, "only wdiff takes a value"},
      {{"-c", "cycles"}, "LBR"},
      {{"-o", "out.txt"}, "--output FILE"},
      {{"-o", "2"}, "0 (BASE's shares) or 1"},
      {{"--percentage", "half"}, "'absolute'"},
      {{"-c", "delta", "--format", "json"}, "perf's text table"},
      {{"-p", "--children"}, "self shares"},
  };
  for (const auto& [options, message] : cases) {
    std::vector<std::string> words{"diff"};
    words.insert(words.end(), options.begin(), options.end());
    words.insert(words.end(), {files.base, files.current});
    auto result = pt::run_perfscope(words);
    EXPECT_NE(result.exit_status, 0) << options.front() << " " << options.back();
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
  }
}

}  // namespace
