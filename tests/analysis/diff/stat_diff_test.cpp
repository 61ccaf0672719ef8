// Stat diffs on hand-written perfscope-stat documents: each repeat's values read back (and the
// mean/stddev of files without them), verdicts, --fail-if thresholds that fail only on a
// significant change beyond them, files of different events, and other kinds of input.
#include "perfscope/analysis/diff/stat_diff.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "perfscope/analysis/diff/stat_file.hpp"

namespace {

using namespace perfscope;

std::string stat_document(const std::vector<std::pair<std::string, std::vector<double>>>& events,
                          const std::vector<double>& elapsed_ns) {
  nlohmann::json document = {{"schema", "perfscope-stat"},
                             {"version", 1},
                             {"target", "'work'"},
                             {"runs", elapsed_ns.size()},
                             {"elapsed_ns", elapsed_ns.front()},
                             {"elapsed_values_ns", elapsed_ns}};
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [name, values] : events) {
    list.push_back({{"name", name},
                    {"supported", true},
                    {"status", "counted"},
                    {"value", values.front()},
                    {"unit", name == "task-clock" ? "msec" : ""},
                    {"values", values}});
  }
  document["events"] = list;
  return document.dump();
}

const std::vector<double> elapsed{1e8, 1.01e8, 0.99e8, 1e8, 1.02e8};

TEST(StatDiffTest, ReadsEachRepeatAndGivesVerdicts) {
  StatFile base = parse_stat_file(stat_document({{"task-clock", {100, 101, 99, 100, 102}},
                                                 {"page-faults", {50, 50, 50, 50, 50}}},
                                                elapsed),
                                  "base.json");
  ASSERT_EQ(base.events.size(), 3u);  // and "elapsed"
  EXPECT_EQ(base.events[0].values.size(), 5u);
  EXPECT_NEAR(base.events[0].summary.mean, 100.4, 1e-9);
  EXPECT_EQ(base.events[2].name, "elapsed");
  EXPECT_NEAR(base.events[2].summary.mean, 100.4, 1e-9);  // milliseconds
  StatFile current = parse_stat_file(stat_document({{"task-clock", {200, 203, 198, 201, 204}},
                                                    {"page-faults", {50, 50, 50, 50, 50}}},
                                                   elapsed),
                                     "new.json");
  StatDiffOptions options;
  options.thresholds = {parse_stat_threshold("task-clock>+3%"),
                        parse_stat_threshold("page-faults>+1%")};
  StatDiff diff = diff_stat_files(base, current, options);
  ASSERT_EQ(diff.events.size(), 3u);
  EXPECT_EQ(diff.events[0].comparison.verdict, CountVerdict::slower);
  EXPECT_LE(diff.events[0].comparison.ci_low_percent, 100.0);
  EXPECT_GE(diff.events[0].comparison.ci_high_percent, 100.0);
  EXPECT_EQ(diff.events[0].failed, std::vector<std::string>{"task-clock>+3%"});
  EXPECT_EQ(diff.events[1].comparison.verdict, CountVerdict::no_significant_change);
  EXPECT_TRUE(diff.events[1].failed.empty());
  EXPECT_TRUE(diff.regression());
  EXPECT_EQ(diff.events[0].resolve_percent, 3.0);  // the threshold's size
  ASSERT_TRUE(diff.events[0].repeats_needed);

  std::string text = render_stat_diff(diff);
  EXPECT_NE(text.find("Welch's t-test"), std::string::npos) << text;
  EXPECT_NE(text.find("slower"), std::string::npos) << text;
  EXPECT_NE(text.find("# REGRESSION task-clock>+3%"), std::string::npos) << text;
  auto json = nlohmann::json::parse(stat_diff_json(diff));
  EXPECT_EQ(json["schema"], "perfscope-stat-diff");
  EXPECT_EQ(json["regression"], true);
  EXPECT_EQ(json["events"][0]["verdict"], "slower");
  EXPECT_EQ(json["events"][1]["verdict"], "no significant change");
  EXPECT_EQ(json["events"][0]["base"]["runs"], 5);
}

