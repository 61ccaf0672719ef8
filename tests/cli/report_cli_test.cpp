// `perfscope report` end to end: the known-answer workload's shares and call trees in the text
// report, the same table as perf report on the same files, exports (speedscope and JSON checked
// against their JSON Schemas, wall-clock times against perf's reading of our CLOCK_DATA, the
// mappings against the recorded binary), and errors for bad options.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string known_answer_fp = PERFSCOPE_KNOWN_ANSWER_FP_PATH;
const std::string known_answer_nofp = PERFSCOPE_KNOWN_ANSWER_NOFP_PATH;
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string call_tree_workload = PERFSCOPE_CALL_TREE_WORKLOAD_PATH;
const std::string perf_path = "/usr/bin/perf";

bool perf_available() { return ::access(perf_path.c_str(), X_OK) == 0; }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("perfscope_report_" + name + "_" + std::to_string(::getpid())))
      .string();
}

std::string record(const std::string& name, std::vector<std::string> extra,
                   std::vector<std::string> command, const std::string& event = "cpu-clock") {
  std::string path = temp_path(name);
  std::vector<std::string> arguments{"record", "-F", "4000", "-e", event, "-o", path};
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

// A tree line's frame, without the share that starts a branch ("22.35%--outer" is outer): where
// a branch splits off below the callchain threshold, the visible one carries its share, as in
// perf.
std::string frame_of(const std::string& line) {
  static const std::regex share_prefix(R"(^[0-9.]+%--)");
  return std::regex_replace(trimmed(line), share_prefix, "");
}

// The frames of the first `count` lines after tree[at] that name one (not the "|" lines).
std::vector<std::string> frames_after(const std::vector<std::string>& tree, std::size_t at,
                                      std::size_t count) {
  std::vector<std::string> frames;
  for (std::size_t i = at + 1; i < tree.size() && frames.size() < count; ++i) {
    if (!trimmed(tree[i]).empty()) frames.push_back(frame_of(tree[i]));
  }
  return frames;
}

TEST(ReportCliTest, KnownSharesAndCallersFromFramePointers) {
  std::string path = record("fp", {"-g"}, {known_answer_fp, "300"});
  auto result = pt::run_perfscope({"report", "--stdio", "--no-children", "-i", path});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const std::string& out = result.out;
  EXPECT_NE(out.find("of event 'cpu-clock'"), std::string::npos) << out.substr(0, 600);
  EXPECT_NE(out.find("# Event count (approx.): "), std::string::npos);
  // perf -n's layout: a Samples column twelve wide.
  EXPECT_NE(out.find("# Overhead       Samples  Command"), std::string::npos) << out.substr(0, 800);
  auto shares = by_symbol(table_rows(out));
  EXPECT_NEAR(shares["[.] leaf_60"], 60.0, 5.0) << out.substr(0, 2000);
  EXPECT_NEAR(shares["[.] leaf_30"], 30.0, 5.0);
  EXPECT_NEAR(shares["[.] leaf_10"], 10.0, 5.0);
  // Callee order (perf's default without children): the leaf, then its caller, then main. A
  // sample on the leaf's first instruction (before it pushes its frame pointer, as cpu-clock's
  // timer can hit) skips the caller: perf draws that as a small second branch, so the first
  // branch is checked, and that it holds nearly all of the leaf's samples.
  for (std::string share : {"60", "30", "10"}) {
    auto tree = tree_below(out, "[.] leaf_" + share);
    ASSERT_GE(tree.size(), 4u) << "leaf_" << share << "\n" << out.substr(0, 3000);
    EXPECT_EQ(tree[0], "            |");
    EXPECT_EQ(tree[1], "            ---leaf_" + share);
    std::vector<std::string> callers;
    for (std::size_t i = 2; i < tree.size() && callers.size() < 2; ++i) {
      if (!trimmed(tree[i]).empty()) callers.push_back(trimmed(tree[i]));
    }
    ASSERT_EQ(callers.size(), 2u) << out.substr(0, 3000);
    std::smatch branch;
    if (std::regex_match(callers[0], branch, std::regex(R"(([0-9.]+)%--(.*))"))) {
      EXPECT_GT(std::stod(branch[1]), 0.95 * shares["[.] leaf_" + share]) << out.substr(0, 3000);
      callers[0] = branch[2];
    }
    EXPECT_EQ(callers[0], "work_" + share) << out.substr(0, 3000);
    EXPECT_EQ(callers[1], "main") << out.substr(0, 3000);
  }
  // Caller order with children: main holds everything, then the work_N branches by share.
  auto children = pt::run_perfscope({"report", "--stdio", "--sort", "sym", "-i", path});
  ASSERT_EQ(children.exit_status, 0) << children.err;
  EXPECT_NE(children.out.find("# Children      Self       Samples  Symbol"), std::string::npos)
      << children.out.substr(0, 800);
  // With --children the Samples column counts each row's own samples, as perf's: main has few
  // or none (a sample may land in main itself), not the thousands under it.
  std::smatch main_row;
  ASSERT_TRUE(std::regex_search(
      children.out, main_row,
      std::regex(R"(\n +9[5-9]\.[0-9]+% +([0-9]+\.[0-9]+)% +([0-9]+)  \[\.\] main\n)")))
      << children.out.substr(0, 2000);
  EXPECT_LT(std::stod(main_row[1]), 1.0) << main_row[0];
  EXPECT_LT(std::stoul(main_row[2]), 50u) << main_row[0];
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
  // --keep-stacks: the stack copies in the file, unwound by report.
  std::string path =
      record("dwarf", {"--call-graph", "dwarf", "--keep-stacks"}, {known_answer_nofp, "300"});
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
  int leaves_with_inlined_step = 0;
  for (std::string share : {"60", "30", "10"}) {
    // DWARF call chains show inlined frames by default (as perf): the samples in the leaf's
    // inlined step() have a branch that starts with it, then come the leaf itself and its
    // callers. Which branch is larger, and whether a leaf of 700 samples has any in step() at
    // all, depends on where this CPU's timer lands in the loop: every leaf needs its callers,
    // and at least one of the three the inlined branch.
    auto tree = tree_below(result.out, "[.] leaf_" + share);
    std::size_t step = 0;
    while (step < tree.size() && !trimmed(tree[step]).ends_with("step (inlined)")) ++step;
    std::size_t leaf = 0;
    if (step < tree.size()) {
      // "step (inlined)" or "11.31%--step (inlined)"; clang: "(anonymous namespace)::step".
      ++leaves_with_inlined_step;
      leaf = step + 1;
    } else {
      while (leaf < tree.size() && !trimmed(tree[leaf]).ends_with("leaf_" + share)) ++leaf;
    }
    ASSERT_LT(leaf, tree.size()) << "leaf_" << share << "\n" << result.out.substr(0, 3000);
    EXPECT_TRUE(trimmed(tree[leaf]).ends_with("leaf_" + share)) << tree[leaf];
    // (A chain that splits below the leaf, as one odd unwind makes it, puts a "|" line first.)
    EXPECT_THAT(frames_after(tree, leaf, 2), ::testing::ElementsAre("work_" + share, "main"))
        << result.out.substr(0, 3000);
  }
  EXPECT_GE(leaves_with_inlined_step, 1) << result.out.substr(0, 3000);
  // --no-inline: the leaf's own frame comes first.
  auto flat = pt::run_perfscope({"report", "--stdio", "--no-children", "--no-inline", "-i", path});
  ASSERT_EQ(flat.exit_status, 0) << flat.err;
  EXPECT_EQ(flat.out.find("(inlined)"), std::string::npos);
  auto tree = tree_below(flat.out, "[.] leaf_60");
  ASSERT_GE(tree.size(), 3u) << flat.out.substr(0, 3000);
  EXPECT_TRUE(trimmed(tree[1]).ends_with("leaf_60")) << tree[1];
  EXPECT_THAT(frames_after(tree, 1, 1), ::testing::ElementsAre("work_60")) << flat.out;
  // script follows the same rule: inlined frames in DWARF chains unless --no-inline (under
  // whichever leaves had samples in step, as above).
  auto script = pt::run_perfscope({"script", "-F", "comm,ip,sym", "-i", path});
  ASSERT_EQ(script.exit_status, 0) << script.err;
  EXPECT_TRUE(std::regex_search(script.out,
                                std::regex(R"(step \(inlined\)\n\s+[0-9a-f]+ leaf_(60|30|10))")))
      << script.out.substr(0, 2000);
  auto script_flat = pt::run_perfscope({"script", "--no-inline", "-F", "comm,ip,sym", "-i", path});
  ASSERT_EQ(script_flat.exit_status, 0) << script_flat.err;
  EXPECT_EQ(script_flat.out.find("(inlined)"), std::string::npos);
  EXPECT_NE(script_flat.out.find(" leaf_60\n"), std::string::npos);
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

// The rows of at least 1 % (children and self shares, symbol) and the call trees below them,
// trailing blanks dropped: what two reports of one file must agree on whatever their other
// columns (ours has Samples) and however they name unresolved addresses.
std::vector<std::string> rows_and_trees(const std::string& text) {
  static const std::regex row_pattern(
      R"(^\s+([0-9.]+)%\s+(?:([0-9.]+)%\s+)?(?:[0-9]+\s+)?.*?(\[[.k]\] .*?)\s*$)");
  std::vector<std::string> out;
  std::istringstream in(text);
  bool keep = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.starts_with('#')) continue;
    std::smatch match;
    if (line.find("--") == std::string::npos && std::regex_match(line, match, row_pattern)) {
      keep = std::stod(match[1]) >= 1.0;
      if (keep)
        out.push_back(fmt::format("{}% {}% {}", match[1].str(), match[2].str(), match[3].str()));
      continue;
    }
    if (!keep) continue;
    line.erase(line.find_last_not_of(' ') + 1);
    out.push_back(line);
  }
  return out;
}

