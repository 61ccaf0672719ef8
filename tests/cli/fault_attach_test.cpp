// Attaching to processes that do not hold still: a target that exits while stat or record attach
// to it (reaped at once, or left a zombie), and a target whose threads are created and destroyed
// all through the attach. The tools must give a result or a clear error, never crash, never
// hang, and count every thread created after the attach (inherit).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
using perfscope::testing::expect_no_crash;
using perfscope::testing::temp_path;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string thread_churn = PERFSCOPE_THREAD_CHURN_PATH;

// Exit 0 with a result, or 1 with an error that says the process is gone.
void expect_result_or_gone(const pt::CommandResult& result, const std::string& result_text) {
  expect_no_crash(result);
  if (result.exit_status == 0) {
    EXPECT_THAT(result.err, HasSubstr(result_text));
  } else {
    EXPECT_EQ(result.exit_status, 1) << result.err;
    EXPECT_THAT(result.err, ::testing::AnyOf(HasSubstr("does not exist"),
                                             HasSubstr("exited before it could be attached"),
                                             HasSubstr("No such process")));
  }
}

// stat -x: "event,value,unit,..." a line.
double csv_value(const std::string& csv, const std::string& event) {
  std::istringstream lines(csv);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(event + ",", 0) == 0)
      return std::strtod(line.c_str() + event.size() + 1, nullptr);
  }
  return -1;
}

long long field(const std::string& text, const std::string& name) {
  auto at = text.find(name + "=");
  return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + name.size() + 1);
}

// The target exits after 0..40 ms: before, during or after the attach. Its parent (this test)
// reaps it at once, as a shell would.
TEST(TargetExitsWhileAttaching, StatAndRecordGiveAResultOrAClearError) {
  std::string path = temp_path("exits");
  for (int delay_ms : {0, 1, 2, 4, 8, 15, 25, 40}) {
    for (const std::string tool : {"stat", "record"}) {
      SCOPED_TRACE(tool + " with the target exiting after " + std::to_string(delay_ms) + " ms");
      pt::BackgroundCommand target({work_helper, "delay-getpid", std::to_string(delay_ms), "0"});
      ASSERT_TRUE(target.started());
      std::thread reaper([&] { target.wait(10000); });
      std::string pid = std::to_string(target.pid());
      auto result = tool == "stat"
                        ? pt::run_perfscope({"stat", "-e", "task-clock", "-p", pid})
                        : pt::run_perfscope({"record", "-e", "cpu-clock", "-p", pid, "-o", path});
      reaper.join();
      expect_result_or_gone(result, tool == "stat" ? "task-clock" : "perfscope record:");
      if (tool == "record" && result.exit_status == 0) {
        // A recording that says it succeeded is a whole file.
        auto reader = perfscope::PerfDataReader::open(path);
        EXPECT_TRUE(reader.notes().empty());
      }
      std::filesystem::remove(path);
      std::filesystem::remove(path + ".old");
    }
  }
}

