// The vDSO by name: a program hot in clock_gettime spends its time in the kernel's vDSO, which
// has no file. perfscope names it from the image the recording carries (or, for perf's files,
// from perf's build-id cache or this kernel's own), in report, script, annotate and the pprof
// export, as perf names it; and a recording read back after the vDSO changed still names it from
// its copy.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string workload = PERFSCOPE_STACK_CASES_WORKLOAD_PATH;
const std::string perf_path = "/usr/bin/perf";
constexpr std::string_view vdso_function = "__vdso_clock_gettime";

bool perf_available() { return ::access(perf_path.c_str(), X_OK) == 0; }

// The loop calls clock_gettime without end: its share in the vDSO is the machine's (a quarter
// to a half on most, under a fifth in some virtual machines, where the rest is the kernel's
// clock read behind it). Above this the vDSO is plainly the hot code, and named.
constexpr double hot_share = 5.0;

// report --stdio's share of the row naming `symbol` ("  61.20%  ...  [.] symbol"), -1 if none.
double share_of(const std::string& report, std::string_view symbol) {
  std::regex row(fmt::format(R"(\n\s*([0-9.]+)%[^\n]*\[\.\] {}\n)", symbol));
  std::smatch match;
  if (!std::regex_search(report, match, row)) return -1;
  return std::stod(match[1]);
}

std::string record(const std::string& tool, const std::string& path) {
  auto result =
      tool == "perf"
          ? pt::run_command({perf_path, "record", "-q", "-F", "2000", "-o", path, "--", workload,
                             "vdso", "400"})
          : pt::run_perfscope({"record", "-F", "2000", "-o", path, "--", workload, "vdso", "400"});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  return path;
}

TEST(VdsoCli, HotClockGettimeIsNamedInReportScriptAndPprof) {
  pt::TempDir dir;
  std::string file = record("perfscope", dir.path() + "/ours.data");
  auto report = pt::run_perfscope({"report", "--stdio", "--sort", "dso,sym", "-i", file});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  EXPECT_GT(share_of(report.out, vdso_function), hot_share) << report.out;
  EXPECT_EQ(report.out.find("[vdso]  [.] 0x"), std::string::npos) << report.out;

  auto script = pt::run_perfscope({"script", "-i", file});
  ASSERT_EQ(script.exit_status, 0) << script.err;
  EXPECT_TRUE(std::regex_search(script.out,
                                std::regex(R"( __vdso_clock_gettime\+0x[0-9a-f]+ \(\[vdso\]\))")))
      << script.out.substr(0, 2000);

  // annotate disassembles it from the recording's copy of the image.
  auto annotated = pt::run_perfscope({"annotate", "-i", file, std::string(vdso_function)});
  ASSERT_EQ(annotated.exit_status, 0) << annotated.err;
  EXPECT_NE(annotated.out.find("__vdso_clock_gettime in [vdso] ("), std::string::npos)
      << annotated.out;
  EXPECT_TRUE(std::regex_search(annotated.out,
                                std::regex(R"(\n +[0-9]+\.[0-9]+ +[0-9]+ +[0-9a-f]+  [a-z]+)")))
      << annotated.out;

  std::string pprof = dir.path() + "/profile.pb.gz";
  auto exported = pt::run_perfscope({"report", "--format", "pprof", "-o", pprof, "-i", file});
  ASSERT_EQ(exported.exit_status, 0) << exported.err;
  if (::access("/usr/bin/go", X_OK) != 0) GTEST_SKIP() << "no go tool pprof to read the export";
  auto top = pt::run_command({"/usr/bin/go", "tool", "pprof", "-top", pprof});
  ASSERT_EQ(top.exit_status, 0) << top.err;
  EXPECT_NE(top.out.find(vdso_function), std::string::npos) << top.out;
}

TEST(VdsoCli, PerfRecordingIsNamedAsPerfNamesIt) {
  if (!perf_available()) GTEST_SKIP() << "perf is not installed to compare with";
  pt::TempDir dir;
  std::string file = record("perf", dir.path() + "/perfs.data");
  auto ours = pt::run_perfscope({"report", "--stdio", "--sort", "dso,sym", "-i", file});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  auto theirs = pt::run_command({perf_path, "report", "--stdio", "--sort", "dso,sym", "-i", file});
  ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
  double perf_share = share_of(theirs.out, vdso_function);
  ASSERT_GT(perf_share, hot_share) << theirs.out;
  EXPECT_NEAR(share_of(ours.out, vdso_function), perf_share, 0.01) << ours.out;
}

// The recording's copy of the vDSO is what names its addresses: a copy whose symbol was renamed
// (as another kernel's vDSO would differ from this one's) gives the renamed name.
TEST(VdsoCli, SavedImageNamesTheVdsoAfterItChanged) {
  pt::TempDir dir;
  std::string file = record("perfscope", dir.path() + "/ours.data");
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t renamed = 0;
  for (std::size_t at = bytes.find(vdso_function); at != std::string::npos;
       at = bytes.find(vdso_function, at + 1)) {
    bytes[at + vdso_function.size() - 1] = 'X';
    ++renamed;
  }
  ASSERT_GE(renamed, 1u) << "the recording carries no vDSO image";
  std::string changed = dir.write("changed.data", bytes);
  auto report = pt::run_perfscope({"report", "--stdio", "--sort", "dso,sym", "-i", changed});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  EXPECT_GT(share_of(report.out, "__vdso_clock_gettimX"), hot_share) << report.out;
  EXPECT_LT(share_of(report.out, vdso_function), 0) << report.out;
}

}  // namespace