// A call tree line's frame: the columns its branch mark ("--") and its name start at, its branch
// share ("" on a chain's continuation and on the "---" first line), and the name.
struct TreeFrame {
  std::size_t mark_column = 0, column = 0;
  std::string share;
  std::string name;
  bool branch = false;  // "--P%--name" or "---name": a new node, not a chain's next frame
};

std::optional<TreeFrame> tree_frame(const std::string& line) {
  std::size_t at = line.find_first_not_of(" |");
  if (at == std::string::npos) return std::nullopt;
  TreeFrame frame;
  frame.mark_column = at;
  if (line.compare(at, 3, "---") == 0) {
    frame.branch = true;
    at += 3;
  } else if (line.compare(at, 2, "--") == 0) {
    std::size_t end = line.find("--", at + 2);
    if (end == std::string::npos) return std::nullopt;
    frame.branch = true;
    frame.share = line.substr(at + 2, end - at - 2);
    at = end + 2;
  }
  frame.column = at;
  frame.name = line.substr(at);
  return frame;
}

// rows_and_trees() with each row's tree as the sorted list of its nodes' paths from the row
// (shares and frames): equal trees whatever the order of their sibling branches. perf orders
// branches of equal share by where its heap put their DSOs' structures, which no file records.
std::vector<std::string> with_trees_unordered(const std::vector<std::string>& lines) {
  std::vector<std::string> out, paths;
  struct Open {
    std::size_t mark_column, column;
    std::string path;
  };
  std::vector<Open> open;
  auto flush = [&] {
    std::sort(paths.begin(), paths.end());
    out.insert(out.end(), paths.begin(), paths.end());
    paths.clear();
    open.clear();
  };
  for (const std::string& line : lines) {
    if (!line.starts_with(' ')) {  // a row
      flush();
      out.push_back(line);
      continue;
    }
    auto frame = tree_frame(line);
    if (!frame) continue;
    if (!frame->branch && !open.empty() && open.back().column == frame->column) {
      open.back().path += " " + frame->name;
      paths.back() = open.back().path;
      continue;
    }
    while (!open.empty() && open.back().mark_column >= frame->mark_column) open.pop_back();
    std::string path = open.empty() ? std::string() : open.back().path + " / ";
    path += (frame->share.empty() ? "" : frame->share + " ") + frame->name;
    open.push_back({frame->mark_column, frame->column, path});
    paths.push_back(path);
  }
  flush();
  return out;
}

