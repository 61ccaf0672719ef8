// The profile builder and the report table on recordings with a known answer: the known_answer
// workload spends 60 %, 30 % and 10 % of its time in leaf_60, leaf_30 and leaf_10, each called
// only from work_60, work_30 and work_10. Recorded through the CLI with frame-pointer call chains
// (a frame-pointer build) and DWARF stacks (a build without frame pointers).
#include "perfscope/analysis/profile/profile_builder.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/report_table.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
using namespace perfscope;

const std::string known_answer_fp = PERFSCOPE_KNOWN_ANSWER_FP_PATH;
const std::string known_answer_nofp = PERFSCOPE_KNOWN_ANSWER_NOFP_PATH;
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("perfscope_profile_" + name + "_" + std::to_string(::getpid())))
      .string();
}

// Records `command` with the CLI at 4 kHz of cpu-clock plus `extra` options.
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

// Self share of each function by name, in percent of the event's period.
std::map<std::string, double> self_shares(const Profile& profile) {
  ReportOptions options;
  options.sort = {ReportSortKey::sym};
  options.children = false;
  ReportTable table = build_report_table(profile, 0, options);
  std::map<std::string, double> shares;
  for (const auto& row : table.rows) {
    if (row.function == no_index) continue;
    shares[profile.functions[row.function].name] += table.percent(row.self_period);
  }
  return shares;
}

void expect_known_shares(const Profile& profile) {
  ASSERT_GT(profile.summary.samples, 1000u);
  auto shares = self_shares(profile);
  EXPECT_NEAR(shares["leaf_60"], 60.0, 5.0);
  EXPECT_NEAR(shares["leaf_30"], 30.0, 5.0);
  EXPECT_NEAR(shares["leaf_10"], 10.0, 5.0);
}

// The share of each leaf's samples whose stack reads leaf_N <- work_N <- main.
void expect_known_callers(const Profile& profile) {
  std::map<std::string, std::uint64_t> leaf_samples, right_callers;
  for (const ProfileSample& sample : profile.samples) {
    std::vector<std::string> names;
    profile.for_each_frame(sample.stack, [&](const ProfileFrame& frame) {
      names.push_back(profile.functions[frame.function].name);
    });
    if (names.empty() || !names[0].starts_with("leaf_")) continue;
    std::string share = names[0].substr(5);
    ++leaf_samples[share];
    if (names.size() >= 3 && names[1] == "work_" + share && names[2] == "main") {
      ++right_callers[share];
    }
  }
  for (std::string share : {"60", "30", "10"}) {
    ASSERT_GT(leaf_samples[share], 0u) << "leaf_" << share;
    // Samples on a leaf's first instructions (before its frame exists) may miss a caller.
    EXPECT_GE(static_cast<double>(right_callers[share]),
              0.9 * static_cast<double>(leaf_samples[share]))
        << "leaf_" << share << ": " << right_callers[share] << " of " << leaf_samples[share]
        << " stacks go through work_" << share << " and main";
  }
  // Inclusive shares: work_N holds its leaf's samples.
  ReportOptions options;
  options.sort = {ReportSortKey::sym};
  options.children = true;
  ReportTable table = build_report_table(profile, 0, options);
  std::map<std::string, double> inclusive;
  for (const auto& row : table.rows) {
    if (row.function != no_index) {
      inclusive[profile.functions[row.function].name] = table.percent(row.total_period);
    }
  }
  EXPECT_NEAR(inclusive["work_60"], 60.0, 5.0);
  EXPECT_NEAR(inclusive["work_30"], 30.0, 5.0);
  EXPECT_NEAR(inclusive["work_10"], 10.0, 5.0);
  EXPECT_GT(inclusive["main"], 95.0);
}

TEST(ProfileBuilderTest, FramePointerChainsGiveTheKnownSharesAndCallers) {
  std::string path = record("fp", {"-g"}, {known_answer_fp, "300"});
  Profile profile = build_profile(PerfDataReader::open(path));
  ASSERT_EQ(profile.events.size(), 1u);
  EXPECT_EQ(profile.events[0].name, "cpu-clock");
  EXPECT_TRUE(profile.events[0].has_callchains);
  EXPECT_FALSE(profile.summary.dwarf_unwinding);
  expect_known_shares(profile);
  expect_known_callers(profile);
  // Every function of the workload names its file, with the build id the linker wrote.
  for (const auto& function : profile.functions) {
    if (!function.name.starts_with("leaf_")) continue;
    ASSERT_NE(function.dso, no_index);
    EXPECT_EQ(std::filesystem::path(profile.dsos[function.dso].path).filename(),
              std::filesystem::path(known_answer_fp).filename());
    EXPECT_EQ(profile.dsos[function.dso].build_id.size(), 40u);
    EXPECT_TRUE(function.resolved);
  }
  std::filesystem::remove(path);
}

