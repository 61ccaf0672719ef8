// Report rows are symbols, as perf's are: two overloads that print the same short name are two
// rows with their own shares (perf report on the same file gives the same two), and
// --group-by-name merges them into one for those who want that.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string workload = PERFSCOPE_OVERLOADS_WORKLOAD_PATH;
const std::string perf_path = "/usr/bin/perf";

// The shares of the rows naming `symbol`, largest first.
std::vector<double> shares_of(const std::string& report, const std::string& symbol) {
  std::vector<double> shares;
  std::regex row(R"(\n\s*([0-9.]+)%[^\n]*\[\.\] )" + symbol + R"((?=\n))");
  for (std::sregex_iterator it(report.begin(), report.end(), row), end; it != end; ++it) {
    shares.push_back(std::stod((*it)[1]));
  }
  std::sort(shares.rbegin(), shares.rend());
  return shares;
}

TEST(ReportRows, OverloadsWithOneShortNameAreTwoRowsAsInPerf) {
  pt::TempDir dir;
  std::string file = dir.path() + "/overloads.data";
  auto recorded = pt::run_perfscope({"record", "-F", "2000", "-o", file, "--", workload, "300"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto report = pt::run_perfscope({"report", "--stdio", "--sort", "sym", "-i", file});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  std::vector<double> ours = shares_of(report.out, "work::spin");
  ASSERT_EQ(ours.size(), 2u) << report.out;
  // The integer overload runs about six times as long as the floating-point one.
  EXPECT_GT(ours[0], 3 * ours[1]) << report.out;
  EXPECT_GT(ours[1], 5.0) << report.out;

  auto grouped =
      pt::run_perfscope({"report", "--stdio", "--sort", "sym", "--group-by-name", "-i", file});
  ASSERT_EQ(grouped.exit_status, 0) << grouped.err;
  std::vector<double> merged = shares_of(grouped.out, "work::spin");
  ASSERT_EQ(merged.size(), 1u) << grouped.out;
  EXPECT_NEAR(merged[0], ours[0] + ours[1], 0.02);

  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  auto theirs = pt::run_command({perf_path, "report", "--stdio", "--sort", "sym", "-i", file});
  ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
  std::vector<double> perf = shares_of(theirs.out, "work::spin");
  ASSERT_EQ(perf.size(), 2u) << theirs.out;
  EXPECT_NEAR(ours[0], perf[0], 0.01);
  EXPECT_NEAR(ours[1], perf[1], 0.01);
}

}  // namespace