// The branches of a tree whose share is above their previous sibling's: none in a tree sorted as
// perf sorts them.
std::vector<std::string> branches_out_of_share_order(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  std::vector<std::pair<std::size_t, double>> last;  // by depth: mark column and share
  for (const std::string& line : lines) {
    if (!line.starts_with(' ')) {
      last.clear();
      continue;
    }
    auto frame = tree_frame(line);
    if (!frame || !frame->branch) continue;
    while (!last.empty() && last.back().first > frame->mark_column) last.pop_back();
    double share = frame->share.empty() ? 100.0 : std::stod(frame->share);
    if (!last.empty() && last.back().first == frame->mark_column) {
      if (share > last.back().second) out.push_back(line);
      last.back().second = share;
    } else {
      last.emplace_back(frame->column, share);
    }
  }
  return out;
}

// --children and -g caller/callee trees against perf report on the same file: a function with
// self time and a callee (outer), a recursion (recurse), an untyped local assembly label
// (call_tree_label, named as perf names it), sorted by comm,dso,sym and by sym first.
TEST(ReportCliTest, CallTreesHavePerfReportsShape) {
  // User space only: on a loaded host the workload is preempted often, and the kernel frames of
  // those samples would hang below its leaves (inner calling finish_task_switch) in the trees.
  std::string path = record("call_tree", {"-g"}, {call_tree_workload, "150"}, "cpu-clock:u");
  auto ours = pt::run_perfscope({"report", "--stdio", "--children", "-g", "caller", "-i", path});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  auto shares = by_symbol(table_rows(ours.out));
  EXPECT_GT(shares["[.] call_tree_label"], 3.0) << ours.out;
  // A few samples may land where nothing is named (the dynamic loader's start-up, slower on a
  // loaded host).
  EXPECT_LT(shares.count("[.] [unknown]") ? shares["[.] [unknown]"] : 0.0, 1.5) << ours.out;
  // outer has self time and a callee: its tree has the whole chain of its own samples and the
  // callee branch of its children time, in the order of their shares (nearly equal here), each
  // branch's first line carrying its share.
  std::string outer_tree;
  for (const auto& line : tree_below(ours.out, "[.] outer")) {
    std::string frame = frame_of(line);
    if (!frame.empty()) outer_tree += frame + "\n";
  }
  EXPECT_NE(outer_tree.find("main\nouter\n"), std::string::npos) << outer_tree;
  EXPECT_NE(outer_tree.find("outer\ninner\n"), std::string::npos) << outer_tree;
  // A leaf's row shows the chain from the outermost frame down to it (a sample on inner's first
  // instruction, whose frame-pointer chain skips outer, may split off a hidden branch above).
  auto inner_tree = tree_below(ours.out, "[.] inner");
  ASSERT_GE(inner_tree.size(), 4u) << ours.out;
  EXPECT_EQ(frame_of(inner_tree.back()), "inner") << ours.out;
  EXPECT_EQ(frame_of(inner_tree[inner_tree.size() - 2]), "outer") << ours.out;

  if (!perf_available()) {
    std::filesystem::remove(path);
    GTEST_SKIP() << "Linux perf is not installed at " << perf_path
                 << ": the trees were not compared with perf report's";
  }
  for (std::string graph : {"caller", "callee"}) {
    for (std::string children : {"--children", "--no-children"}) {
      for (std::string sort : {"comm,dso,sym", "sym"}) {
        std::vector<std::string> options{"--stdio", children, "-g", graph,
                                         "--sort",  sort,     "-i", path};
        std::vector<std::string> perf_argv{perf_path, "report"};
        perf_argv.insert(perf_argv.end(), options.begin(), options.end());
        auto theirs = pt::run_command(perf_argv);
        ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
        std::vector<std::string> our_argv{"report"};
        our_argv.insert(our_argv.end(), options.begin(), options.end());
        auto mine = pt::run_perfscope(our_argv);
        ASSERT_EQ(mine.exit_status, 0) << mine.err;
        auto expected = rows_and_trees(theirs.out);
        ASSERT_GE(expected.size(), 10u) << theirs.out;
        auto our_lines = rows_and_trees(mine.out);
        EXPECT_THAT(branches_out_of_share_order(our_lines), ::testing::IsEmpty()) << mine.out;
        EXPECT_EQ(with_trees_unordered(our_lines), with_trees_unordered(expected))
            << children << " -g " << graph << " --sort " << sort << "\nours:\n"
            << mine.out << "\nperf:\n"
            << theirs.out;
      }
    }
  }
  std::filesystem::remove(path);
}

