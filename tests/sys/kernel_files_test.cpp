// procfs/sysfs/tracefs readers and writers, thread and process listing, and the gated child that
// lets counters attach before a command runs.
#include "perfscope/sys/kernel_files.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "perfscope/core/cpu_list.hpp"
#include "perfscope/sys/child_process.hpp"
#include "support/test_support.hpp"

namespace sys = perfscope::sys;
using ::testing::Contains;
using ::testing::HasSubstr;

namespace {

bool file_exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

// A fresh path in the temporary directory that does not exist yet.
std::string temporary_path(const std::string& stem) {
  return (::testing::TempDir() + "/" + stem + "." + std::to_string(::getpid()));
}

}  // namespace

TEST(KernelFiles, ReadTextAndIntegerFiles) {
  auto comm = sys::read_text_file("/proc/self/comm");
  ASSERT_TRUE(comm.has_value());
  EXPECT_FALSE(comm->empty());
  EXPECT_EQ(comm->back(), '\n');
  EXPECT_FALSE(sys::read_text_file("/proc/no/such/file").has_value());
  EXPECT_FALSE(sys::read_integer_file("/proc/no/such/file").has_value());
  // Text that is not a number.
  EXPECT_FALSE(sys::read_integer_file("/proc/self/comm").has_value());

  std::string path = temporary_path("kernel_files_integer");
  {
    std::ofstream out(path);
    out << "  -42 trailing words\n";
  }
  EXPECT_EQ(sys::read_integer_file(path), -42);
  std::ofstream(path, std::ios::trunc).close();
  EXPECT_EQ(sys::write_text_file(path, "17\n"), 0);
  EXPECT_EQ(sys::read_text_file(path), "17\n");
  EXPECT_EQ(sys::read_integer_file(path), 17);
  std::remove(path.c_str());
  EXPECT_EQ(sys::write_text_file(path, "1"), -ENOENT);  // only existing files are written
}

TEST(KernelFiles, EveryPerfSysctlReadsAsItsFile) {
  int present = 0;
  for (const auto& sysctl : sys::perf_sysctls()) {
    SCOPED_TRACE(std::string(sysctl.name));
    EXPECT_FALSE(sysctl.what.empty());
    std::string path = sys::sysctl_path(sysctl.name);
    EXPECT_EQ(path, "/proc/sys/kernel/" + std::string(sysctl.name));
    auto text = sys::read_text_file(path);
    if (!text) {
      EXPECT_FALSE(sys::read_sysctl(sysctl.name).has_value());
      continue;
    }
    ++present;
    auto value = sys::read_sysctl(sysctl.name);
    ASSERT_TRUE(value.has_value()) << *text;
    EXPECT_EQ(*value, std::stoll(*text));
  }
  EXPECT_GE(present, 6);  // everything but the arm64/watchdog-specific ones exists on Linux 5.x+
  EXPECT_EQ(sys::read_sysctl("perf_event_paranoid"),
            std::stoll(*sys::read_text_file("/proc/sys/kernel/perf_event_paranoid")));
  EXPECT_FALSE(sys::read_sysctl("no_such_sysctl").has_value());
  EXPECT_EQ(sys::write_sysctl("no_such_sysctl", 1), -ENOENT);
}

TEST(KernelFiles, WriteSysctlRoundTrip) {
  if (!perfscope::testing::running_as_root()) GTEST_SKIP() << "writing sysctls needs root";
  auto old_rate = sys::read_sysctl("perf_event_max_sample_rate");
  ASSERT_TRUE(old_rate.has_value());
  auto cpu_percent = sys::read_sysctl("perf_cpu_time_max_percent");
  if (cpu_percent && (*cpu_percent == 0 || *cpu_percent == 100)) {
    GTEST_SKIP() << "perf_cpu_time_max_percent is " << *cpu_percent
                 << ": the kernel refuses writes of perf_event_max_sample_rate then";
  }
  std::int64_t lowered = *old_rate > 1000 ? *old_rate - 1 : *old_rate + 1;
  ASSERT_EQ(sys::write_sysctl("perf_event_max_sample_rate", lowered), 0);
  auto read_back = sys::read_sysctl("perf_event_max_sample_rate");
  ASSERT_EQ(sys::write_sysctl("perf_event_max_sample_rate", *old_rate), 0);
  EXPECT_EQ(read_back, lowered);
  EXPECT_EQ(sys::read_sysctl("perf_event_max_sample_rate"), old_rate);
  // The kernel checks the value: a negative rate is refused.
  EXPECT_EQ(sys::write_sysctl("perf_event_max_sample_rate", -5), -EINVAL);
  EXPECT_EQ(sys::read_sysctl("perf_event_max_sample_rate"), old_rate);
}

