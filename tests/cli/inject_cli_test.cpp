// perfscope inject beyond --unwind (issue #44): a recording copied as it is (from a pipe into a
// file too, perf inject's defaults: standard input and output), and -b/--build-ids and
// --buildid-all, which make the BUILD_ID section anew from the files the samples hit or every
// mapped file. perf reads each output, and lists the same build ids.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string workload = PERFSCOPE_KNOWN_ANSWER_FP_PATH;

bool have_perf() { return ::access(perf_path.c_str(), X_OK) == 0; }

std::set<std::string> listed_files(const std::vector<std::string>& lister) {
  auto files = pt::build_id_list_files(lister);
  return {files.begin(), files.end()};
}

std::set<std::string> build_id_files(const std::string& recording) {
  auto ours = listed_files({PERFSCOPE_CLI_PATH, "buildid-list", "-i", recording});
  if (have_perf()) {
    EXPECT_EQ(listed_files({perf_path, "buildid-list", "-i", recording}), ours);
  }
  return ours;
}

TEST(Inject, CopiesAndMakesTheBuildIdSectionAnew) {
  pt::TempDir dir;
  const std::string helper = std::filesystem::canonical(work_helper).string();
  // Kernel samples only: the helper's own files are mapped, never hit.
  std::string recorded = dir.path() + "/kernel.data";
  auto record = pt::run_perfscope({"record", "-q", "-e", "cpu-clock", "--all-kernel", "-B", "-o",
                                   recorded, "--", work_helper, "getpid", "20000"});
  ASSERT_EQ(record.exit_status, 0) << record.err;
  EXPECT_TRUE(build_id_files(recorded).empty());  // -B: none written

  std::string copy = dir.path() + "/copy.data";
  auto copied = pt::run_perfscope({"inject", "-i", recorded, "-o", copy});
  ASSERT_EQ(copied.exit_status, 0) << copied.err;
  auto script = [](const std::string& file) {
    auto out = pt::run_perfscope({"script", "-F", "tid,time,ip,sym", "-i", file});
    EXPECT_EQ(out.exit_status, 0) << out.err;
    return out.out;
  };
  EXPECT_EQ(script(copy), script(recorded));
  EXPECT_TRUE(build_id_files(copy).empty());

  std::string hit = dir.path() + "/hit.data";
  auto hits = pt::run_perfscope({"inject", "-b", "-i", recorded, "-o", hit});
  ASSERT_EQ(hits.exit_status, 0) << hits.err;
  std::set<std::string> hit_files = build_id_files(hit);
  EXPECT_EQ(hit_files.count(helper), 0u);
  EXPECT_LE(hit_files.size(), 1u);  // the kernel's, where /sys/kernel/notes is readable

  std::string every = dir.path() + "/every.data";
  auto all = pt::run_perfscope({"inject", "--buildid-all", "-i", recorded, "-o", every});
  ASSERT_EQ(all.exit_status, 0) << all.err;
  EXPECT_NE(all.err.find(" build ids; "), std::string::npos) << all.err;
  std::set<std::string> every_file = build_id_files(every);
  EXPECT_EQ(every_file.count(helper), 1u);
  EXPECT_EQ(every_file.count("/usr/lib/x86_64-linux-gnu/libc.so.6"), 1u);
  EXPECT_EQ(script(every), script(recorded));
}

// perf inject's defaults: a pipe's stream in, and (here) a file out, whose samples and hit files
// perf reads; or a pipe on, read by report.
TEST(Inject, FromAPipeIntoAFileOrAPipe) {
  pt::TempDir dir;
  std::string file = dir.path() + "/from_pipe.data";
  const std::string cli = PERFSCOPE_CLI_PATH;
  auto piped = pt::run_command(
      {"sh", "-c",
       cli + " record -q -o - -- " + workload + " 2 | " + cli + " inject -b -o " + file});
  ASSERT_EQ(piped.exit_status, 0) << piped.err;
  EXPECT_EQ(build_id_files(file).count(std::filesystem::canonical(workload).string()), 1u);
  auto report = pt::run_perfscope({"report", "--stdio", "--sort", "sym", "-i", file});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  EXPECT_NE(report.out.find("leaf_60"), std::string::npos) << report.out;
  if (have_perf()) {
    auto theirs = pt::run_command({perf_path, "report", "--stdio", "--sort", "sym", "-i", file});
    EXPECT_EQ(theirs.exit_status, 0) << theirs.err;
    EXPECT_NE(theirs.out.find("leaf_60"), std::string::npos) << theirs.out;
  }
  auto onward = pt::run_command({"sh", "-c",
                                 cli + " record -q -o - -- " + workload + " 2 | " + cli +
                                     " inject -b | " + cli + " report --stdio --sort sym -i -"});
  ASSERT_EQ(onward.exit_status, 0) << onward.err;
  EXPECT_NE(onward.out.find("leaf_60"), std::string::npos) << onward.out;
}

}  // namespace
