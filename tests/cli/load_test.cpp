// Load: a program with 64 threads alive at a time, created and ended continuously, recorded and
// counted with inherit (every thread found, each with the samples its CPU time calls for); a
// process of 256 threads recorded with one ring buffer per thread; and a system-wide recording
// at the kernel's highest sample rate, where every loss the kernel reports in the file is the
// loss perfscope reports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
using perfscope::testing::expect_no_crash;
using perfscope::testing::temp_path;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string thread_churn = PERFSCOPE_THREAD_CHURN_PATH;

long long field(const std::string& text, const std::string& name) {
  auto at = text.find(name + "=");
  return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + name.size() + 1);
}

struct FileTotals {
  std::map<std::uint32_t, std::uint64_t> samples_per_tid;
  std::uint64_t samples = 0, lost_records = 0, lost = 0, lost_samples = 0, throttles = 0;
};

FileTotals read_totals(const std::string& path) {
  FileTotals totals;
  auto reader = perfscope::PerfDataReader::open(path);
  EXPECT_TRUE(reader.notes().empty());
  perfscope::SampleRecord sample;
  auto word = [](const perfscope::PerfDataRecord& record, std::size_t index) {
    std::uint64_t value = 0;
    std::size_t at = 8 + index * 8;
    if (at + 8 <= record.view.bytes.size()) {
      std::memcpy(&value, record.view.bytes.data() + at, sizeof value);
    }
    return value;
  };
  auto error = reader.for_each_record([&](const perfscope::PerfDataRecord& record) {
    switch (static_cast<perfscope::abi::RecordType>(record.view.type())) {
      case perfscope::abi::RecordType::sample: {
        ++totals.samples;
        perfscope::DecodeError decode_error;
        if (perfscope::decode_sample(record.view, reader.events()[record.event].config, sample,
                                     decode_error)) {
          ++totals.samples_per_tid[sample.tid];
        }
        break;
      }
      case perfscope::abi::RecordType::lost:
        ++totals.lost_records;
        totals.lost += word(record, 1);
        break;
      case perfscope::abi::RecordType::lost_samples: totals.lost_samples += word(record, 0); break;
      case perfscope::abi::RecordType::throttle: ++totals.throttles; break;
      default: break;
    }
  });
  EXPECT_FALSE(error) << error->what();
  return totals;
}

// "[ perfscope record: S samples, L LOST records (N records lost), M lost samples, T throttles ]"
FileTotals reported_totals(const std::string& err) {
  FileTotals totals;
  auto at = err.find("[ perfscope record: ");
  EXPECT_NE(at, std::string::npos) << err;
  if (at == std::string::npos) return totals;
  unsigned long long values[5] = {};
  int read = std::sscanf(err.c_str() + at,
                         "[ perfscope record: %llu samples, %llu LOST records (%llu records lost), "
                         "%llu lost samples, %llu throttles",
                         &values[0], &values[1], &values[2], &values[3], &values[4]);
  EXPECT_EQ(read, 5) << err;
  totals.samples = values[0];
  totals.lost_records = values[1];
  totals.lost = values[2];
  totals.lost_samples = values[3];
  totals.throttles = values[4];
  return totals;
}

std::vector<std::uint32_t> read_tids(const std::string& path) {
  std::vector<std::uint32_t> tids;
  std::ifstream in(path);
  for (std::uint32_t tid; in >> tid;) tids.push_back(tid);
  return tids;
}

constexpr int live_threads = 64;
constexpr int spinners = 640;
constexpr int spin_us = 4000;
constexpr std::uint64_t period_ns = 250000;  // task-clock: one sample per 250 us of CPU

std::vector<std::string> churn_command(const std::string& tids_path) {
  return {thread_churn,
          "--live",
          std::to_string(live_threads),
          "--churn-ms",
          "300",
          "--spinners",
          std::to_string(spinners),
          "--spin-us",
          std::to_string(spin_us),
          "--tids",
          tids_path};
}

