// perf script --dlfilter on perfscope (issue #45): a C filter compiled against perf's
// perf_dlfilter.h, unchanged, picks the same samples in perfscope script as in perf script (its
// start, filter_event_early, filter_event and stop, and the callbacks it makes: args,
// resolve_ip, resolve_address, attr, object_code).
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string workload = PERFSCOPE_KNOWN_ANSWER_FP_PATH;

#ifdef PERFSCOPE_DLFILTER_PATH
const std::string filter = PERFSCOPE_DLFILTER_PATH;
#else
const std::string filter;
#endif

std::string busiest_pid(const std::string& data) {
  auto pids = pt::run_perfscope({"script", "-i", data, "-F", "pid"});
  std::string first = pids.out.substr(0, pids.out.find('\n'));
  return first.substr(first.find_first_not_of(' '));
}

TEST(ScriptDlfilter, PerfsFilterPicksPerfsSamples) {
  if (filter.empty()) GTEST_SKIP() << "perf's perf_dlfilter.h is not installed (linux-perf)";
  pt::TempDir dir;
  std::string data = dir.path() + "/ka.data";
  auto recorded = pt::run_perfscope({"record", "-q", "-o", data, "--", workload, "20"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  std::string pid = busiest_pid(data);
  std::vector<std::string> words{"script",  "-i", data,      "--dlfilter", filter,
                                 "--dlarg", pid,  "--dlarg", "leaf_30"};
  auto ours = pt::run_perfscope(words);
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  // Only leaf_30's samples of the process, about 30 % of its 6:3:1 work.
  auto all = pt::run_perfscope({"script", "-i", data});
  std::size_t kept = 0, total = 0;
  for (std::size_t at = 0; (at = ours.out.find('\n', at)) != std::string::npos; ++at) ++kept;
  for (std::size_t at = 0; (at = all.out.find('\n', at)) != std::string::npos; ++at) ++total;
  EXPECT_GT(kept, total / 5) << ours.out.substr(0, 500);
  EXPECT_LT(kept, total * 2 / 5);
  EXPECT_EQ(ours.out.find("leaf_60"), std::string::npos);
  // stop() ran once, after every sample went through both calls.
  EXPECT_NE(ours.err.find("keep_pid_symbol: kept " + std::to_string(kept) + " of "),
            std::string::npos)
      << ours.err;
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  std::vector<std::string> perf_words{perf_path};
  perf_words.insert(perf_words.end(), words.begin(), words.end());
  auto perf = pt::run_command(perf_words);
  EXPECT_EQ(ours.out, perf.out);
  EXPECT_EQ(ours.err, perf.err);
}

TEST(ScriptDlfilter, FailuresSayWhat) {
  if (filter.empty()) GTEST_SKIP() << "perf's perf_dlfilter.h is not installed (linux-perf)";
  pt::TempDir dir;
  std::string data = dir.path() + "/ka.data";
  ASSERT_EQ(pt::run_perfscope({"record", "-q", "-o", data, "--", workload, "2"}).exit_status, 0);
  // start() refuses without its two arguments.
  auto no_args = pt::run_perfscope({"script", "-i", data, "--dlfilter", filter});
  EXPECT_EQ(no_args.exit_status, 1);
  EXPECT_NE(no_args.err.find("start() failed"), std::string::npos) << no_args.err;
  auto missing = pt::run_perfscope({"script", "-i", data, "--dlfilter", "no_such_filter.so"});
  EXPECT_EQ(missing.exit_status, 1);
  EXPECT_NE(missing.err.find("no_such_filter.so"), std::string::npos) << missing.err;
  auto lone_arg = pt::run_perfscope({"script", "-i", data, "--dlarg", "1"});
  EXPECT_NE(lone_arg.exit_status, 0);
  EXPECT_NE(lone_arg.err.find("--dlfilter"), std::string::npos) << lone_arg.err;
}

}  // namespace
