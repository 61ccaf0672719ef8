// ExitWatch on targets that are not perfscope's children: the exit seen through the pidfd, a
// target reaped before the watch began (pidfd_open fails: /proc says it is gone), and a wait
// that times out while the target lives.
#include "perfscope/sys/exit_watch.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

namespace {

using perfscope::sys::ExitWatch;
using Clock = std::chrono::steady_clock;

pid_t sleeping_child() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

TEST(ExitWatch, NothingWatchedNeverExits) {
  ExitWatch none;
  EXPECT_FALSE(none.watching());
  EXPECT_FALSE(none.exited());
  EXPECT_EQ(none.wait(10), 0);
}

TEST(ExitWatch, SeesTheExitOfALiveTarget) {
  pid_t pid = sleeping_child();
  ASSERT_GT(pid, 0);
  ExitWatch watch(pid, false);
  EXPECT_TRUE(watch.watching());
  EXPECT_FALSE(watch.exited());
  EXPECT_EQ(watch.wait(20), 0);
  ::kill(pid, SIGKILL);
  // A zombie has exited: the watch says so before anyone reaps it.
  EXPECT_EQ(watch.wait(5000), 1);
  EXPECT_TRUE(watch.exited());
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(watch.exited());
}

// The race a CI run hit: `stat -p PID` attached, then the target exited and its parent reaped it
// before the pidfd was opened. The watch must say "exited", and a wait without a timeout must
// return, not sleep forever.
TEST(ExitWatch, TargetReapedBeforeTheWatchHasExited) {
  pid_t pid = sleeping_child();
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  for (bool thread : {false, true}) {
    ExitWatch watch(pid, thread);
    EXPECT_TRUE(watch.exited());
    auto started = Clock::now();
    EXPECT_EQ(watch.wait(-1), 1);
    EXPECT_LT(Clock::now() - started, std::chrono::seconds(2));
  }
}

TEST(ExitWatch, MovesItsPidfd) {
  pid_t pid = sleeping_child();
  ASSERT_GT(pid, 0);
  ExitWatch first(pid, false);
  ExitWatch second = std::move(first);
  EXPECT_FALSE(first.watching());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_TRUE(second.watching());
  ::kill(pid, SIGKILL);
  EXPECT_EQ(second.wait(5000), 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace
