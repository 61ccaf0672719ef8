// Profile diffs on hand-made profiles: rows matched by DSO file name and symbol name across a
// "rebuilt" binary (other directory, build id and addresses), shares compared when the sampling
// periods differ, the explanations of rows on one side only, inclusive deltas, bad input, and the
// differential exports (two-column folded, flame graph).
#include "perfscope/analysis/diff/profile_diff.hpp"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/analysis/diff/diff_exports.hpp"

namespace {

using namespace perfscope;

struct Stack {
  std::vector<std::string> frames;  // outermost first; "lib.so:name" for another DSO
  std::uint64_t samples;
};

// One thread "app" of binary `path`; each function at its own address from `base_address`;
// every sample weighs `period`.
Profile make_profile(const std::string& path, const std::string& build_id,
                     std::uint64_t base_address, std::uint64_t period,
                     const std::vector<Stack>& stacks, const std::string& event = "cpu-clock",
                     bool callchains = true) {
  Profile p;
  p.dsos.push_back({path, build_id, false});
  std::map<std::string, std::uint32_t> functions, nodes;
  auto function_of = [&](const std::string& spec) {
    auto found = functions.find(spec);
    if (found != functions.end()) return found->second;
    std::uint32_t dso = 0;
    std::string name = spec;
    if (auto colon = spec.find(':'); colon != std::string::npos) {
      p.dsos.push_back({"/usr/lib/" + spec.substr(0, colon), "", false});
      dso = static_cast<std::uint32_t>(p.dsos.size() - 1);
      name = spec.substr(colon + 1);
    }
    auto index = static_cast<std::uint32_t>(p.functions.size());
    std::uint64_t start = base_address + 0x100 * index;
    p.functions.push_back({name, dso, true, start});
    p.frames.push_back({index, start + 8, start + 8, "", 0, false, false});
    functions[spec] = index;
    return index;
  };
  p.threads = {{100, 100, "app"}};
  p.events = {{event, 0, 0, callchains, 0}};
  for (const auto& stack : stacks) {
    std::uint32_t parent = no_index;
    std::string path_key;
    for (const auto& frame : stack.frames) {
      std::uint32_t function = function_of(frame);
      path_key += frame + ";";
      auto [it, added] = nodes.try_emplace(path_key, static_cast<std::uint32_t>(p.stacks.size()));
      if (added) p.stacks.push_back({parent, function});
      parent = it->second;
    }
    p.sample_groups.push_back({parent, 0, 0, no_index, stack.samples, stack.samples * period});
    p.events[0].samples += stack.samples;
    p.events[0].period += stack.samples * period;
  }
  p.events[0].period_read = p.events[0].period;
  p.summary.samples = p.summary.samples_read = p.events[0].samples;
  return p;
}

// The known-answer shares: leaf_60, leaf_30, leaf_10 each under its work_ function.
Profile shares(const std::string& path, const std::string& build_id, std::uint64_t address,
               std::uint64_t period, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return make_profile(path, build_id, address, period,
                      {{{"main", "work_60", "leaf_60"}, a},
                       {{"main", "work_30", "leaf_30"}, b},
                       {{"main", "work_10", "leaf_10"}, c}});
}

const ProfileDiffRow* find_row(const ProfileDiffEvent& event, const std::string& symbol) {
  for (const auto& row : event.rows) {
    if (row.keys.back() == symbol) return &row;
  }
  return nullptr;
}

TEST(ProfileDiffTest, MatchesARebuiltBinaryByNameAndComparesShares) {
  // NEW: the binary rebuilt elsewhere (other build id and addresses), sampled 4x less often
  // with 4x the period.
  Profile base = shares("/build/a/known_answer", "aaaa", 0x1000, 1000, 600, 300, 100);
  Profile current = shares("/build/b/known_answer", "bbbb", 0x5000, 4000, 75, 150, 25);
  ProfileDiff diff = diff_profiles(base, current);
  ASSERT_EQ(diff.events.size(), 1u);
  const ProfileDiffEvent& event = diff.events[0];
  ASSERT_EQ(event.rows.size(), 3u);  // matched: nothing appeared or disappeared
  const ProfileDiffRow* leaf_60 = find_row(event, "[.] leaf_60");
  const ProfileDiffRow* leaf_30 = find_row(event, "[.] leaf_30");
  const ProfileDiffRow* leaf_10 = find_row(event, "[.] leaf_10");
  ASSERT_TRUE(leaf_60 && leaf_30 && leaf_10);
  EXPECT_EQ(leaf_60->keys[0], "known_answer");
  EXPECT_NEAR(leaf_60->base.self_percent, 60.0, 1e-9);
  EXPECT_NEAR(leaf_60->current.self_percent, 30.0, 1e-9);
  EXPECT_NEAR(leaf_60->delta, -30.0, 1e-9);
  EXPECT_NEAR(*leaf_60->ratio, 0.5, 1e-12);
  EXPECT_NEAR(leaf_30->delta, 30.0, 1e-9);
  EXPECT_NEAR(*leaf_30->ratio, 2.0, 1e-12);
  EXPECT_NEAR(leaf_10->delta, 0.0, 1e-9);
  EXPECT_EQ(leaf_60->status, ProfileDiffStatus::changed);
  // Largest change first.
  EXPECT_NEAR(std::fabs(event.rows[0].delta), 30.0, 1e-9);
  EXPECT_EQ(event.rows[2].keys.back(), "[.] leaf_10");
  EXPECT_NE(event.rate_note.find("BASE took a sample every 1 us and NEW every 4 us"),
            std::string::npos)
      << event.rate_note;

  std::string text = render_profile_diff(diff, "base.data", "new.data");
  EXPECT_NE(text.find("# Compared by share"), std::string::npos) << text;
  EXPECT_NE(text.find("# Baseline     New    Delta  Ratio   p-value  Shared Object  Symbol"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    60.00%  30.00%  -30.00%  0.500  1.7e-17*  known_answer   [.] leaf_60\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    30.00%  60.00%  +30.00%  2.000  9.7e-19*  known_answer   [.] leaf_30\n"),
            std::string::npos)
      << text;

  auto json = nlohmann::json::parse(profile_diff_json(diff, "base.data", "new.data"));
  EXPECT_EQ(json["schema"], "perfscope-profile-diff");
  EXPECT_EQ(json["version"], 1);
  EXPECT_EQ(json["compared_by"], "share");
  EXPECT_EQ(json["sort"], nlohmann::json({"dso", "sym"}));
  const auto& row = json["events"][0]["rows"][0];
  EXPECT_EQ(row["status"], "changed");
  EXPECT_NEAR(std::fabs(row["delta"].get<double>()), 30.0, 1e-9);
  EXPECT_EQ(row["keys"]["dso"], "known_answer");
  EXPECT_TRUE(row["significant"].get<bool>());
  EXPECT_LT(row["p_value"].get<double>(), 1e-16);
}

TEST(ProfileDiffTest, SignificanceSeparatesChangesFromSamplingNoise) {
  // 1000 samples a side. Two-proportion z-test p-values (computed apart, in Python):
  // 600 -> 300 of 1000 vs 250: 1.70e-17; 100 -> 100: 1.
  Profile base = shares("/bin/app", "", 0x1000, 1000, 600, 300, 100);
  {
    ProfileDiff diff = diff_profiles(base, shares("/bin/app", "", 0x1000, 1000, 75, 150, 25));
    const ProfileDiffRow* leaf_60 = find_row(diff.events[0], "[.] leaf_60");
    const ProfileDiffRow* leaf_10 = find_row(diff.events[0], "[.] leaf_10");
    ASSERT_TRUE(leaf_60 && leaf_10);
    EXPECT_NEAR(leaf_60->p_value / 1.7012688584627154e-17, 1.0, 1e-6);
    EXPECT_TRUE(leaf_60->significant);
    EXPECT_DOUBLE_EQ(leaf_10->p_value, 1.0);
    EXPECT_FALSE(leaf_10->significant);
  }
  {
    // One point of 1000 samples: well within the noise (p 0.647).
    ProfileDiff diff = diff_profiles(base, shares("/bin/app", "", 0x1000, 1000, 610, 290, 100));
    const ProfileDiffRow* leaf_60 = find_row(diff.events[0], "[.] leaf_60");
    ASSERT_TRUE(leaf_60);
    EXPECT_NEAR(leaf_60->p_value, 0.6473740225689223, 1e-9);
    EXPECT_FALSE(leaf_60->significant);
  }
  {
    // 4.6 points: p 0.034 and 0.022 alone, but three rows each had the chance: not beyond the
    // table's noise (0.034 x 3 = 0.10). 5.6 points: 0.0096 and 0.0049, x 3 below 0.05.
    ProfileDiff near = diff_profiles(base, shares("/bin/app", "", 0x1000, 1000, 646, 254, 100));
    for (const char* leaf : {"[.] leaf_60", "[.] leaf_30"}) {
      const ProfileDiffRow* row = find_row(near.events[0], leaf);
      ASSERT_TRUE(row);
      EXPECT_LT(row->p_value, 0.05) << leaf;
      EXPECT_FALSE(row->significant) << leaf;
    }
    EXPECT_NEAR(find_row(near.events[0], "[.] leaf_60")->p_value, 0.03380379380648108, 1e-9);
    ProfileDiff far = diff_profiles(base, shares("/bin/app", "", 0x1000, 1000, 656, 244, 100));
    EXPECT_NEAR(find_row(far.events[0], "[.] leaf_30")->p_value, 0.004893041737878923, 1e-9);
    EXPECT_TRUE(find_row(far.events[0], "[.] leaf_60")->significant);
    EXPECT_TRUE(find_row(far.events[0], "[.] leaf_30")->significant);
    EXPECT_FALSE(find_row(far.events[0], "[.] leaf_10")->significant);
  }
}

TEST(ProfileDiffTest, ExplainsRowsOnOneSideOnly) {
  Profile base = make_profile(
      "/bin/app", "", 0x1000, 1000,
      {{{"main", "old_fn"}, 500}, {{"main", "helper"}, 300}, {{"main", "steady"}, 200}});
  Profile current = make_profile("/bin/app", "", 0x1000, 1000,
                                 {{{"main", "caller_x", "new_fn"}, 400},
                                  {{"main", "helper", "callee"}, 300},
                                  {{"main", "libfoo.so:foo_work"}, 100},
                                  {{"main", "steady"}, 200}});
  ProfileDiff diff = diff_profiles(base, current);
  const ProfileDiffEvent& event = diff.events[0];
  const ProfileDiffRow* old_fn = find_row(event, "[.] old_fn");
  const ProfileDiffRow* new_fn = find_row(event, "[.] new_fn");
  const ProfileDiffRow* helper = find_row(event, "[.] helper");
  const ProfileDiffRow* foo = find_row(event, "[.] foo_work");
  ASSERT_TRUE(old_fn && new_fn && helper && foo);
  EXPECT_EQ(old_fn->status, ProfileDiffStatus::disappeared);
  EXPECT_NE(old_fn->explanation.find("no samples in NEW"), std::string::npos)
      << old_fn->explanation;
  EXPECT_EQ(new_fn->status, ProfileDiffStatus::appeared);
  EXPECT_NE(new_fn->explanation.find("called from caller_x (100 % of its samples)"),
            std::string::npos)
      << new_fn->explanation;
  // helper lost its own samples to a callee, but is still on the stacks.
  EXPECT_EQ(helper->status, ProfileDiffStatus::disappeared);
  EXPECT_NE(helper->explanation.find("on its stacks (30.00 % inclusive)"), std::string::npos)
      << helper->explanation;
  EXPECT_EQ(foo->status, ProfileDiffStatus::appeared);
  EXPECT_EQ(foo->keys[0], "libfoo.so");
  EXPECT_NE(foo->explanation.find("nothing in libfoo.so was sampled in BASE"), std::string::npos)
      << foo->explanation;
  std::string text = render_profile_diff(diff, "a", "b");
  EXPECT_NE(text.find("^ appeared: "), std::string::npos) << text;
  EXPECT_NE(text.find("^ disappeared: "), std::string::npos) << text;

  // A row of one sample among many: its absence may be chance, and the text says so.
  Profile rare = make_profile("/bin/app", "", 0x1000, 1000,
                              {{{"main", "steady"}, 999}, {{"main", "blip"}, 1}});
  Profile plain = make_profile("/bin/app", "", 0x1000, 1000, {{{"main", "steady"}, 1000}});
  ProfileDiff chance = diff_profiles(rare, plain);
  const ProfileDiffRow* blip = find_row(chance.events[0], "[.] blip");
  ASSERT_TRUE(blip);
  EXPECT_NE(blip->explanation.find("1 sample in BASE"), std::string::npos) << blip->explanation;
  EXPECT_NE(blip->explanation.find("may be chance"), std::string::npos);
}

TEST(ProfileDiffTest, ChildrenGiveInclusiveDeltas) {
  Profile base = shares("/bin/app", "", 0x1000, 1000, 600, 300, 100);
  Profile current = shares("/bin/app", "", 0x1000, 1000, 300, 600, 100);
  ProfileDiffOptions options;
  options.children = true;
  ProfileDiff diff = diff_profiles(base, current, options);
  const ProfileDiffEvent& event = diff.events[0];
  const ProfileDiffRow* main_row = find_row(event, "[.] main");
  const ProfileDiffRow* work_60 = find_row(event, "[.] work_60");
  ASSERT_TRUE(main_row && work_60);
  EXPECT_NEAR(main_row->base.total_percent, 100.0, 1e-9);
  EXPECT_NEAR(main_row->delta, 0.0, 1e-9);
  EXPECT_NEAR(work_60->total_delta, -30.0, 1e-9);
  EXPECT_NEAR(work_60->self_delta, 0.0, 1e-9);
  EXPECT_EQ(work_60->status, ProfileDiffStatus::changed);
  std::string text = render_profile_diff(diff, "a", "b");
  EXPECT_NE(
      text.find(
          "Base Incl  New Incl  Delta Incl  Base Self  New Self  Delta Self  Ratio   p-value"),
      std::string::npos)
      << text;

  // Without call chains there is nothing inclusive to compare.
  Profile flat = make_profile("/bin/app", "", 0x1000, 1000, {{{"main"}, 10}}, "cpu-clock", false);
  EXPECT_THROW(diff_profiles(flat, flat, options), std::runtime_error);
}

TEST(ProfileDiffTest, SortKeysAndPercentLimit) {
  Profile base = shares("/bin/app", "", 0x1000, 1000, 600, 300, 100);
  Profile current = shares("/bin/app", "", 0x1000, 1000, 300, 600, 100);
  ProfileDiffOptions options;
  options.sort = {ReportSortKey::comm};
  ProfileDiff by_comm = diff_profiles(base, current, options);
  ASSERT_EQ(by_comm.events[0].rows.size(), 1u);
  EXPECT_EQ(by_comm.events[0].rows[0].keys, std::vector<std::string>{"app"});
  EXPECT_NEAR(by_comm.events[0].rows[0].delta, 0.0, 1e-9);
  options.sort = {ReportSortKey::sym};
  options.percent_limit = 20;
  ProfileDiff limited = diff_profiles(base, current, options);
  EXPECT_EQ(limited.events[0].rows.size(), 2u);  // leaf_10 is below 20 % on both sides
}

TEST(ProfileDiffTest, DifferentEventsAreAnError) {
  Profile base = make_profile("/bin/app", "", 0x1000, 1000, {{{"main"}, 10}}, "cpu-clock");
  Profile current = make_profile("/bin/app", "", 0x1000, 1000, {{{"main"}, 10}}, "task-clock");
  try {
    diff_profiles(base, current);
    FAIL() << "no error";
  } catch (const std::runtime_error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("no sampled event in common (BASE: cpu-clock; NEW: task-clock)"),
              std::string::npos)
        << message;
  }
}

TEST(ProfileDiffTest, DifferentialFoldedAndFlameGraph) {
  Profile base = shares("/build/a/known_answer", "aaaa", 0x1000, 1000, 600, 300, 100);
  Profile current = shares("/build/b/known_answer", "bbbb", 0x5000, 4000, 75, 150, 25);
  std::ostringstream folded;
  write_diff_folded(base, current, folded);
  EXPECT_EQ(folded.str(),
            "app;main;work_10;leaf_10 100 25\n"
            "app;main;work_30;leaf_30 300 150\n"
            "app;main;work_60;leaf_60 600 75\n");

  // A stack only in BASE: a line with NEW's count 0, and no frame of it in the graph.
  Profile gone = make_profile("/bin/app", "", 0x1000, 1000,
                              {{{"main", "work_60", "leaf_60"}, 50}, {{"main", "old"}, 50}});
  Profile kept =
      make_profile("/bin/app", "", 0x1000, 1000, {{{"main", "work_60", "leaf_60"}, 100}});
  std::ostringstream two;
  write_diff_folded(gone, kept, two);
  EXPECT_NE(two.str().find("app;main;old 50 0\n"), std::string::npos) << two.str();

  std::ostringstream svg;
  write_diff_flame_graph_svg(base, current, svg, "base.data", "new.data");
  std::string page = svg.str();
  EXPECT_NE(page.find("Differential Flame Graph"), std::string::npos);
  EXPECT_NE(page.find("id=\"search\""), std::string::npos);  // the report's page: search, zoom
  EXPECT_NE(page.find("<script"), std::string::npos);
  // leaf_30 grew by 30 points (the largest change: full red), leaf_60 shrank by 30 (full blue);
  // leaf_10 did not change (white-ish).
  EXPECT_NE(page.find("<title>leaf_30 (150 samples, 60.00 %; BASE 30.00 %, +30.00 pts)</title>"
                      "<rect"),
            std::string::npos)
      << page;
  auto fill_of = [&](const std::string& name) {
    auto at = page.find("<title>" + name + " (");
    auto fill = page.find("fill=\"", at);
    return page.substr(fill + 6, page.find('"', fill + 6) - fill - 6);
  };
  EXPECT_EQ(fill_of("leaf_30"), "rgb(255,35,35)");
  EXPECT_EQ(fill_of("leaf_60"), "rgb(35,35,255)");
  EXPECT_EQ(fill_of("leaf_10"), "rgb(255,235,235)");
  std::ostringstream gone_svg;
  write_diff_flame_graph_svg(gone, kept, gone_svg, "a", "b");
  EXPECT_EQ(gone_svg.str().find("<title>old"), std::string::npos);
  EXPECT_NE(gone_svg.str().find("50.00 % of BASE is on stacks NEW lacks"), std::string::npos);
}

}  // namespace