TEST(KernelFiles, ListThreadsFindsAStdThread) {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread thread([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (tid == 0) std::this_thread::yield();
  auto threads = sys::list_threads(::getpid());
  stop = true;
  thread.join();
  EXPECT_THAT(threads, Contains(::getpid()));
  EXPECT_THAT(threads, Contains(tid.load()));
  EXPECT_TRUE(std::is_sorted(threads.begin(), threads.end()));
  // The thread has exited: it leaves the list once the kernel has released it (shortly after
  // join returns, which only waits for the tid futex).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    auto now = sys::list_threads(::getpid());
    if (std::find(now.begin(), now.end(), tid.load()) == now.end()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_THAT(sys::list_threads(::getpid()), ::testing::Not(Contains(tid.load())));
  EXPECT_TRUE(sys::list_threads((1 << 22) + 17).empty());
}

TEST(KernelFiles, ProcessExists) {
  EXPECT_TRUE(sys::process_exists(::getpid()));
  EXPECT_TRUE(sys::process_exists(1));
  EXPECT_FALSE(sys::process_exists((1 << 22) + 17));  // above the largest pid_max
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(sys::process_exists(child));  // reaped
}

TEST(KernelFiles, OnlineCpuListParses) {
  auto list = sys::online_cpu_list();
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(list->find('\n'), std::string::npos);
  auto cpus = perfscope::parse_cpu_list(*list);
  EXPECT_EQ(static_cast<long>(cpus.size()), ::sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_EQ(perfscope::format_cpu_list(cpus), *list);
}

TEST(KernelFiles, TracefsRoot) {
  auto root = sys::tracefs_root();
  if (!root) GTEST_SKIP() << "tracefs is neither mounted nor mountable here";
  EXPECT_TRUE(file_exists(*root + "/events"));
  EXPECT_TRUE(file_exists(*root + "/available_events"));
  EXPECT_THAT(sys::list_directory(*root + "/events"), Contains("sched"));
}

TEST(KernelFiles, Cgroup2Root) {
  auto root = sys::cgroup2_root();
  if (!root) GTEST_SKIP() << "no cgroup v2 hierarchy is mounted";
  EXPECT_TRUE(file_exists(*root + "/cgroup.procs"));
  int fd = sys::open_directory(*root);
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_EQ(sys::open_directory("/proc/self/comm"), -ENOTDIR);
  EXPECT_EQ(sys::open_directory("/no/such/dir"), -ENOENT);
}

TEST(KernelFiles, PmuDevicesHaveTheirFixedTypes) {
  auto pmus = sys::list_directory(std::string(sys::pmu_devices_dir));
  ASSERT_THAT(pmus, Contains("software"));
  EXPECT_EQ(sys::read_integer_file(std::string(sys::pmu_devices_dir) + "/software/type"), 1);
  if (std::find(pmus.begin(), pmus.end(), "tracepoint") != pmus.end()) {
    EXPECT_EQ(sys::read_integer_file(std::string(sys::pmu_devices_dir) + "/tracepoint/type"), 2);
  }
  if (std::find(pmus.begin(), pmus.end(), "breakpoint") != pmus.end()) {
    EXPECT_EQ(sys::read_integer_file(std::string(sys::pmu_devices_dir) + "/breakpoint/type"), 5);
  }
  EXPECT_TRUE(std::is_sorted(pmus.begin(), pmus.end()));
  EXPECT_THAT(pmus, ::testing::Not(Contains(".")));
  EXPECT_TRUE(sys::list_directory("/no/such/dir").empty());
}

TEST(KernelFiles, LimitsAndCapabilities) {
  auto files = sys::open_files_limit();
  EXPECT_LE(files.soft, files.hard);
  EXPECT_EQ(sys::raise_open_files_limit(files.soft), 0);
  EXPECT_EQ(sys::open_files_limit().soft, files.soft);
  auto memlock = sys::locked_memory_limit();
  EXPECT_LE(memlock.soft, memlock.hard);
  if (perfscope::testing::running_as_root()) {
    EXPECT_TRUE((sys::effective_capabilities() >> sys::cap_sys_admin) & 1);
  }
}

TEST(GatedChild, RunsTheCommandOnlyAfterRelease) {
  std::string marker = temporary_path("gated_child_marker");
  std::remove(marker.c_str());
  sys::GatedChild child({"sh", "-c", "echo ran > " + marker});
  ASSERT_GT(child.pid(), 0);
  EXPECT_EQ(child.error(), 0);
  EXPECT_TRUE(sys::process_exists(child.pid()));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(file_exists(marker));  // still waiting at the gate
  EXPECT_EQ(child.release(), 0);
  int status = child.wait();
  ASSERT_GE(status, 0);
  EXPECT_EQ(sys::exit_status_from_wait(status), 0);
  EXPECT_EQ(sys::read_text_file(marker), "ran\n");
  EXPECT_GE(child.user_seconds(), 0.0);
  EXPECT_GE(child.system_seconds(), 0.0);
  std::remove(marker.c_str());
  EXPECT_EQ(child.release(), EBADF);  // the gate is already open
}

TEST(GatedChild, ExecFailureIsReportedByRelease) {
  sys::GatedChild child({"/no/such/program"});
  ASSERT_GT(child.pid(), 0);
  EXPECT_EQ(child.release(), ENOENT);
  int status = child.wait();
  EXPECT_EQ(sys::exit_status_from_wait(status), 127);
}

TEST(GatedChild, AbandonedChildNeverRunsTheCommand) {
  std::string marker = temporary_path("gated_child_abandoned");
  std::remove(marker.c_str());
  sys::GatedChild child({"sh", "-c", "echo ran > " + marker});
  ASSERT_GT(child.pid(), 0);
  child.abandon();
  EXPECT_EQ(sys::exit_status_from_wait(child.wait()), 126);
  EXPECT_FALSE(file_exists(marker));
}

TEST(GatedChild, EmptyCommandIsRefused) {
  sys::GatedChild child(std::vector<std::string>{});
  EXPECT_EQ(child.pid(), -1);
  EXPECT_EQ(child.error(), EINVAL);
  EXPECT_EQ(child.wait(), -ECHILD);
}

TEST(GatedChild, PidfdBecomesReadableWhenTheChildExits) {
  sys::GatedChild child({"true"});
  ASSERT_GT(child.pid(), 0);
  int pidfd = sys::open_pidfd(child.pid());
  if (pidfd == -ENOSYS) GTEST_SKIP() << "pidfd_open is not available";
  ASSERT_GE(pidfd, 0);
  EXPECT_EQ(sys::wait_readable(pidfd, 0), 0);  // gated: still alive
  ASSERT_EQ(child.release(), 0);
  EXPECT_EQ(sys::wait_readable(pidfd, 5000), 1);
  ::close(pidfd);
  EXPECT_EQ(sys::exit_status_from_wait(child.wait()), 0);
  EXPECT_EQ(sys::wait_readable(-1, 1), 0);  // no fd: a plain timeout
  EXPECT_EQ(sys::open_pidfd((1 << 22) + 17), -ESRCH);
}

TEST(ExitStatus, FromRealWaitStatuses) {
  pid_t exits = ::fork();
  if (exits == 0) ::_exit(3);
  int status = 0;
  ASSERT_EQ(::waitpid(exits, &status, 0), exits);
  EXPECT_EQ(sys::exit_status_from_wait(status), 3);

  pid_t killed = ::fork();
  if (killed == 0) {
    ::pause();
    ::_exit(0);
  }
  ::kill(killed, SIGKILL);
  ASSERT_EQ(::waitpid(killed, &status, 0), killed);
  EXPECT_EQ(sys::exit_status_from_wait(status), 128 + SIGKILL);

  pid_t terminated = ::fork();
  if (terminated == 0) {
    ::pause();
    ::_exit(0);
  }
  ::kill(terminated, SIGTERM);
  ASSERT_EQ(::waitpid(terminated, &status, 0), terminated);
  EXPECT_EQ(sys::exit_status_from_wait(status), 143);
}