// --srcline alone: each call-graph entry names its line, as perf's -g ...,address does.
TEST(ReportCliTest, SourceLinesInCallGraphs) {
  std::string path = record("srcline", {"-g"}, {known_answer_fp, "100"});
  auto result = pt::run_perfscope({"report", "--stdio", "--no-children", "--srcline", "-i", path});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  auto tree = tree_below(result.out, "[.] leaf_60");
  ASSERT_GE(tree.size(), 4u) << result.out.substr(0, 3000);
  // One branch per sampled line of leaf_60 ("---" when all samples hit one line, as a skidding
  // hardware event may make them; "|--P%--" for each line otherwise, as perf draws them).
  static const std::regex leaf(R"((---|--[0-9.]+%--)leaf_60 known_answer\.cpp:[0-9]+)");
  static const std::regex caller(R"(work_60 known_answer\.cpp:[0-9]+)");
  EXPECT_TRUE(std::regex_search(tree[1], leaf)) << tree[1];
  EXPECT_TRUE(std::regex_search(tree[2], caller)) << tree[2];
  // Without it the entries are functions alone.
  auto plain = pt::run_perfscope({"report", "--stdio", "--no-children", "-i", path});
  ASSERT_EQ(plain.exit_status, 0) << plain.err;
  auto plain_tree = tree_below(plain.out, "[.] leaf_60");
  ASSERT_GE(plain_tree.size(), 2u) << plain.out.substr(0, 3000);
  EXPECT_EQ(plain_tree[1], "            ---leaf_60");
  std::filesystem::remove(path);
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
  // One symbol kept: perf leaves its column out and names it in the header.
  EXPECT_NE(filtered.out.find("#\n# symbol: leaf_10\n#\n"), std::string::npos) << filtered.out;
  std::smatch only_row;
  ASSERT_TRUE(std::regex_search(
      filtered.out, only_row,
      std::regex(R"(\n +([0-9.]+)% +[0-9]+ +known_answer_fp +known_answer_fp *\n(#|$))")))
      << filtered.out;
  // Shares of everything recorded, as perf's default (--percentage absolute) shows them.
  EXPECT_NEAR(std::stod(only_row[1]), 10.0, 5.0);
  // Two symbols: the column stays.
  auto two = pt::run_perfscope({"report", "--stdio", "--no-children", "--symbols",
                                "leaf_10,leaf_30", "-g", "none", "-i", path});
  ASSERT_EQ(two.exit_status, 0) << two.err;
  auto rows = table_rows(two.out);
  ASSERT_EQ(rows.size(), 2u) << two.out;
  EXPECT_EQ(rows[0].symbol, "[.] leaf_30");
  auto kernel = pt::run_perfscope({"report", "--stdio", "--no-children", "-g", "none", "--dso",
                                   "[kernel.kallsyms],known_answer_fp", "-i", path});
  ASSERT_EQ(kernel.exit_status, 0) << kernel.err;
  EXPECT_GE(table_rows(kernel.out).size(), 3u) << kernel.out;
  std::filesystem::remove(path);
}

TEST(ReportCliTest, BadOptionsSayWhatIsWrong) {
  std::string path = record("errors", {}, {known_answer_fp, "10"});
  auto sort = pt::run_perfscope({"report", "-i", path, "--sort", "comm,bogus"});
  EXPECT_NE(sort.exit_status, 0);
  EXPECT_NE(sort.err.find("unknown key 'bogus'"), std::string::npos) << sort.err;
  auto graph = pt::run_perfscope({"report", "-i", path, "-g", "sideways"});
  EXPECT_NE(graph.exit_status, 0);
  EXPECT_NE(graph.err.find("none of perf's call-graph words (graph, caller, callee, none"),
            std::string::npos)
      << graph.err;
  auto format = pt::run_perfscope({"report", "-i", path, "--format", "png"});
  EXPECT_NE(format.exit_status, 0);
  EXPECT_NE(format.err.find("folded, speedscope"), std::string::npos) << format.err;
  auto missing = pt::run_perfscope({"report", "-i", path + ".missing"});
  EXPECT_NE(missing.exit_status, 0);
  EXPECT_NE(missing.err.find(".missing"), std::string::npos) << missing.err;
  std::filesystem::remove(path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::uint64_t realtime_ns() {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(now.tv_nsec);
}

TEST(ReportCliTest, ExportsOfARecordingMatchTheirSchemasClockAndMappings) {
  std::uint64_t before = realtime_ns();
  std::string path = record("schemas", {"-g"}, {known_answer_fp, "100"});
  std::uint64_t after = realtime_ns();

  std::map<std::string, std::string> outputs;
  for (const char* format : {"speedscope", "json", "gecko"}) {
    std::string out = temp_path(std::string("export_") + format);
    auto result = pt::run_perfscope({"report", "-i", path, "--format", format, "-o", out});
    ASSERT_EQ(result.exit_status, 0) << result.err;
    outputs[format] = out;
  }
  bool skipped = false;
  std::string skip_reason;
  for (const auto& [format, schema] : std::map<std::string, std::string>{
           {"speedscope", PERFSCOPE_SPEEDSCOPE_SCHEMA}, {"json", PERFSCOPE_PROFILE_JSON_SCHEMA}}) {
    auto check = pt::check_json_schema(schema, outputs[format]);
    if (!check.ran) {
      skipped = true;
      skip_reason = check.report;
      continue;
    }
    EXPECT_TRUE(check.valid) << format << ": " << check.report;
  }

  auto doc = nlohmann::json::parse(read_file(outputs["json"]));
  const auto& summary = doc.at("summary");
  // perfscope record times samples by CLOCK_MONOTONIC and says so, with the wall clock beside it.
  ASSERT_EQ(summary.at("clockid"), 1);
  ASSERT_TRUE(summary.at("wall_clock_ns").is_number_unsigned());
  std::uint64_t wall_zero = summary["wall_clock_ns"];
  std::uint64_t first_time = summary.at("first_time");
  EXPECT_GE(wall_zero + first_time, before);
  EXPECT_LE(wall_zero + first_time, after);
  struct timespec monotonic {};
  ::clock_gettime(CLOCK_MONOTONIC, &monotonic);
  EXPECT_LT(first_time, static_cast<std::uint64_t>(monotonic.tv_sec) * 1000000000ULL +
                            static_cast<std::uint64_t>(monotonic.tv_nsec));

  // The recorded binary's mapping: its path, an executable range around main's frames.
  std::size_t program_dso = doc.at("dsos").size();
  for (std::size_t d = 0; d < doc["dsos"].size(); ++d) {
    if (doc["dsos"][d].at("path") == known_answer_fp) program_dso = d;
  }
  ASSERT_LT(program_dso, doc["dsos"].size());
  std::string build_id = doc["dsos"][program_dso].at("build_id");
  EXPECT_EQ(build_id.size(), 40u);  // linked with --build-id (sha1)
  std::size_t frames_in_mapping = 0;
  for (const auto& frame : doc.at("frames")) {
    if (frame.at("mapping").is_null()) continue;
    const auto& mapping = doc.at("mappings").at(frame["mapping"].get<std::size_t>());
    auto hex = [](const nlohmann::json& value) {
      return std::stoull(value.get<std::string>(), nullptr, 16);
    };
    std::uint64_t address = hex(frame.at("address"));
    EXPECT_GE(address, hex(mapping.at("start")));
    EXPECT_LT(address, hex(mapping.at("end")));
    if (mapping.at("dso") != program_dso) continue;
    // The file offset perf script prints is the address's place in the mapping plus its pgoff.
    EXPECT_EQ(hex(frame.at("dso_address")),
              address - hex(mapping.at("start")) + hex(mapping.at("pgoff")));
    ++frames_in_mapping;
  }
  EXPECT_GT(frames_in_mapping, 3u);

  // The Firefox Profiler file: dated by the same clock, the program among its libraries with its
  // Breakpad id.
  auto gecko = nlohmann::json::parse(read_file(outputs["gecko"]));
  EXPECT_DOUBLE_EQ(gecko.at("meta").at("startTime").get<double>(),
                   static_cast<double>(wall_zero + first_time) / 1e6);
  EXPECT_EQ(gecko["meta"].at("startTimeAsClockMonotonicNanosecondsSinceBoot"), first_time);
  bool program_listed = false;
  for (const auto& lib : gecko.at("libs")) {
    if (lib.at("path") != known_answer_fp) continue;
    program_listed = true;
    std::string swapped = build_id.substr(6, 2) + build_id.substr(4, 2) + build_id.substr(2, 2) +
                          build_id.substr(0, 2) + build_id.substr(10, 2) + build_id.substr(8, 2) +
                          build_id.substr(14, 2) + build_id.substr(12, 2) + build_id.substr(16, 16);
    for (auto& c : swapped) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(lib.at("breakpadId"), swapped + "0");
  }
  EXPECT_TRUE(program_listed);

  if (perf_available()) {
    // perf reads our CLOCK_DATA as its own, and dates the first sample as we do.
    auto header = pt::run_command({perf_path, "report", "--header-only", "-i", path});
    EXPECT_EQ(header.exit_status, 0) << header.err;
    EXPECT_NE(header.out.find("# clockid: monotonic (1)"), std::string::npos) << header.out;
    EXPECT_NE(header.out.find("# reference time: "), std::string::npos) << header.out;
    EXPECT_EQ(header.err.find("arning"), std::string::npos) << header.err;
    auto script = pt::run_command(
        {"env", "TZ=UTC", perf_path, "script", "--ns", "-F", "time,tod", "-i", path});
    ASSERT_EQ(script.exit_status, 0) << script.err;
    std::uint64_t wall = wall_zero + first_time;
    time_t seconds = static_cast<time_t>(wall / 1000000000ULL);
    struct tm utc {};
    ::gmtime_r(&seconds, &utc);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &utc);
    // perf pads the columns differently between releases: one space or more between them.
    std::string tod = fmt::format("{}.{:09d}", date, wall % 1000000000ULL);
    std::string time =
        fmt::format("{}.{:09d}:", first_time / 1000000000ULL, first_time % 1000000000ULL);
    std::string first_line = script.out.substr(0, script.out.find('\n'));
    std::size_t at = first_line.find(tod);
    ASSERT_NE(at, std::string::npos) << first_line << " vs " << tod;
    std::size_t next = first_line.find_first_not_of(' ', at + tod.size());
    ASSERT_NE(next, at + tod.size()) << first_line;
    EXPECT_EQ(first_line.compare(next, time.size(), time), 0) << first_line << " vs " << time;
  }
  for (const auto& [format, out] : outputs) std::filesystem::remove(out);
  std::filesystem::remove(path);
  if (skipped) GTEST_SKIP() << "schema checks skipped: " << skip_reason;
}

// Every kernel text symbol of a kallsyms text but the reference symbols renamed to
// name_fromcopy; `text_address`, when not empty, replaces the address of _text.
std::string doctored_kallsyms(const std::string& text, const std::string& text_address) {
  std::istringstream lines(text);
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string address, type, name, module;
    fields >> address >> type >> name >> module;
    if (name == "_text" && !text_address.empty()) line = text_address + " " + type + " _text";
    bool reference = name == "_text" || name == "_stext";
    if (module.empty() && (type == "t" || type == "T") && !reference) line += "_fromcopy";
    out += line;
    out += '\n';
  }
  return out;
}