TEST(StatDiffTest, ThresholdsFailOnlyOnSignificantChangesBeyondThem) {
  StatFile base = parse_stat_file(stat_document({{"task-clock", {100, 110, 90, 105, 95}}}, elapsed),
                                  "base.json");
  // +5 % on average, but within the noise: not significant, so no failure.
  StatFile noisy = parse_stat_file(
      stat_document({{"task-clock", {105, 116, 94, 110, 100}}}, elapsed), "new.json");
  StatDiffOptions options;
  options.thresholds = {parse_stat_threshold("task-clock>+3%")};
  StatDiff diff = diff_stat_files(base, noisy, options);
  EXPECT_EQ(diff.events[0].comparison.verdict, CountVerdict::no_significant_change);
  EXPECT_FALSE(diff.regression());
  // Significant but below the threshold: no failure either.
  StatFile exact =
      parse_stat_file(stat_document({{"task-clock", {100, 100, 100}}}, elapsed), "base.json");
  StatFile slightly =
      parse_stat_file(stat_document({{"task-clock", {102, 102, 102}}}, elapsed), "new.json");
  StatDiff small = diff_stat_files(exact, slightly, options);
  EXPECT_EQ(small.events[0].comparison.verdict, CountVerdict::slower);
  EXPECT_FALSE(small.regression());
  // A decrease threshold.
  options.thresholds = {parse_stat_threshold("task-clock<-1%")};
  EXPECT_TRUE(diff_stat_files(slightly, exact, options).regression());
}

TEST(StatDiffTest, ThresholdSyntax) {
  auto t = parse_stat_threshold("task-clock>+3%");
  EXPECT_EQ(t.event, "task-clock");
  EXPECT_TRUE(t.increase);
  EXPECT_EQ(t.percent, 3.0);
  auto d = parse_stat_threshold("instructions<-2.5%");
  EXPECT_FALSE(d.increase);
  EXPECT_EQ(d.percent, -2.5);
  for (const char* bad : {"task-clock", "task-clock>3", ">+3%", "task-clock>abc%", "x>-3%"}) {
    EXPECT_THROW(parse_stat_threshold(bad), std::invalid_argument) << bad;
  }
}

TEST(StatDiffTest, DifferentEventsAndBadFiles) {
  StatFile clocks = parse_stat_file(stat_document({{"task-clock", {1, 2}}}, {1e6, 1e6}), "a.json");
  StatFile faults = parse_stat_file(stat_document({{"page-faults", {1, 2}}}, {1e6, 1e6}), "b.json");
  try {
    diff_stat_files(clocks, faults);
    FAIL() << "no error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("count different events (a.json: task-clock, elapsed; b.json: page-faults, "
                        "elapsed)"),
              std::string::npos)
        << error.what();
  }
  StatDiffOptions options;
  options.thresholds = {parse_stat_threshold("cycles>+1%")};
  EXPECT_THROW(diff_stat_files(clocks, clocks, options), std::runtime_error);
  EXPECT_THROW(parse_stat_file("not json", "x.json"), std::runtime_error);
  try {
    parse_stat_file(R"({"format":"perfscope-profile","version":1})", "p.json");
    FAIL() << "no error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("not perfscope-stat"), std::string::npos);
  }
  EXPECT_THROW(parse_stat_file(R"({"schema":"perfscope-stat","version":2,"events":[]})", "v.json"),
               std::runtime_error);
}

TEST(StatDiffTest, FilesWithoutPerRepeatValuesUseTheirMeanAndSpread) {
  std::string text =
      R"({"schema":"perfscope-stat","version":1,"target":"'x'","runs":10,"elapsed_ns":1e9,
          "elapsed_stddev_ns":1e7,"events":[{"name":"task-clock","supported":true,
          "status":"counted","value":50.0,"unit":"msec","stddev":0.5}]})";
  StatFile file = parse_stat_file(text, "old.json");
  EXPECT_EQ(file.events[0].summary.runs, 10u);
  EXPECT_EQ(file.events[0].summary.mean, 50.0);
  EXPECT_EQ(file.events[0].summary.stddev, 0.5);
  EXPECT_EQ(file.events[1].summary.mean, 1000.0);
  EXPECT_EQ(file.events[1].summary.stddev, 10.0);
}

TEST(StatDiffTest, InputKinds) {
  std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, const std::string& content) {
    std::string path = dir + "/perfscope_diff_kind_" + name;
    std::ofstream(path) << content;
    return path;
  };
  EXPECT_EQ(diff_input_kind(write("data", std::string("PERFILE2") + std::string(100, '\0'))),
            DiffInputKind::perf_data);
  EXPECT_EQ(diff_input_kind(write("stat", "{\"schema\": \"perfscope-stat\"}")),
            DiffInputKind::stat_json);
  EXPECT_EQ(diff_input_kind(write("profile", "{\"format\":\"perfscope-profile\"}")),
            DiffInputKind::profile_json);
  EXPECT_EQ(diff_input_kind(write("text", "hello")), DiffInputKind::other);
  try {
    diff_input_kind(dir + "/perfscope_diff_kind_missing");
    FAIL() << "no error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("No such file"), std::string::npos) << error.what();
  }
}

}  // namespace
