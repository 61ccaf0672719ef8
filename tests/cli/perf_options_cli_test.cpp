// perf's command line, whole (issue #44): every long option the installed perf lists for its
// everyday commands (`perf CMD -h`, asked at test time) parses in perfscope: it is taken, or
// refused with a sentence that names what this machine lacks, never "unknown option" and never a
// refusal for what perfscope has not built.
//
// The options not yet built (unknown, or refused for want of code rather than of a capability) are
// listed, one per line, in data/perf_options_pending.txt: the list is exact both ways (an option
// that parses must leave it), so it shrinks as they are built and names what is left.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <future>
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
const std::vector<std::string> commands{"record", "report", "script", "stat",  "annotate", "diff",
                                        "inject", "list",   "top",    "trace", "sched"};

// perf's long options of `command` as its -h lists them ("    -a, --all-cpus   ...",
// "        --affinity <node|cpu>").
std::vector<std::string> perf_long_options(const std::string& command) {
  pt::CommandResult help = pt::run_command({perf_path, command, "-h"});
  std::set<std::string> options;
  static const std::regex line(R"(^\s+(?:-\S, )?(--[a-z0-9][a-z0-9-]*))");
  std::istringstream text(help.out + help.err);
  std::smatch match;
  for (std::string each; std::getline(text, each);) {
    if (std::regex_search(each, match, line)) options.insert(match[1]);
  }
  return {options.begin(), options.end()};
}

// Sets PERFSCOPE_PARSE_OPTIONS_ONLY for the runs in its scope: perfscope parses, then exits.
struct ParseOnly {
  ParseOnly() { ::setenv("PERFSCOPE_PARSE_OPTIONS_ONLY", "1", 1); }
  ~ParseOnly() { ::unsetenv("PERFSCOPE_PARSE_OPTIONS_ONLY"); }
};

std::set<std::string> pending_options() {
  std::ifstream file(PERFSCOPE_PERF_OPTIONS_PENDING);
  EXPECT_TRUE(file.good()) << "cannot read " << PERFSCOPE_PERF_OPTIONS_PENDING;
  std::set<std::string> pending;
  for (std::string line; std::getline(file, line);) {
    if (!line.empty() && line[0] != '#') pending.insert(line);
  }
  return pending;
}

}  // namespace

TEST(PerfOptions, EveryOptionPerfListsParses) {
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf (linux-perf) is not installed";
  ParseOnly parse_only;
  std::set<std::string> pending = pending_options();
  std::map<std::string, std::size_t> listed, accepted;
  std::vector<std::string> unknown, built, unexplained_refusals;
  std::size_t all = 0;
  for (const std::string& command : commands) {
    std::vector<std::string> options = perf_long_options(command);
    EXPECT_GE(options.size(), 4u) << "perf " << command << " -h listed too few options";
    // Eight at a time: several hundred short runs.
    std::vector<std::future<pt::CommandResult>> runs;
    for (const std::string& option : options) {
      runs.push_back(std::async(std::launch::async, [&command, option] {
        // sched's own options go with one of its subcommands.
        if (command == "sched") return pt::run_perfscope({command, "timehist", option});
        return pt::run_perfscope({command, option});
      }));
      if (runs.size() < 8 && &option != &options.back()) continue;
      std::size_t first = static_cast<std::size_t>(&option - options.data()) + 1 - runs.size();
      for (std::size_t i = 0; i < runs.size(); ++i) {
        pt::CommandResult result = runs[i].get();
        const std::string& name = options[first + i];
        std::string key = command + " " + name;
        ++listed[command];
        ++all;
        bool is_unknown = result.err.find("unknown option") != std::string::npos ||
                          result.err.find("unexpected argument") != std::string::npos;
        // Parsed but refused: an option error that is not a missing value.
        bool refused = !is_unknown && result.exit_status == 129 &&
                       result.err.find("needs a value") == std::string::npos;
        bool built_here = !is_unknown && !refused;
        if (built_here) ++accepted[command];
        if (pending.count(key)) {
          if (built_here) built.push_back(key);
          continue;
        }
        if (is_unknown) unknown.push_back(key);
        // Refused for what this machine lacks: the sentence names it.
        static const std::regex capability(
            "PMU|this machine|this kernel|BPF|hardware|is not installed|needs ");
        if (refused && !std::regex_search(result.err, capability)) {
          unexplained_refusals.push_back(key + ": " + result.err);
        }
        if (refused) ++accepted[command];
      }
      runs.clear();
    }
  }
  std::string table;
  std::size_t taken = 0;
  for (const auto& [command, count] : listed) {
    table += fmt::format("  {:<9} {:>3} of {:>3}\n", command, accepted[command], count);
    taken += accepted[command];
  }
  fmt::print(
      "perf's long options that perfscope takes (or refuses for a missing capability):\n{}  all    "
      "   {:>3} of {:>3}\n",
      table, taken, all);
  EXPECT_TRUE(unknown.empty()) << unknown.size() << " of perf's options are unknown to perfscope "
                               << "and not listed as pending:\n  "
                               << fmt::format("{}", fmt::join(unknown, "\n  "));
  EXPECT_TRUE(built.empty()) << "built now: remove from perf_options_pending.txt:\n  "
                             << fmt::format("{}", fmt::join(built, "\n  "));
  EXPECT_TRUE(unexplained_refusals.empty())
      << "refused without naming a missing capability (list them as pending, or build them):\n"
      << fmt::format("{}", fmt::join(unexplained_refusals, "\n"));
}

// perf's exit status for an option error, which scripts written for perf test.
TEST(PerfOptions, AnOptionErrorExitsWith129AsPerfs) {
  for (const std::string& command : commands) {
    pt::CommandResult result = pt::run_perfscope({command, "--no-such-option-anywhere"});
    EXPECT_EQ(result.exit_status, 129) << command << ": " << result.err;
    // sched says first that it needs a subcommand (perf: the option).
    if (command == "sched") continue;
    EXPECT_NE(result.err.find("unknown option --no-such-option-anywhere"), std::string::npos)
        << result.err;
  }
  EXPECT_EQ(pt::run_perfscope({"stat", "-e", "no-such-event", "true"}).exit_status, 129);
  EXPECT_EQ(pt::run_perfscope({"record", "-F"}).exit_status, 129);
  EXPECT_EQ(pt::run_perfscope({"no-such-command"}).exit_status, 1);
  if (::access(perf_path.c_str(), X_OK) == 0) {
    EXPECT_EQ(pt::run_command({perf_path, "stat", "--no-such-option-anywhere"}).exit_status, 129);
  }
}