// Every one of the 640 spinner threads (created while 63 others run, each living ~4 ms of CPU) is
// in the recording, with the samples its CPU time calls for: 4 ms / 250 us = 16.
TEST(ThreadChurnLoad, RecordSamplesEveryThreadByItsCpuTime) {
  std::string path = temp_path("churn.data");
  std::string tids_path = temp_path("churn.tids");
  std::vector<std::string> args{PERFSCOPE_CLI_PATH,
                                "record",
                                "-e",
                                "task-clock",
                                "-c",
                                std::to_string(period_ns),
                                "-m",
                                "512",
                                "-o",
                                path,
                                "--"};
  auto command = churn_command(tids_path);
  args.insert(args.end(), command.begin(), command.end());
  auto started = std::chrono::steady_clock::now();
  pt::CpuTicks before = pt::cpu_ticks();
  auto result = pt::run_command(args);
  pt::CpuTicks after = pt::cpu_ticks();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_LT(seconds, 30.0);
  double steal = pt::steal_fraction(before, after);

  FileTotals file = read_totals(path);
  FileTotals reported = reported_totals(result.err);
  EXPECT_EQ(reported.samples, file.samples);
  EXPECT_EQ(reported.lost, file.lost);
  ASSERT_EQ(file.lost, 0u) << "a 2 MiB buffer should hold this rate: " << result.err;

  auto tids = read_tids(tids_path);
  ASSERT_EQ(tids.size(), static_cast<std::size_t>(spinners));
  const std::uint64_t expected = spin_us * 1000 / period_ns;
  std::uint64_t spinner_samples = 0;
  int missing = 0, outside = 0;
  std::ostringstream outliers;
  for (std::uint32_t tid : tids) {
    auto found = file.samples_per_tid.find(tid);
    std::uint64_t samples = found == file.samples_per_tid.end() ? 0 : found->second;
    spinner_samples += samples;
    if (samples == 0) ++missing;
    // The timer fires a little late now and then (a guest's hrtimer slack); the thread's own
    // start and exit add a little CPU time. Each thread's count stays near 16, except where the
    // host took the CPU: task-clock runs on while the host steals the vCPU, the thread's own CPU
    // clock (which ends its spin) does not.
    if (samples < expected * 3 / 4 || samples > expected + 4) {
      ++outside;
      outliers << tid << ":" << samples << " ";
    }
  }
  EXPECT_EQ(missing, 0) << "threads with no sample: inherit missed them";
  // A 4 ms life is an outlier once about 1 ms of it was stolen: with a fraction f of the machine
  // stolen, up to 4f of the threads can be.
  const int steal_allowance = static_cast<int>(4.0 * steal * spinners + 0.5);
  EXPECT_LE(outside, spinners / 100 + steal_allowance)
      << "steal " << steal * 100 << " % of the CPU time; " << outliers.str();
  // On average the count is the CPU time over the period.
  double mean = static_cast<double>(spinner_samples) / spinners;
  EXPECT_GE(mean, 0.9 * static_cast<double>(expected));
  EXPECT_LE(mean, static_cast<double>(expected) * (1.0 + 2.0 * steal) + 1.5);
  std::filesystem::remove(path);
  std::filesystem::remove(tids_path);
}

// The same program counted: task-clock covers every spinner's time and no more than the process
// used.
TEST(ThreadChurnLoad, StatTaskClockCoversEveryThread) {
  std::string tids_path = temp_path("churn_stat.tids");
  std::vector<std::string> args{PERFSCOPE_CLI_PATH, "stat", "--csv", "-e", "task-clock", "--"};
  auto command = churn_command(tids_path);
  args.insert(args.end(), command.begin(), command.end());
  pt::CpuTicks before = pt::cpu_ticks();
  auto result = pt::run_command(args);
  pt::CpuTicks after = pt::cpu_ticks();
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  double steal = pt::steal_fraction(before, after);
  double task_clock_ms = -1;  // stat -x: "task-clock,VALUE,msec,..."
  auto at = result.err.find("\ntask-clock,");
  if (at != std::string::npos) task_clock_ms = std::strtod(result.err.c_str() + at + 12, nullptr);
  double process_ms = static_cast<double>(field(result.out, "cpu_us")) / 1000.0;
  EXPECT_GE(task_clock_ms, spinners * spin_us / 1000.0) << result.err << result.out;
  // The process's own figure is taken before it exits and after its start-up, both of which
  // task-clock counts (1.3 % more was seen with 4487 threads churned on a busy machine).
  // task-clock also runs while the host steals the vCPU, which the rusage figure leaves out.
  EXPECT_LE(task_clock_ms, process_ms * (1.05 + 2.0 * steal) + 5)
      << "steal " << steal * 100 << " % of the CPU time; " << result.err << result.out;
  std::filesystem::remove(tids_path);
}

// The ring buffers the recorder maps (/proc/PID/maps names each "anon_inode:[perf_event]").
int mapped_ring_buffers(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  int count = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("[perf_event]") != std::string::npos) ++count;
  }
  return count;
}

