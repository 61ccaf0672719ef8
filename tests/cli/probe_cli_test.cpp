// perf probe on perfscope (issue #45): a uprobe on libc's syscall(), which the work helper calls
// exactly once per getpid, counts 1000 in stat; perf probe -l lists it as perfscope does, and
// --del removes it for both.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string perf_path = "/usr/bin/perf";
const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";

class ProbeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pt::running_as_root()) GTEST_SKIP() << "uprobes are made by root";
    if (!pt::tracefs_available()) GTEST_SKIP() << "tracefs is not mounted";
    if (::access("/sys/kernel/tracing/uprobe_events", W_OK) != 0)
      GTEST_SKIP() << "this kernel has no uprobe_events";
    if (::access(libc.c_str(), R_OK) != 0) GTEST_SKIP() << "no " << libc;
  }
  void TearDown() override {
    pt::run_perfscope({"probe", "-q", "-d", "probe_libc:" + event_ + "*"});
  }
  // A name of this test run's own: tests elsewhere may probe libc too.
  const std::string event_ = "perfscope_test_" + std::to_string(::getpid());
};

TEST_F(ProbeCli, UprobeCountsEveryCallAndPerfSeesIt) {
  auto added = pt::run_perfscope({"probe", "-x", libc, "--add", event_ + "=syscall"});
  ASSERT_EQ(added.exit_status, 0) << added.err;
  const std::string name = "probe_libc:" + event_;
  EXPECT_NE(added.err.find("  " + name), std::string::npos) << added.err;
  EXPECT_NE(added.err.find("(on syscall in " + libc + ")"), std::string::npos) << added.err;
  // Exact: one syscall() per getpid, none elsewhere in the helper.
  auto counted =
      pt::run_perfscope({"stat", "-x", ",", "-e", name, "--", work_helper, "getpid", "1000"});
  ASSERT_EQ(counted.exit_status, 0) << counted.err;
  EXPECT_EQ(counted.err.substr(0, counted.err.find(',')), "1000") << counted.err;
  auto listed = pt::run_perfscope({"probe", "-l"});
  std::size_t at = listed.out.find("  " + name + " ");
  ASSERT_NE(at, std::string::npos) << listed.out;
  std::string our_line = listed.out.substr(at, listed.out.find('\n', at) - at);
  // The same name again is refused; with -f it is the next one beside it, as perf names it.
  auto again = pt::run_perfscope({"probe", "-x", libc, "--add", event_ + "=syscall"});
  EXPECT_EQ(again.exit_status, 1);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  auto forced = pt::run_perfscope({"probe", "-x", libc, "-f", "--add", event_ + "=syscall"});
  EXPECT_EQ(forced.exit_status, 0) << forced.err;
  EXPECT_NE(forced.err.find(name + "_1"), std::string::npos) << forced.err;
  if (::access(perf_path.c_str(), X_OK) == 0) {
    auto perf_list = pt::run_command({perf_path, "probe", "-l"});
    EXPECT_NE(perf_list.out.find(our_line + "\n"), std::string::npos)
        << "ours: " << our_line << "\nperf's:\n"
        << perf_list.out;
  }
  auto removed = pt::run_perfscope({"probe", "-d", name + "*"});
  EXPECT_EQ(removed.exit_status, 0) << removed.err;
  EXPECT_NE(removed.err.find("Removed event: " + name + "_1"), std::string::npos) << removed.err;
  EXPECT_EQ(pt::run_perfscope({"probe", "-l"}).out.find(name), std::string::npos);
  if (::access(perf_path.c_str(), X_OK) == 0) {
    EXPECT_EQ(pt::run_command({perf_path, "probe", "-l"}).out.find(name), std::string::npos);
  }
}

TEST_F(ProbeCli, WhatPerfscopeDoesNotMakeSaysSo) {
  // Arguments by name in a kernel function need the kernel's DWARF, which perfscope does not read.
  auto arguments = pt::run_perfscope({"probe", "--add", "do_sys_openat2 dfd"});
  EXPECT_EQ(arguments.exit_status, 1);
  EXPECT_NE(arguments.err.find("kernel probes take raw arguments only"), std::string::npos)
      << arguments.err;
  auto unknown = pt::run_perfscope({"probe", "-x", libc, "--add", event_ + "=no_such_function"});
  EXPECT_EQ(unknown.exit_status, 1);
  EXPECT_NE(unknown.err.find("no_such_function"), std::string::npos) << unknown.err;
  if (::access("/sys/kernel/tracing/kprobe_events", F_OK) != 0) {
    auto kernel = pt::run_perfscope({"probe", "--add", "do_sys_openat2"});
    EXPECT_EQ(kernel.exit_status, 1);
    EXPECT_NE(kernel.err.find("no kprobe events"), std::string::npos) << kernel.err;
    EXPECT_NE(kernel.err.find("-x BINARY"), std::string::npos) << kernel.err;
  }
  auto functions = pt::run_perfscope({"probe", "-x", work_helper, "--funcs"});
  EXPECT_EQ(functions.exit_status, 0) << functions.err;
  EXPECT_NE(functions.out.find("main\n"), std::string::npos) << functions.out;
}

}  // namespace