TEST(ReportCliTest, RecordSavesKallsymsInTheBuildIdCacheAndReportReadsIt) {
  auto kallsyms = perfscope::sys::read_text_file("/proc/kallsyms");
  auto build_id = perfscope::kernel_build_id();
  if (!kallsyms || !build_id) GTEST_SKIP() << "no readable /proc/kallsyms or kernel build id";
  std::smatch text_line;
  if (!std::regex_search(*kallsyms, text_line, std::regex("\\n([0-9a-f]+) T _text\\n")) ||
      std::stoull(text_line[1].str(), nullptr, 16) == 0) {
    GTEST_SKIP() << "kptr_restrict hides kernel addresses from this user";
  }
  std::string home = temp_path("home");
  std::filesystem::create_directories(home);
  std::string path = temp_path("kallsyms_copy");
  auto recorded = pt::run_command({"env", "HOME=" + home, PERFSCOPE_CLI_PATH, "record", "-F",
                                   "4000", "-e", "cpu-clock", "-o", path, "--", "sh", "-c",
                                   "for i in 1 2 3 4; do cat /proc/kallsyms >/dev/null; done"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  std::string hex = perfscope::build_id_hex(*build_id);
  std::string directory = home + "/.debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2);
  std::string copy = directory + "/kallsyms";
  namespace fs = std::filesystem;
  ASSERT_TRUE(fs::is_regular_file(copy)) << copy;
  EXPECT_EQ(fs::status(copy).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(directory).permissions(), fs::perms::owner_all);
  EXPECT_EQ(fs::status(home + "/.debug").permissions(), fs::perms::owner_all);
  auto saved = perfscope::sys::read_text_file(copy);
  ASSERT_TRUE(saved);
  EXPECT_NE(saved->find(" T _text\n"), std::string::npos);
  EXPECT_GT(saved->size(), kallsyms->size() / 2);

  auto kernel_symbols = [&](const std::string& run_home) {
    auto report = pt::run_command({"env", "HOME=" + run_home, PERFSCOPE_CLI_PATH, "report",
                                   "--stdio", "--sort", "dso,sym", "-i", path});
    EXPECT_EQ(report.exit_status, 0) << report.err;
    std::vector<std::string> names;
    for (const auto& row : table_rows(report.out)) {
      if (row.dso == "[kernel.kallsyms]") names.push_back(row.symbol);
    }
    return std::pair(names, report.out + report.err);
  };
  auto ends_with_copy = [](const std::string& name) { return name.ends_with("_fromcopy"); };

  // The copy's symbols are used when its _text is where the recording's kernel had it.
  {
    std::ofstream(copy) << doctored_kallsyms(*saved, "");
    auto [names, text] = kernel_symbols(home);
    ASSERT_FALSE(names.empty()) << text;
    EXPECT_TRUE(std::all_of(names.begin(), names.end(), ends_with_copy)) << text;
    EXPECT_EQ(text.find("may be wrong"), std::string::npos) << text;
  }
  // A copy of another boot (its _text elsewhere) is passed over for /proc/kallsyms, which
  // matches the recording.
  {
    std::ofstream(copy) << doctored_kallsyms(*saved, "ffffffff90000000");
    auto [names, text] = kernel_symbols(home);
    ASSERT_FALSE(names.empty()) << text;
    EXPECT_TRUE(std::none_of(names.begin(), names.end(), ends_with_copy)) << text;
    EXPECT_EQ(text.find("may be wrong"), std::string::npos) << text;
  }
  // Record rewrites a copy that differs from the running kernel's kallsyms.
  recorded = pt::run_command({"env", "HOME=" + home, PERFSCOPE_CLI_PATH, "record", "-F", "4000",
                              "-e", "cpu-clock", "-o", path, "--", "cat", "/proc/kallsyms"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto rewritten = perfscope::sys::read_text_file(copy);
  ASSERT_TRUE(rewritten);
  EXPECT_EQ(rewritten->find("_fromcopy"), std::string::npos);
  EXPECT_EQ(fs::status(copy).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  // An unwritable HOME only loses the copy.
  auto unwritable = pt::run_command(
      {PERFSCOPE_CLI_PATH, "record", "-e", "cpu-clock", "-o", path, "--", "env", "true"});
  EXPECT_EQ(unwritable.exit_status, 0) << unwritable.err;
  unwritable = pt::run_command({"env", "HOME=/proc/self", PERFSCOPE_CLI_PATH, "record", "-e",
                                "cpu-clock", "-o", path, "--", "cat", "/proc/kallsyms"});
  EXPECT_EQ(unwritable.exit_status, 0) << unwritable.err;
  EXPECT_EQ(unwritable.err.find("error"), std::string::npos) << unwritable.err;
  fs::remove_all(home);
  fs::remove(path);
  fs::remove(path + ".old");  // record keeps the previous recording there, as perf does
}

}  // namespace
