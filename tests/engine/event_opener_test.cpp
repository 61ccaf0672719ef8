// EventOpener: every fallback and diagnosis of opening an event, against the kernel: a plain
// open, an event this machine lacks, a task that exited, descriptors running out, the
// user-space-only retry at perf_event_paranoid 2, and PERF_FORMAT_LOST.
#include "perfscope/engine/event_opener.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

namespace {

using perfscope::EventAttr;
using perfscope::EventOpener;
using perfscope::OpenerPolicy;
using perfscope::OpenSite;
using perfscope::OpenStatus;
namespace flag = perfscope::abi::attr_flag;
namespace rf = perfscope::abi::read_format;

EventAttr task_clock() {
  return EventAttr::software(perfscope::abi::SoftwareEvent::task_clock).set_flag(flag::disabled);
}

// Runs `body` in a child and returns its exit code (what the parent can check).
template <class Body>
int in_child(Body body) {
  pid_t child = ::fork();
  if (child == 0) {
    int code = 99;
    try {
      code = body();
    } catch (...) {
      code = 98;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(EventOpener, OpensASoftwareEventAsPrepared) {
  EventOpener opener;
  auto outcome = opener.open(task_clock(), OpenSite{});
  ASSERT_EQ(outcome.status, OpenStatus::opened);
  EXPECT_TRUE(outcome.event.valid());
  EXPECT_TRUE(outcome.event.attr().has(flag::disabled));
  EXPECT_FALSE(opener.user_space_only());
  EXPECT_TRUE(opener.notices().empty());
  EXPECT_EQ(opener.label("task-clock", task_clock()), "task-clock");
}

// cycles on a machine without a hardware PMU (a VM): ENOENT, EOPNOTSUPP or EINVAL on a
// hardware event all mean "not supported here".
TEST(EventOpener, AHardwareEventTheMachineLacksIsUnsupportedOrThrownWithItsDiagnosis) {
  auto cycles = EventAttr::hardware(perfscope::abi::HardwareEvent::cpu_cycles);
  EventOpener probe;
  auto outcome = probe.open(cycles, OpenSite{0, -1, 0, nullptr, "cycles", 1});
  if (outcome.status == OpenStatus::opened) GTEST_SKIP() << "this machine counts cycles";
  ASSERT_EQ(outcome.status, OpenStatus::unsupported);
  EXPECT_TRUE(perfscope::open_failure_means_unsupported(outcome.errnum, cycles));
  EXPECT_EQ(outcome.diagnosis,
            perfscope::diagnose_open_failure(outcome.errnum, cycles, perfscope::OpenContext{}));
  EXPECT_FALSE(outcome.diagnosis.empty());

  OpenerPolicy strict;
  strict.skip_unsupported = false;
  EventOpener opener(strict);
  try {
    opener.open(cycles, OpenSite{0, -1, 0, nullptr, "cycles", 1});
    FAIL() << "no error";
  } catch (const perfscope::Error& error) {
    EXPECT_EQ(error.errnum(), outcome.errnum);
    EXPECT_NE(error.summary().find("cannot open event 'cycles' (pid 0, cpu -1)"), std::string::npos)
        << error.summary();
    EXPECT_EQ(error.diagnosis(), outcome.diagnosis);
  }
}

TEST(EventOpener, ATaskThatExitedIsReportedWhenTasksMayExitAndThrownOtherwise) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);  // reaped: the pid is gone
  OpenerPolicy attaching;
  attaching.task_may_exit = true;
  EventOpener opener(attaching);
  auto outcome = opener.open(task_clock(), OpenSite{child, -1, 0, nullptr, "task-clock", 1});
  EXPECT_EQ(outcome.status, OpenStatus::task_gone);
  EXPECT_EQ(outcome.errnum, ESRCH);

  EventOpener strict;
  try {
    strict.open(task_clock(), OpenSite{child, -1, 0, nullptr, "task-clock", 1});
    FAIL() << "no error";
  } catch (const perfscope::Error& error) {
    EXPECT_EQ(error.errnum(), ESRCH);
    EXPECT_NE(error.diagnosis().find(std::to_string(child)), std::string::npos);
  }
}

// Out of descriptors: the caller's are given back before the error is thrown, so that the
// diagnosis (which reads the limit) and whatever prints it have one.
TEST(EventOpener, OutOfDescriptorsReleasesTheCallersBeforeThrowing) {
  int code = in_child([] {
    rlimit limit{32, 32};
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return 10;
    EventOpener opener;
    std::vector<perfscope::Event> held;
    bool released = false;
    opener.on_descriptors_exhausted([&] {
      released = true;
      held.clear();
    });
    try {
      for (int i = 0; i < 64; ++i) held.push_back(opener.open(task_clock(), OpenSite{}).event);
      return 11;  // the limit did not bite
    } catch (const perfscope::Error& error) {
      if (error.errnum() != EMFILE) return 12;
      if (!released || !held.empty()) return 13;
      if (error.diagnosis().find("RLIMIT_NOFILE") == std::string::npos) return 14;
      return 0;
    }
  });
  EXPECT_EQ(code, 0) << "10: setrlimit, 11: no EMFILE, 12: another errno, 13: not released "
                        "first, 14: no diagnosis";
}

// At perf_event_paranoid 2 an unprivileged user counts user space only: the retry, the notice
// and perf's ":u" label, and an event that asks for kernel space alone still fails.
TEST(EventOpener, UserSpaceOnlyRetryAtParanoidTwo) {
  if (!perfscope::testing::running_as_root()) GTEST_SKIP() << "needs root to drop privileges";
  auto paranoid = perfscope::sys::read_sysctl("perf_event_paranoid");
  if (!paranoid || *paranoid < 2) GTEST_SKIP() << "perf_event_paranoid is below 2";
  int code = in_child([] {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) {
      return 10;
    }
    EventOpener opener;
    auto outcome = opener.open(task_clock(), OpenSite{});
    if (outcome.status != OpenStatus::opened) return 11;
    if (!opener.user_space_only() || !outcome.event.attr().has(flag::exclude_kernel)) return 12;
    if (opener.notices().size() != 1 ||
        opener.notices()[0].find("user space only") == std::string::npos) {
      return 13;
    }
    if (opener.label("task-clock", task_clock()) != "task-clock:u") return 14;
    // Later opens exclude the kernel from the start.
    if (!opener.adjusted(task_clock()).has(flag::exclude_kernel)) return 15;
    auto kernel_only = task_clock().set_flag(flag::exclude_user);
    if (opener.adjusted(kernel_only).has(flag::exclude_kernel)) return 16;
    try {
      opener.open(kernel_only, OpenSite{0, -1, 0, nullptr, "task-clock:k", 1});
      return 17;
    } catch (const perfscope::Error& error) {
      if (error.errnum() != EACCES && error.errnum() != EPERM) return 18;
    }
    OpenerPolicy no_fallback;
    no_fallback.user_space_fallback = false;
    EventOpener strict(no_fallback);
    try {
      strict.open(task_clock(), OpenSite{});
      return 19;
    } catch (const perfscope::Error&) {
    }
    return 0;
  });
  EXPECT_EQ(code, 0) << "see the return codes in the test body";
}

// Linux 6.0 and later accept PERF_FORMAT_LOST: it is kept. (Before 6.0 the opener retries
// without it; that kernel is not this machine's.)
TEST(EventOpener, LostFormatIsKeptWhereTheKernelHasIt) {
  auto attr = EventAttr::software(perfscope::abi::SoftwareEvent::cpu_clock);
  attr.set_sample_period(1'000'000).set_read_format(rf::lost).set_flag(flag::disabled);
  EventOpener opener;
  auto outcome = opener.open(attr, OpenSite{});
  ASSERT_EQ(outcome.status, OpenStatus::opened);
  if (!opener.lost_format()) GTEST_SKIP() << "a kernel before 6.0: PERF_FORMAT_LOST refused";
  EXPECT_EQ(outcome.event.attr().raw().read_format & rf::lost, rf::lost);
}

}  // namespace