TEST(ProfileBuilderTest, DwarfStacksGiveTheKnownSharesAndCallersWithoutFramePointers) {
  // --keep-stacks: the stack copies in the file, unwound here.
  std::string path =
      record("dwarf", {"--call-graph", "dwarf", "--keep-stacks"}, {known_answer_nofp, "300"});
  Profile profile = build_profile(PerfDataReader::open(path));
  EXPECT_TRUE(profile.summary.dwarf_unwinding);
  EXPECT_TRUE(profile.events[0].has_callchains);
  expect_known_shares(profile);
  expect_known_callers(profile);
  const UnwindStatistics& unwinding = profile.summary.unwinding;
  EXPECT_GT(unwinding.samples, 1000u);
  EXPECT_GE(static_cast<double>(unwinding.complete), 0.9 * static_cast<double>(unwinding.samples))
      << unwinding.complete << " of " << unwinding.samples << " stacks unwound completely";
  std::filesystem::remove(path);
}

// Without frame pointers, -g chains are wrong above the leaf, but the leaf (the sampled ip) is
// right: self shares hold.
TEST(ProfileBuilderTest, SelfSharesHoldWithoutFramePointers) {
  std::string path = record("nofp", {"-g"}, {known_answer_nofp, "300"});
  Profile profile = build_profile(PerfDataReader::open(path));
  expect_known_shares(profile);
  std::filesystem::remove(path);
}

TEST(ProfileBuilderTest, FiltersKeepOnlyMatchingSamples) {
  std::string path = record("filter", {"-g"}, {known_answer_fp, "100"});
  PerfDataReader reader = PerfDataReader::open(path);
  Profile all = build_profile(reader);
  auto shares = self_shares(all);

  ProfileOptions options;
  options.filter.symbols = {"leaf_30"};
  Profile only = build_profile(reader, options);
  EXPECT_EQ(only.summary.samples_read, all.summary.samples_read);
  ASSERT_GT(only.summary.samples, 0u);
  for (const ProfileSample& sample : only.samples) {
    EXPECT_EQ(only.functions[only.frames[only.stacks[sample.stack].frame].function].name,
              "leaf_30");
  }
  EXPECT_NEAR(
      100.0 * static_cast<double>(only.summary.samples) / static_cast<double>(all.summary.samples),
      shares["leaf_30"], 0.01);

  options = {};
  options.filter.dsos = {std::filesystem::path(known_answer_fp).filename().string()};
  Profile in_binary = build_profile(reader, options);
  EXPECT_GT(in_binary.summary.samples, all.summary.samples * 9 / 10);

  options = {};
  options.filter.comms = {"no-such-command"};
  EXPECT_EQ(build_profile(reader, options).summary.samples, 0u);
  options = {};
  options.filter.pids = {all.threads.at(0).pid};
  EXPECT_EQ(build_profile(reader, options).summary.samples, all.summary.samples);

  // Without call chains every stack is its leaf alone.
  options = {};
  options.callchains = false;
  Profile flat = build_profile(reader, options);
  for (const ProfileSample& sample : flat.samples) {
    EXPECT_EQ(flat.stacks[sample.stack].parent, no_index);
  }
  std::filesystem::remove(path);
}

// Stacks are shared by prefix: a node's (parent, frame) pair is unique.
TEST(ProfileBuilderTest, StacksAndFramesAreInterned) {
  std::string path = record("intern", {"-g"}, {known_answer_fp, "100"});
  Profile profile = build_profile(PerfDataReader::open(path));
  std::map<std::pair<std::uint32_t, std::uint32_t>, int> nodes;
  for (const auto& stack : profile.stacks) ++nodes[{stack.parent, stack.frame}];
  for (const auto& [node, count] : nodes) EXPECT_EQ(count, 1);
  std::map<std::pair<std::uint64_t, std::uint32_t>, int> frames;
  for (const auto& frame : profile.frames) ++frames[{frame.address, frame.function}];
  for (const auto& [frame, count] : frames) EXPECT_EQ(count, 1);
  EXPECT_LT(profile.stacks.size(), profile.samples.size() / 4);
  std::filesystem::remove(path);
}