// A target that has exited but was never reaped stays in /proc as a zombie, possibly for good.
// The run must end at once with a result, not wait for the reaping (nor spin meanwhile).
TEST(TargetExitsWhileAttaching, ZombieTargetEndsTheRunAtOnce) {
  std::string path = temp_path("zombie");
  pt::BackgroundCommand target({work_helper, "exit", "0"});
  ASSERT_TRUE(target.started());
  // Not reaped: wait until /proc says Z.
  std::string state;
  for (int i = 0; i < 400 && state != "Z"; ++i) {
    std::ifstream stat_file("/proc/" + std::to_string(target.pid()) + "/stat");
    std::string line;
    std::getline(stat_file, line);
    auto close = line.rfind(')');
    state = close == std::string::npos ? "" : line.substr(close + 2, 1);
    if (state != "Z") std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(state, "Z");
  std::string pid = std::to_string(target.pid());
  for (const std::string tool : {"stat", "record"}) {
    SCOPED_TRACE(tool);
    auto started = std::chrono::steady_clock::now();
    pt::BackgroundCommand run(
        tool == "stat"
            ? std::vector<std::string>{PERFSCOPE_CLI_PATH, "stat", "-e", "task-clock", "-p", pid}
            : std::vector<std::string>{PERFSCOPE_CLI_PATH, "record", "-e", "cpu-clock", "-p", pid,
                                       "-o", path});
    auto result = run.wait(10000);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_FALSE(run.timed_out()) << tool << " waited for the zombie to be reaped";
    EXPECT_LT(seconds, 8.0);
    expect_result_or_gone(result, tool == "stat" ? "task-clock" : "perfscope record:");
    std::filesystem::remove(path);
  }
}

// Threads are created and end all the time while stat attaches (their tids vanish between the
// listing of /proc/PID/task and the opens). Then 100 threads each spin exactly 10 ms of CPU: all
// were created after the attach, so inherit must count every one of them.
TEST(ThreadChurnWhileAttached, StatCountsEveryThreadCreatedAfterTheAttach) {
  constexpr int spinners = 100;
  constexpr int spin_us = 10000;
  pt::CpuTicks before = pt::cpu_ticks();
  pt::BackgroundCommand churn({thread_churn, "--live", "16", "--churn-until-signal", "--spinners",
                               std::to_string(spinners), "--spin-us", std::to_string(spin_us)});
  ASSERT_TRUE(churn.wait_for_output("ready", 10000));
  pt::BackgroundCommand stat({PERFSCOPE_CLI_PATH, "-v", "stat", "-e", "task-clock", "--csv", "-p",
                              std::to_string(churn.pid())});
  // -v reports the opened fds once every thread found is attached.
  bool attached = false;
  for (int i = 0; i < 12000 && !attached; ++i) {
    attached = stat.err().find("event fds on") != std::string::npos;
    if (!attached) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(attached) << stat.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // churn on, attached
  churn.signal(SIGUSR1);
  auto churned = churn.wait(60000);
  ASSERT_EQ(churned.exit_status, 0) << churned.err;
  auto result = stat.wait(10000);  // ends when the process exits
  double steal = pt::steal_fraction(before, pt::cpu_ticks());
  ASSERT_FALSE(stat.timed_out());
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  double task_clock_ms = csv_value(result.err, "task-clock");
  double process_cpu_ms = static_cast<double>(field(churned.out, "cpu_us")) / 1000.0;
  double spun_ms = spinners * spin_us / 1000.0;
  EXPECT_GT(field(churned.out, "churned"), 0);
  // Every spinner thread's time, no more than the whole process used. The process reads its
  // rusage before it exits; task-clock also counts the exit (the threads' and the address
  // space's teardown): the likely cause of 61 ms more, seen once on a busy 2-vCPU host. A thread
  // counted twice would add at least its 10 ms per spinner, 1000 ms for all of them. task-clock
  // also runs while the host steals the vCPU, which rusage leaves out (twice the machine-wide
  // share: the steal may fall on the busy vCPU).
  EXPECT_GE(task_clock_ms, spun_ms) << result.err << churned.out;
  EXPECT_LE(task_clock_ms, process_cpu_ms * (1.02 + 2.0 * steal) + 150)
      << "steal " << steal * 100 << " % of the CPU time; " << result.err << churned.out;
}

// Many short attaches (SIGINT ends each) to a process whose threads come and go: every one gives
// a result, none crashes on a vanished tid.
TEST(ThreadChurnWhileAttached, RepeatedAttachesNeverFail) {
  std::string path = temp_path("churn_record");
  pt::BackgroundCommand churn({thread_churn, "--live", "32", "--churn-until-signal"});
  ASSERT_TRUE(churn.wait_for_output("ready", 10000));
  std::string pid = std::to_string(churn.pid());
  for (int attempt = 0; attempt < 6; ++attempt) {
    for (const std::string tool : {"stat", "record"}) {
      SCOPED_TRACE(tool + " attempt " + std::to_string(attempt));
      pt::BackgroundCommand run(
          tool == "stat" ? std::vector<std::string>{PERFSCOPE_CLI_PATH, "-v", "stat", "-e",
                                                    "task-clock", "-p", pid}
                         : std::vector<std::string>{PERFSCOPE_CLI_PATH, "-v", "record", "-e",
                                                    "cpu-clock", "-p", pid, "-o", path});
      // -v says when the events count: the SIGINT then ends an attach, not the start-up (which
      // takes longer than the attach itself in a sanitizer build on a busy machine).
      std::string ready = tool == "stat" ? "event fds on" : "perfscope: recording";
      for (int i = 0; i < 12000 && run.err().find(ready) == std::string::npos; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      ASSERT_THAT(run.err(), HasSubstr(ready));
      std::this_thread::sleep_for(std::chrono::milliseconds(50 + 40 * attempt));
      run.signal(SIGINT);
      auto result = run.wait(10000);
      EXPECT_FALSE(run.timed_out());
      // SIGINT ends `stat -p` with 130 after its totals, as perf stat; record finishes with 0.
      int interrupted = tool == "stat" ? 130 : 0;
      expect_no_crash(result, interrupted);
      EXPECT_EQ(result.exit_status, interrupted) << result.err;
      if (tool == "stat") {
        EXPECT_THAT(result.err, HasSubstr("task-clock"));
      } else {
        auto reader = perfscope::PerfDataReader::open(path);
        EXPECT_TRUE(reader.notes().empty());
        EXPECT_THAT(result.err, HasSubstr("perfscope record:"));
      }
      std::filesystem::remove(path);
      std::filesystem::remove(path + ".old");
    }
  }
  // A stop signal ends the recording, never the attached process (only a command the recorder
  // started gets SIGTERM): it is still there to exit 0 on its own signal.
  EXPECT_TRUE(churn.running());
  churn.signal(SIGUSR1);
  EXPECT_EQ(churn.wait(10000).exit_status, 0);
}

}  // namespace