// A process of 256 threads recorded with -p --per-thread: one ring buffer per thread, 256 drained
// together.
// Each thread spins 20 ms of its own CPU time once the recorder is in place, so each has about
// 20 samples of the 1 ms period; nothing is lost, or what is lost is what is reported.
TEST(ManyRingBuffers, EveryThreadOfA256ThreadProcessInTheRecording) {
  constexpr int threads = 256;
  std::string path = temp_path("many_buffers.data");
  std::string tids_path = temp_path("many_buffers.tids");
  pt::BackgroundCommand target({thread_churn, "--spinners", std::to_string(threads), "--spin-us",
                                "20000", "--gate", "--tids", tids_path});
  ASSERT_TRUE(target.wait_for_output("spinners ready", 20000)) << target.out();
  pt::BackgroundCommand recorder({PERFSCOPE_CLI_PATH, "-v", "record", "--per-thread", "-e",
                                  "cpu-clock", "-c", "1000000", "-p", std::to_string(target.pid()),
                                  "-o", path});
  for (int i = 0; i < 4000 && recorder.err().find("perfscope: recording") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_THAT(recorder.err(), HasSubstr("perfscope: recording"));
  EXPECT_GE(mapped_ring_buffers(recorder.pid()), threads);
  target.signal(SIGUSR2);
  auto finished = target.wait(60000);
  ASSERT_EQ(finished.exit_status, 0) << finished.err;
  // The recorder ends with its target.
  auto result = recorder.wait(30000);
  EXPECT_FALSE(recorder.timed_out());
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;

  FileTotals file = read_totals(path);
  FileTotals reported = reported_totals(result.err);
  EXPECT_EQ(reported.samples, file.samples);
  EXPECT_EQ(reported.lost, file.lost);
  EXPECT_EQ(file.lost, 0u) << result.err;
  auto tids = read_tids(tids_path);
  ASSERT_EQ(tids.size(), static_cast<std::size_t>(threads));
  int missing = 0;
  std::uint64_t spinner_samples = 0;
  for (std::uint32_t tid : tids) {
    auto found = file.samples_per_tid.find(tid);
    if (found == file.samples_per_tid.end()) {
      ++missing;
      continue;
    }
    spinner_samples += found->second;
  }
  EXPECT_EQ(missing, 0) << "threads with no sample in the recording";
  // 256 threads x 20 ms at one sample per ms.
  EXPECT_GE(spinner_samples, static_cast<std::uint64_t>(threads) * 20 * 9 / 10);
  EXPECT_LE(spinner_samples, static_cast<std::uint64_t>(threads) * 20 * 3 / 2);
  std::filesystem::remove(path);
  std::filesystem::remove(tids_path);
}

TEST(ManyRingBuffers, PerThreadNeedsThreadsAndNoOffCpu) {
  auto cpus = pt::run_perfscope({"record", "--per-thread", "-a", "-o", "/dev/null", "--", "true"});
  EXPECT_EQ(cpus.exit_status, 129);
  EXPECT_THAT(cpus.err, HasSubstr("give -p PID, -t TID or a command, not -a, -C or -G"));
  auto off_cpu =
      pt::run_perfscope({"record", "--per-thread", "--off-cpu", "-o", "/dev/null", "--", "true"});
  EXPECT_EQ(off_cpu.exit_status, 129);
  EXPECT_THAT(off_cpu.err, HasSubstr("--per-thread and --off-cpu (or --wall) do not go together"));
}

// Every CPU at the kernel's highest sample rate (-F max) for 10 s while both CPUs are busy with
// the churn program: whatever the kernel drops, LOST records in the file and the recorder's
// summary agree exactly.
TEST(SystemWideLoad, MaxRateLosesNothingUnreported) {
  if (!pt::running_as_root()) GTEST_SKIP() << "system-wide recording needs root at paranoid 2";
  std::string path = temp_path("system.data");
  std::string tids_path = temp_path("system.tids");
  pt::BackgroundCommand load({thread_churn, "--live", "8", "--churn-ms", "11000"});
  ASSERT_TRUE(load.wait_for_output("ready", 10000));
  auto started = std::chrono::steady_clock::now();
  auto result = pt::run_perfscope({"record", "-a", "-F", "max", "-o", path, "--", "sleep", "10"});
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  load.wait(20000);
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  // It ends: a 10 s recording plus its start (every process synthesized from /proc) and its end
  // (build ids of every file hit). The sanitizer build's recorder, beside the churn on 2 CPUs and
  // other tests, took 31 s in a CI run.
  EXPECT_LT(seconds, pt::sanitized_build ? 60.0 : 30.0) << result.err;

  FileTotals file = read_totals(path);
  FileTotals reported = reported_totals(result.err);
  EXPECT_EQ(reported.samples, file.samples) << result.err;
  EXPECT_EQ(reported.lost_records, file.lost_records) << result.err;
  EXPECT_EQ(reported.lost, file.lost) << result.err;
  EXPECT_EQ(reported.lost_samples, file.lost_samples) << result.err;
  EXPECT_EQ(reported.throttles, file.throttles) << result.err;
  // The rate is the kernel's maximum, on every CPU: far more records than a default run, kept
  // or counted lost (the sanitizer build's recorder keeps about 3 % of them on a busy machine).
  auto max_rate = perfscope::sys::read_sysctl("perf_event_max_sample_rate");
  ASSERT_TRUE(max_rate.has_value());
  EXPECT_GT(file.samples + file.lost, 4000u * 10) << result.err;
  // The kernel's whole count of what it could not write (PERF_FORMAT_LOST) is in the file as perf
  // record writes it, so report's "Total Lost Samples" is the recorder's count in both tools.
  // (Linux 6.0 and newer: before, the LOST records are all the recorder knows.)
  if (file.lost != 0 && file.lost_samples != 0) {
    EXPECT_GE(file.lost_samples, file.lost) << result.err;
    std::string total = "# Total Lost Samples: " + std::to_string(reported.lost_samples) + "\n";
    auto report = pt::run_perfscope({"report", "-i", path, "--stdio", "-g", "none"});
    EXPECT_THAT(report.out, HasSubstr(total));
    if (::access("/usr/bin/perf", X_OK) == 0) {
      auto perf = pt::run_command({"/usr/bin/perf", "report", "-i", path, "--stdio", "-g", "none"});
      EXPECT_THAT(perf.out, HasSubstr(total)) << perf.err;
    }
  }
  std::filesystem::remove(path);
}

}  // namespace