// System calls: kernel frames resolve through kallsyms, below the user frames that made them.
TEST(ProfileBuilderTest, KernelFramesResolve) {
  if (!pt::running_as_root()) {
    GTEST_SKIP() << "kallsyms shows kernel addresses to root only (kptr_restrict)";
  }
  std::string path = record("kernel", {"-g"}, {work_helper, "getpid", "3000000"});
  Profile profile = build_profile(PerfDataReader::open(path));
  std::uint64_t kernel_samples = 0, named = 0, with_user_callers = 0;
  for (const ProfileSample& sample : profile.samples) {
    const ProfileFrame& leaf = profile.frames[profile.stacks[sample.stack].frame];
    if (!leaf.kernel) continue;
    ++kernel_samples;
    const ProfileFunction& function = profile.functions[leaf.function];
    if (function.resolved && !function.name.starts_with("0x")) ++named;
    bool user_caller = false;
    profile.for_each_frame(sample.stack, [&](const ProfileFrame& frame) {
      user_caller = user_caller || !frame.kernel;
    });
    if (user_caller) ++with_user_callers;
  }
  ASSERT_GT(kernel_samples, 20u);
  EXPECT_EQ(named, kernel_samples);
  EXPECT_GE(with_user_callers, kernel_samples * 9 / 10);
  ReportOptions options;
  options.children = false;
  ReportTable table = build_report_table(profile, 0, options);
  bool kernel_row = false;
  for (const auto& row : table.rows) {
    if (row.kernel && row.keys[1] == "[kernel.kallsyms]" && row.keys[2].starts_with("[k] ")) {
      kernel_row = true;
    }
  }
  EXPECT_TRUE(kernel_row);
  std::filesystem::remove(path);
}

TEST(ReportTableTest, SortKeysParseAndUnknownOnesAreNamed) {
  auto keys = parse_report_sort_keys("pid,dso,sym,cpu,srcline");
  EXPECT_EQ(keys,
            (std::vector<ReportSortKey>{ReportSortKey::pid, ReportSortKey::dso, ReportSortKey::sym,
                                        ReportSortKey::cpu, ReportSortKey::srcline}));
  // perf's spellings: symbol is sym; overhead, period and sample order without grouping.
  EXPECT_EQ(parse_report_sort_keys("comm,symbol,overhead"),
            (std::vector<ReportSortKey>{ReportSortKey::comm, ReportSortKey::sym}));
  EXPECT_EQ(parse_report_sort_keys("srcfile,parent"),
            (std::vector<ReportSortKey>{ReportSortKey::srcfile, ReportSortKey::parent}));
  EXPECT_TRUE(parse_report_sort_keys("sample").empty());
  EXPECT_TRUE(report_orders_by_samples("sample,period,sym"));
  EXPECT_FALSE(report_orders_by_samples("period,sample,sym"));
  try {
    parse_report_sort_keys("comm,symbl");
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("'symbl'"), std::string::npos) << error.what();
  }
}

// The header's DWARF completeness is rounded down: "100.0 %" only when every stack is complete.
TEST(ReportTableTest, DwarfCompletenessIsNeverRoundedUpToAWholeHundred) {
  auto header = [](std::uint64_t complete, std::uint64_t samples) {
    perfscope::Profile profile;
    profile.events = {{"cpu-clock", 0, 0, false, 0}};
    profile.summary.dwarf_unwinding = true;
    profile.summary.unwinding.samples = samples;
    profile.summary.unwinding.complete = complete;
    std::string text = perfscope::render_report(profile, {});
    auto at = text.find("# DWARF unwinding: ");
    return at == std::string::npos ? text : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_EQ(header(35636, 35637), "# DWARF unwinding: 35636 of 35637 stacks complete (99.9 %)");
  EXPECT_EQ(header(35637, 35637), "# DWARF unwinding: 35637 of 35637 stacks complete (100.0 %)");
  EXPECT_EQ(header(2, 3), "# DWARF unwinding: 2 of 3 stacks complete (66.6 %)");
  // No stack unwound here (every one unwound while recording): no such line.
  EXPECT_EQ(header(0, 0).find("# DWARF unwinding"), std::string::npos);
}

// Where the stacks came from and how many reach a thread's first frame, rounded down too.
TEST(ReportTableTest, StacksLineSaysTheirSourcesAndCompleteness) {
  perfscope::Profile profile;
  profile.events = {{"cpu-clock", 0, 0, true, 0}};
  profile.summary.stack_sources.frame_pointers = 3;
  profile.summary.stack_sources.dwarf_while_recording = 1999;
  profile.summary.stacks_walked = 2002;
  profile.summary.stacks_reaching_start = 2001;
  std::string text = perfscope::render_report(profile, {});
  EXPECT_NE(text.find("# Stacks: frame pointers (3 samples), DWARF unwound while recording (1999 "
                      "samples); 2001 of 2002 reach a thread's first frame (99.9 %)\n"),
            std::string::npos)
      << text;
  profile.summary.stacks_walked = 0;
  EXPECT_EQ(perfscope::render_report(profile, {}).find("# Stacks"), std::string::npos);
}

}  // namespace
