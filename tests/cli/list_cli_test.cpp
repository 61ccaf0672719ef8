// `perfscope list` and the grammar in `perfscope stat`, end to end: the JSON catalog against
// tracefs, uprobes counting every call of uprobe_target, an alias's .scale and .unit applied in
// stat's report, and grammar errors with their caret.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
using nlohmann::json;
using ::testing::HasSubstr;

const std::string uprobe_target = PERFSCOPE_UPROBE_TARGET_PATH;

const json* find_event(const json& events, const std::string& name) {
  for (const auto& event : events) {
    if (event["name"] == name) return &event;
  }
  return nullptr;
}

}  // namespace

TEST(ListCli, JsonCatalog) {
  auto result = pt::run_perfscope({"list", "--json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  auto document = json::parse(result.out);
  EXPECT_EQ(document["schema"], "perfscope-list");
  const auto& events = document["events"];
  const json* clock = find_event(events, "task-clock");
  ASSERT_NE(clock, nullptr);
  EXPECT_EQ((*clock)["category"], "software");
  EXPECT_EQ((*clock)["opens"], true);
  EXPECT_EQ((*clock)["probed"], true);
  EXPECT_NE(find_event(events, "L1-dcache-load-misses"), nullptr);
  EXPECT_NE(find_event(events, "mem:ADDR[/LEN][:rwx]"), nullptr);
  EXPECT_NE(find_event(events, "uprobe:/path/to/binary:symbol[+offset]"), nullptr);
  if (auto root = perfscope::sys::tracefs_root()) {
    auto available = perfscope::sys::read_text_file(*root + "/available_events");
    if (available) {
      std::size_t lines =
          static_cast<std::size_t>(std::count(available->begin(), available->end(), '\n'));
      std::size_t tracepoints = 0;
      for (const auto& event : events) tracepoints += event["category"] == "tracepoint";
      EXPECT_EQ(tracepoints, lines);
    }
  }
}

TEST(ListCli, PatternAndTextOutput) {
  auto result = pt::run_perfscope({"list", "page-fault*"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("Software events (1):"));
  EXPECT_THAT(result.out, HasSubstr("page-faults OR faults"));
  EXPECT_THAT(result.out, HasSubstr(" yes "));
  EXPECT_EQ(pt::run_perfscope({"list", "no-such-event-anywhere"}).out, "no event matches\n");
  if (pt::tracefs_available() && pt::running_as_root()) {
    auto tracepoint = pt::run_perfscope({"list", "sched:sched_switch"});
    EXPECT_THAT(tracepoint.out, HasSubstr("Tracepoints (1):"));
    EXPECT_THAT(tracepoint.out, ::testing::ContainsRegex("sched:sched_switch +yes"));
  }
}

// perf list's class words list that class (perf list sw): the same events as perf's class, not
// the events whose names hold "sw".
TEST(ListCli, ClassWordsListThatClassAsPerfDoes) {
  auto software = pt::run_perfscope({"list", "sw", "--no-probe", "--json"});
  ASSERT_EQ(software.exit_status, 0) << software.err;
  std::set<std::string> ours;
  const auto software_events = nlohmann::json::parse(software.out).at("events");
  for (const auto& event : software_events) {
    EXPECT_EQ(event.at("category"), "software") << event.dump();
    ours.insert(event.at("name").get<std::string>());
  }
  EXPECT_TRUE(ours.count("cpu-clock") && ours.count("page-faults")) << software.out;
  auto text = pt::run_perfscope({"list", "software", "--no-probe"});
  EXPECT_THAT(text.out, HasSubstr(fmt::format("Software events ({}):", ours.size())));
  EXPECT_THAT(text.out, ::testing::Not(HasSubstr("Hardware")));
  for (const char* word : {"hw", "cache", "pmu"}) {
    auto listed = pt::run_perfscope({"list", word, "--no-probe", "--json"});
    ASSERT_EQ(listed.exit_status, 0) << listed.err;
    const auto events = nlohmann::json::parse(listed.out).at("events");
    for (const auto& event : events) {
      EXPECT_EQ(event.at("category"), std::string(word) == "hw" ? "hardware" : word)
          << word << ": " << event.dump();
    }
  }
  if (::access("/usr/bin/perf", X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  // perf's software class: every name it lists is one of ours.
  auto theirs = pt::run_command({"/usr/bin/perf", "list", "sw"});
  std::istringstream lines(theirs.out);
  std::size_t compared = 0;
  static const std::regex row(R"(^\s+(\S+)(?: OR \S+)?\s+\[Software event\]$)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (!std::regex_match(line, match, row)) continue;
    ++compared;
    EXPECT_TRUE(ours.count(match[1].str())) << match[1] << " is perf's software event, not ours";
  }
  EXPECT_GE(compared, 9u) << theirs.out;
}

TEST(ListCli, StatCountsUprobesExactly) {
  if (!perfscope::PmuRegistry::system().find("uprobe") || !pt::running_as_root()) {
    GTEST_SKIP() << "uprobes need the uprobe PMU and root here";
  }
  auto result = pt::run_perfscope(
      {"stat", "--json", "-e",
       "uprobe:" + uprobe_target + ":counted_call,uretprobe:" + uprobe_target + ":counted_call",
       "--", uprobe_target, "777"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  auto events = json::parse(result.err)["events"];  // stat reports on stderr, as perf does
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["raw_value"], 777);
  EXPECT_EQ(events[1]["raw_value"], 777);
}

TEST(ListCli, StatAppliesAliasScaleAndUnit) {
  // A PMU directory describing the software PMU (type 1) with a scaled alias of task-clock.
  auto root =
      std::filesystem::temp_directory_path() / ("perfscope-pmus-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "scaled/format");
  std::filesystem::create_directories(root / "scaled/events");
  std::ofstream(root / "scaled/type") << "1\n";
  std::ofstream(root / "scaled/format/event") << "config:0-63\n";
  std::ofstream(root / "scaled/events/clock") << "event=0x1\n";
  std::ofstream(root / "scaled/events/clock.scale") << "1e-6\n";
  std::ofstream(root / "scaled/events/clock.unit") << "ms\n";
  auto result =
      pt::run_command({"env", "PERFSCOPE_PMU_ROOT=" + root.string(), PERFSCOPE_CLI_PATH, "stat",
                       "--json", "-e", "scaled/clock/", "--", uprobe_target, "100000"});
  auto text = pt::run_command({"env", "PERFSCOPE_PMU_ROOT=" + root.string(), PERFSCOPE_CLI_PATH,
                               "stat", "-e", "scaled/clock/", "--", uprobe_target, "1"});
  std::filesystem::remove_all(root);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  auto event = json::parse(result.err)["events"].at(0);
  EXPECT_EQ(event["unit"], "ms");
  EXPECT_EQ(event["scale"], 1e-6);
  double raw = event["raw_value"].get<double>();
  EXPECT_GT(raw, 0);
  EXPECT_NEAR(event["value"].get<double>(), raw * 1e-6, raw * 1e-9);
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_THAT(text.err + text.out, ::testing::ContainsRegex("[0-9]+\\.[0-9]{2} ms +scaled/clock/"));
}

TEST(ListCli, StatShowsGrammarErrorsWithACaret) {
  auto result = pt::run_perfscope({"stat", "-e", "task-clock,nopmu/event=1/", "--", "true"});
  EXPECT_EQ(result.exit_status, 129);
  EXPECT_THAT(result.err, HasSubstr("unknown PMU 'nopmu'"));
  EXPECT_THAT(result.err, HasSubstr("\n  task-clock,nopmu/event=1/\n             ^"));
  auto modifier = pt::run_perfscope({"stat", "-e", "{task-clock,page-faults}:uq", "--", "true"});
  EXPECT_EQ(modifier.exit_status, 129);
  EXPECT_THAT(modifier.err, HasSubstr("modifier 'q'"));
}

// perf list's -d/--desc (the default) and --no-desc: each event's description, or none.
TEST(ListCli, NoDescLeavesDescriptionsOut) {
  auto with = pt::run_perfscope({"list", "sw", "--no-probe", "-d"});
  auto without = pt::run_perfscope({"list", "sw", "--no-probe", "--no-desc"});
  ASSERT_EQ(with.exit_status, 0) << with.err;
  ASSERT_EQ(without.exit_status, 0) << without.err;
  EXPECT_THAT(with.out, HasSubstr("unaligned accesses the kernel fixed up"));
  EXPECT_EQ(without.out.find("unaligned accesses"), std::string::npos);
  EXPECT_THAT(without.out, ::testing::ContainsRegex("\n  alignment-faults +-\n"));
  EXPECT_EQ(pt::run_perfscope({"list", "sw", "--no-probe"}).out, with.out);
}
