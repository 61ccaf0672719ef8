// perf's build-id cache on perfscope (issue #45): buildid-cache adds, lists, removes and purges in
// perf's ~/.debug layout, so that each tool reads what the other cached; a report of a binary
// that is gone names its functions from the cache, perf's and perfscope's alike.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string workload = PERFSCOPE_KNOWN_ANSWER_FP_PATH;
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;

class BuildidCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
    home_ = dir_.path() + "/home";
    std::filesystem::create_directories(home_);
  }
  // TOOL ARGS with HOME at the test's directory: its ~/.debug is the cache.
  pt::CommandResult run(const std::string& tool, const std::vector<std::string>& arguments) {
    std::vector<std::string> argv{"env", "HOME=" + home_,
                                  "PERF_CONFIG=", tool == "perf" ? perf_path : PERFSCOPE_CLI_PATH};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    auto result = pt::run_command_in(dir_.path(), argv);
    if (tool != "perf") pt::expect_no_crash(result);
    return result;
  }
  std::string copy(const std::string& from, const std::string& name) {
    std::string to = dir_.path() + "/" + name;
    std::filesystem::copy_file(from, to);
    return to;
  }
  pt::TempDir dir_;
  std::string home_;
};

TEST_F(BuildidCacheTest, EachToolReadsWhatTheOtherCached) {
  std::string ours = copy(workload, "by_perfscope");
  std::string perfs = copy(work_helper, "by_perf");
  auto added = run("perfscope", {"buildid-cache", "-v", "--add", ours});
  ASSERT_EQ(added.exit_status, 0) << added.err;
  EXPECT_NE(added.err.find("Adding "), std::string::npos) << added.err;
  ASSERT_EQ(run("perf", {"buildid-cache", "--add", perfs}).exit_status, 0);
  auto perf_list = run("perf", {"buildid-cache", "--list"});
  auto our_list = run("perfscope", {"buildid-cache", "--list"});
  EXPECT_EQ(our_list.out, perf_list.out);
  EXPECT_NE(our_list.out.find(" " + ours + "\n"), std::string::npos) << our_list.out;
  EXPECT_NE(our_list.out.find(" " + perfs + "\n"), std::string::npos) << our_list.out;
  // Adding again changes nothing.
  EXPECT_EQ(run("perfscope", {"buildid-cache", "--add", perfs}).exit_status, 0);
  EXPECT_EQ(run("perfscope", {"buildid-cache", "-l"}).out, perf_list.out);

  // Recorded, then the binary is gone: both reports name its functions from the cache.
  for (const std::string recorder : {"perf", "perfscope"}) {
    std::string data = dir_.path() + "/" + recorder + ".data";
    std::string binary = copy(ours, recorder + "_run");
    ASSERT_EQ(run("perfscope", {"buildid-cache", "--add", binary}).exit_status, 0);
    auto recorded = run(recorder, {"record", "-q", "-o", data, "--", binary, "20"});
    ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
    std::filesystem::remove(binary);
    for (const std::string reporter : {"perf", "perfscope"}) {
      auto report = run(reporter, {"report", "--stdio", "-i", data, "--sort", "sym"});
      EXPECT_EQ(report.exit_status, 0) << report.err;
      EXPECT_NE(report.out.find("[.] leaf_60"), std::string::npos)
          << reporter << " of " << recorder << "'s recording:\n"
          << report.out.substr(0, 1500);
    }
    // Nothing the recording's files need is missing from the cache now but ld.so and libc's
    // builds, which perf -M names alike.
    EXPECT_EQ(run("perfscope", {"buildid-cache", "-M", data}).out,
              run("perf", {"buildid-cache", "-M", data}).out);
  }
}

TEST_F(BuildidCacheTest, RemovePurgeAndPurgeAllAsPerfSeesThem) {
  std::string a = copy(workload, "a"), b = copy(work_helper, "b");
  ASSERT_EQ(run("perfscope", {"buildid-cache", "--add", a + "," + b}).exit_status, 0);
  EXPECT_EQ(run("perfscope", {"buildid-cache", "-v", "--remove", b}).exit_status, 0);
  auto listed = run("perf", {"buildid-cache", "--list"});
  EXPECT_NE(listed.out.find(a), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find(b), std::string::npos) << listed.out;
  // --purge takes a path whose file may be gone.
  std::filesystem::remove(a);
  auto purged = run("perfscope", {"buildid-cache", "-v", "--purge", a});
  EXPECT_EQ(purged.exit_status, 0) << purged.err;
  EXPECT_NE(purged.err.find("1 builds removed"), std::string::npos) << purged.err;
  EXPECT_EQ(run("perf", {"buildid-cache", "--list"}).out, "");
  ASSERT_EQ(run("perf", {"buildid-cache", "--add", b}).exit_status, 0);
  EXPECT_EQ(run("perfscope", {"buildid-cache", "--purge-all"}).exit_status, 0);
  EXPECT_EQ(run("perf", {"buildid-cache", "--list"}).out, "");
  // Nothing is left of the entries, links and their directories.
  EXPECT_TRUE(std::filesystem::is_empty(home_ + "/.debug"));
}

TEST_F(BuildidCacheTest, WhatCannotBeCachedSaysWhy) {
  std::string text = dir_.path() + "/notes.txt";
  pt::run_command({"sh", "-c", "echo hello > " + text});
  auto bad = run("perfscope", {"buildid-cache", "--add", text});
  EXPECT_EQ(bad.exit_status, 1);
  EXPECT_NE(bad.err.find("no build id"), std::string::npos) << bad.err;
  auto kcore = run("perfscope", {"buildid-cache", "--kcore", "/proc/kcore"});
  EXPECT_NE(kcore.exit_status, 0);
  EXPECT_NE(kcore.err.find("kallsyms"), std::string::npos) << kcore.err;
  auto nothing = run("perfscope", {"buildid-cache"});
  EXPECT_NE(nothing.exit_status, 0);
  EXPECT_NE(nothing.err.find("--add"), std::string::npos) << nothing.err;
}

}  // namespace
