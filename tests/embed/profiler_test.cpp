// The in-process sampling profiler on a workload whose profile is known by construction: two
// leaves run the same loop for 3 and 1 units of work per round, each called from its own
// function, so 75 % and 25 % of the samples fall in them and each has one caller. Profiled with
// cpu-clock (every machine has it) with frame-pointer and dwarf call chains, in calling-thread
// and process scope, and unprivileged at perf_event_paranoid 2; folded output, the files every
// format writes, and the errors of misuse. Built with frame pointers (tests/CMakeLists.txt).
#include "perfscope/embed/profiler.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

// noipa (GCC) also keeps identical-code folding from merging the two leaves into one function.
#if defined(__clang__)
#define PROFILER_TEST_NOINLINE __attribute__((noinline))
#else
#define PROFILER_TEST_NOINLINE __attribute__((noipa))
#endif

namespace {

constexpr std::uint64_t unit = 200000;  // iterations of one unit of work (about 0.15 ms here)
volatile std::uint64_t sink;

inline std::uint64_t step(std::uint64_t x, std::uint64_t salt) {
  x = x * 6364136223846793005ULL + salt;
  asm volatile("" : "+r"(x));  // one multiply-add per iteration, never vectorised or folded
  return x;
}

}  // namespace

extern "C" {

// Called first in each leaf: a function that calls nothing gets no frame pointer from GCC, and
// clang sets up its frame only around a call; a loop outside the frame would lose its caller
// from frame-pointer call chains (tests/analysis/data/known_answer.cpp).
PROFILER_TEST_NOINLINE std::uint64_t profiler_test_settle(std::uint64_t x) { return x ^ (x >> 17); }

PROFILER_TEST_NOINLINE std::uint64_t profiler_test_heavy_leaf(std::uint64_t units) {
  std::uint64_t x = profiler_test_settle(units);
  for (std::uint64_t i = 0; i < units * unit; ++i) x = step(x, 1442695040888963407ULL);
  return x;
}

PROFILER_TEST_NOINLINE std::uint64_t profiler_test_light_leaf(std::uint64_t units) {
  std::uint64_t x = profiler_test_settle(units);
  for (std::uint64_t i = 0; i < units * unit; ++i) x = step(x, 1442695040888963409ULL);
  return x;
}

// Each adds to `sink` after its call: no tail call, so the caller's frame stays on the stack.
PROFILER_TEST_NOINLINE void profiler_test_heavy_caller() {
  sink = sink + profiler_test_heavy_leaf(3);
}
PROFILER_TEST_NOINLINE void profiler_test_light_caller() {
  sink = sink + profiler_test_light_leaf(1);
}

PROFILER_TEST_NOINLINE void profiler_test_workload(long rounds) {
  for (long round = 0; round < rounds; ++round) {
    profiler_test_heavy_caller();
    profiler_test_light_caller();
  }
}

}  // extern "C"

namespace {

using perfscope::ExportFormat;
using perfscope::Profile;
using perfscope::Profiler;
using perfscope::ProfilerCallGraph;
using perfscope::ProfilerOptions;
using perfscope::ProfilerScope;
using perfscope::ScopedProfile;

using perfscope::testing::sanitized_build;

constexpr long default_rounds = 600;  // 2400 units: about 0.4 s, 1600 samples at 4000 Hz

struct Attribution {
  std::uint64_t samples = 0;  // of every leaf
  std::uint64_t heavy = 0, light = 0;
  // The same weighted by the samples' periods (ns of cpu-clock, cycles): with a frequency the
  // kernel adjusts the period from sample to sample, so the periods, not the counts, measure.
  std::uint64_t heavy_period = 0, light_period = 0;
  std::uint64_t heavy_right_caller = 0, light_right_caller = 0;
  std::uint64_t wrong_caller = 0;  // a leaf under the other leaf's caller
  double heavy_percent() const {
    return heavy_period + light_period == 0 ? 0.0
                                            : 100.0 * static_cast<double>(heavy_period) /
                                                  static_cast<double>(heavy_period + light_period);
  }
};

const std::string& function_name(const Profile& profile, std::uint32_t frame) {
  return profile.functions[profile.frames[frame].function].name;
}

// Leaf and caller of every sample (of the threads in `tids`, when given).
Attribution attribute(const Profile& profile, const std::vector<std::uint32_t>& tids = {}) {
  Attribution result;
  for (const auto& sample : profile.samples) {
    if (!tids.empty()) {
      std::uint32_t tid = profile.threads[sample.thread].tid;
      if (std::find(tids.begin(), tids.end(), tid) == tids.end()) continue;
    }
    ++result.samples;
    if (sample.stack == perfscope::no_index) continue;
    // The work's leaf function, even when the sample fell in something it called (its step, or
    // a sanitizer's check in the instrumented build).
    std::uint32_t at = sample.stack;
    while (at != perfscope::no_index) {
      const std::string& here = function_name(profile, profile.stacks[at].frame);
      if (here == "profiler_test_heavy_leaf" || here == "profiler_test_light_leaf") break;
      at = profile.stacks[at].parent;
    }
    if (at == perfscope::no_index) continue;
    const auto& leaf = profile.stacks[at];
    const std::string& name = function_name(profile, leaf.frame);
    std::string caller = leaf.parent == perfscope::no_index
                             ? std::string()
                             : function_name(profile, profile.stacks[leaf.parent].frame);
    if (name == "profiler_test_heavy_leaf") {
      ++result.heavy;
      result.heavy_period += sample.period;
      if (caller == "profiler_test_heavy_caller") ++result.heavy_right_caller;
      if (caller == "profiler_test_light_caller") ++result.wrong_caller;
    } else if (name == "profiler_test_light_leaf") {
      ++result.light;
      result.light_period += sample.period;
      if (caller == "profiler_test_light_caller") ++result.light_right_caller;
      if (caller == "profiler_test_heavy_caller") ++result.wrong_caller;
    }
  }
  return result;
}

// Bounds that follow from the sample count, so that a loaded machine (fewer samples, losses)
// widens them instead of failing a right answer. z = 4.5 standard deviations: a right answer
// fails one run in some 150,000.
constexpr double z = 4.5;

// The fewest of `n` samples, each one in with probability `q`, that a right answer gives.
std::uint64_t binomial_lower_bound(std::uint64_t n, double q) {
  double count = static_cast<double>(n);
  double bound = count * q - z * std::sqrt(count * q * (1 - q));
  return bound <= 0 ? 0 : static_cast<std::uint64_t>(bound);
}

// The tolerance, in percentage points, of a share of `percent` measured on `n` samples when
// `lost` more were dropped: the binomial spread, the largest shift the lost ones could make (all
// on one side: the kernel drops them in bursts), and 2 points for what sampling attributes
// elsewhere (the callers' few instructions, the frequency's short first periods).
double share_tolerance(double percent, std::uint64_t n, std::uint64_t lost) {
  if (n == 0) return 100.0;
  double p = percent / 100.0, count = static_cast<double>(n);
  double spread = z * std::sqrt(p * (1 - p) / count);
  double lost_shift = static_cast<double>(lost) / (count + static_cast<double>(lost));
  return 100.0 * (spread + lost_shift) + 2.0;
}

void expect_known_answer(const Attribution& a, std::uint64_t lost, const char* what) {
  std::printf(
      "%s: %llu samples (%llu lost), %llu heavy, %llu light: %.1f %% heavy; right callers "
      "%llu/%llu heavy, %llu/%llu light; %llu wrong\n",
      what, static_cast<unsigned long long>(a.samples), static_cast<unsigned long long>(lost),
      static_cast<unsigned long long>(a.heavy), static_cast<unsigned long long>(a.light),
      a.heavy_percent(), static_cast<unsigned long long>(a.heavy_right_caller),
      static_cast<unsigned long long>(a.heavy),
      static_cast<unsigned long long>(a.light_right_caller),
      static_cast<unsigned long long>(a.light), static_cast<unsigned long long>(a.wrong_caller));
  // 0.4 s at 4000 Hz: about 1600 samples; a loaded machine may run the workload at a fraction of
  // a CPU, but cpu-clock counts only its own CPU time.
  ASSERT_GE(a.heavy + a.light, 500u) << what;
  // Nearly every sample is in a leaf: the rest is the callers' few instructions and the start and
  // stop of the profiler.
  // In the sanitizer build some samples fall in the sanitizer's runtime, which keeps no frame
  // pointers, so their chains stop before the leaf: 80 % there.
  EXPECT_GE(a.heavy + a.light, binomial_lower_bound(a.samples, sanitized_build ? 0.80 : 0.95))
      << what;
  EXPECT_NEAR(a.heavy_percent(), 75.0, share_tolerance(75.0, a.heavy + a.light, lost)) << what;
  EXPECT_EQ(a.wrong_caller, 0u) << what;
  // Unwinding through the sanitizer's runtime (no frame pointers, its own CFI) loses a few
  // callers in that build.
  const double right = sanitized_build ? 0.95 : 0.98;
  EXPECT_GE(a.heavy_right_caller, binomial_lower_bound(a.heavy, right)) << what;
  EXPECT_GE(a.light_right_caller, binomial_lower_bound(a.light, right)) << what;
}

ProfilerOptions cpu_clock_options() {
  ProfilerOptions options;
  options.events = "cpu-clock";
  // The tests expect no loss: 2 MiB holds the whole run's samples, should a sanitizer-built drain
  // thread fall behind on a busy machine (the default 256 KiB holds about a third of a second).
  options.buffer_pages = 512;
  return options;
}

TEST(Profiler, AttributesTheKnownAnswerWithFramePointers) {
  Profiler profiler(cpu_clock_options());
  profiler.start();
  profiler_test_workload(default_rounds);
  profiler.stop();
  const Profile& profile = profiler.profile();
  ASSERT_EQ(profile.events.size(), 1u);
  EXPECT_EQ(profile.events[0].name, "cpu-clock");
  EXPECT_TRUE(profile.events[0].has_callchains);
  const auto& stats = profiler.stats();
  expect_known_answer(attribute(profile), stats.lost + stats.lost_samples, "cpu-clock, fp");
  std::printf("stats: %llu samples, %llu lost, %llu lost samples, %llu drain wakeups\n",
              static_cast<unsigned long long>(stats.samples),
              static_cast<unsigned long long>(stats.lost),
              static_cast<unsigned long long>(stats.lost_samples),
              static_cast<unsigned long long>(stats.wakeups));
  // Every sample read is in the profile (no filters), and nothing was lost at this rate.
  EXPECT_EQ(profile.summary.samples, stats.samples - stats.kernel_samples_left_out);
  EXPECT_EQ(stats.lost, 0u);
  EXPECT_EQ(stats.lost_samples, 0u);
  EXPECT_EQ(profile.summary.lost, stats.lost);
  // The calling thread alone, by its own id.
  ASSERT_EQ(profile.threads.size(), 1u);
  EXPECT_EQ(profile.threads[0].tid, static_cast<std::uint32_t>(::syscall(SYS_gettid)));
  EXPECT_EQ(profile.threads[0].pid, static_cast<std::uint32_t>(::getpid()));
  // The samples are a quarter of a millisecond apart: about 4000 per second of the thread's time.
  double seconds =
      static_cast<double>(profile.summary.last_time - profile.summary.first_time) / 1e9;
  EXPECT_GT(seconds, 0.0);
}

TEST(Profiler, FoldedOutputHasTheCallersOfEachLeaf) {
  Profiler profiler(cpu_clock_options());
  {
    ScopedProfile scope(profiler);
    profiler_test_workload(default_rounds / 2);
  }
  EXPECT_FALSE(profiler.running());
  std::ostringstream folded;
  profiler.write(folded, ExportFormat::folded);
  // "comm;...;caller;leaf count" per distinct stack: the two stacks of the workload, each with
  // the test's entry points above it, weighted 3:1.
  std::map<std::string, std::uint64_t> by_leaf;
  std::istringstream lines(folded.str());
  for (std::string line; std::getline(lines, line);) {
    auto space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    std::uint64_t count = std::stoull(line.substr(space + 1));
    std::string stack = line.substr(0, space);
    for (const char* expected : {"profiler_test_workload;profiler_test_heavy_caller;"
                                 "profiler_test_heavy_leaf",
                                 "profiler_test_workload;profiler_test_light_caller;"
                                 "profiler_test_light_leaf"}) {
      if (stack.ends_with(expected)) by_leaf[expected] += count;
    }
    EXPECT_EQ(stack.find("profiler_test_light_caller;profiler_test_heavy_leaf"), std::string::npos);
    EXPECT_EQ(stack.find("profiler_test_heavy_caller;profiler_test_light_leaf"), std::string::npos);
  }
  ASSERT_EQ(by_leaf.size(), 2u) << folded.str();
  // std::map orders the heavy stack first ("...heavy_caller" < "...light_caller").
  double heavy = static_cast<double>(by_leaf.begin()->second);
  double light = static_cast<double>(std::next(by_leaf.begin())->second);
  EXPECT_GE(heavy + light, 250.0);
  // Counts, not periods: each sample weighs 1 in folded output, and the frequency's short first
  // periods count as much as the rest (1 point more).
  const auto& stats = profiler.stats();
  EXPECT_NEAR(100.0 * heavy / (heavy + light), 75.0,
              share_tolerance(75.0, static_cast<std::uint64_t>(heavy + light),
                              stats.lost + stats.lost_samples) +
                  1.0);
  // Whole stacks: the test's body calls the workload in each.
  EXPECT_NE(folded.str().find("FoldedOutputHasTheCallersOfEachLeaf_Test::TestBody;"
                              "profiler_test_workload;profiler_test_heavy_caller;"),
            std::string::npos)
      << folded.str();
}

TEST(Profiler, DwarfCallChainsFindTheSameCallers) {
  ProfilerOptions options = cpu_clock_options();
  options.call_graph = ProfilerCallGraph::dwarf;
  options.frequency = 1000;  // 8 KiB of stack per sample
  Profiler profiler(options);
  profiler.start();
  profiler_test_workload(default_rounds * 2);
  profiler.stop();
  const Profile& profile = profiler.profile();
  EXPECT_TRUE(profile.summary.dwarf_unwinding);
  const auto& stats = profiler.stats();
  std::printf(
      "dwarf: %llu samples, %llu lost, %llu wakeups; unwound to the outermost frame %llu of %llu\n",
      static_cast<unsigned long long>(stats.samples), static_cast<unsigned long long>(stats.lost),
      static_cast<unsigned long long>(stats.wakeups),
      static_cast<unsigned long long>(profile.summary.unwinding.complete),
      static_cast<unsigned long long>(profile.summary.unwinding.samples));
  // Each loss is counted: what the profile holds and what was lost add up to what was taken.
  EXPECT_EQ(profile.summary.lost, stats.lost);
  Attribution a = attribute(profile);
  expect_known_answer(a, stats.lost + stats.lost_samples, "cpu-clock, dwarf");
}

// One data page (4 KiB) and 8 KiB of stack in every sample: no sample could ever fit, and the
// kernel would write LOST records only. start() refuses, naming the sizes and the options to
// change; with 4 pages (the fewest that hold a sample) every sample is kept or counted as lost.
TEST(Profiler, RefusesABufferTooSmallForOneSampleAndCountsTheLossOfOneJustLargeEnough) {
  ProfilerOptions options = cpu_clock_options();
  options.call_graph = ProfilerCallGraph::dwarf;
  options.buffer_pages = 1;
  {
    Profiler profiler(options);
    try {
      profiler.start();
      FAIL() << "a 1-page buffer cannot hold an 8 KiB stack dump";
    } catch (const perfscope::Error& error) {
      std::string what = error.what();
      EXPECT_NE(what.find("8192 bytes of user stack dump"), std::string::npos) << what;
      EXPECT_NE(what.find("holds records of at most 4088 bytes"), std::string::npos) << what;
      EXPECT_NE(what.find("ProfilerOptions::buffer_pages = 16 or more (at least 4"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("ProfilerOptions::dwarf_stack_size"), std::string::npos) << what;
    }
  }
  options.buffer_pages = 4;
  Profiler profiler(options);
  profiler.start();
  profiler_test_workload(default_rounds / 4);
  profiler.stop();
  const auto& stats = profiler.stats();
  std::printf("4-page buffer: %llu samples, %llu lost in %llu LOST records\n",
              static_cast<unsigned long long>(stats.samples),
              static_cast<unsigned long long>(stats.lost),
              static_cast<unsigned long long>(stats.lost_records));
  // About 0.1 s at 4000 Hz: some 400 samples, each kept or counted as lost.
  EXPECT_GE(stats.samples + stats.lost, 200u);
  EXPECT_GT(stats.samples, 0u);
  EXPECT_EQ(profiler.profile().summary.lost, stats.lost);
  // Above 1 % lost, the profile says that its shares may be biased; at or below, it does not.
  const auto& warnings = profiler.profile().summary.warnings;
  bool warned = std::any_of(warnings.begin(), warnings.end(), [](const std::string& warning) {
    return warning.find("the shares may be biased") != std::string::npos;
  });
  std::uint64_t lost = std::max(stats.lost, stats.lost_samples);
  std::uint64_t kept = stats.samples - stats.kernel_samples_left_out - stats.drain_thread_samples;
  EXPECT_EQ(warned, lost * 100 > kept + lost) << kept << " samples, " << lost << " lost";
}

TEST(Profiler, ProcessScopeSamplesThreadsCreatedBeforeAndAfterStart) {
  std::atomic<bool> go{false};
  std::atomic<std::uint32_t> before_tid{0}, after_tid{0};
  auto spin = [&go](std::atomic<std::uint32_t>& tid) {
    tid = static_cast<std::uint32_t>(::syscall(SYS_gettid));
    while (!go) std::this_thread::yield();
    profiler_test_workload(default_rounds / 4);
  };
  std::thread before(spin, std::ref(before_tid));
  while (before_tid == 0) std::this_thread::yield();

  ProfilerOptions options = cpu_clock_options();
  options.scope = ProfilerScope::process;
  Profiler profiler(options);
  profiler.start();
  std::thread after(spin, std::ref(after_tid));
  go = true;
  before.join();
  after.join();
  profiler.stop();

  const Profile& profile = profiler.profile();
  Attribution of_before = attribute(profile, {before_tid.load()});
  Attribution of_after = attribute(profile, {after_tid.load()});
  std::printf(
      "process scope: %llu samples of the thread created before start, %llu after; "
      "%llu of the drain thread left out\n",
      static_cast<unsigned long long>(of_before.samples),
      static_cast<unsigned long long>(of_after.samples),
      static_cast<unsigned long long>(profiler.stats().drain_thread_samples));
  // 150 rounds: about 0.1 s, 400 samples each.
  EXPECT_GE(of_before.heavy + of_before.light, 150u);
  EXPECT_GE(of_after.heavy + of_after.light, 150u);
  Attribution both = attribute(profile, {before_tid.load(), after_tid.load()});
  const auto& stats = profiler.stats();
  // Two threads on two CPUs of a loaded machine: each thread's share is measured on its own
  // samples, the losses of either may fall on both.
  EXPECT_NEAR(both.heavy_percent(), 75.0,
              share_tolerance(75.0, both.heavy + both.light, stats.lost + stats.lost_samples));
  EXPECT_EQ(both.wrong_caller, 0u);
}

TEST(Profiler, ProfilesUnprivilegedAtParanoidTwo) {
  if (!perfscope::testing::running_as_root()) GTEST_SKIP() << "needs root to drop privileges";
  auto paranoid = perfscope::sys::read_sysctl("perf_event_paranoid");
  if (!paranoid || *paranoid < 2) GTEST_SKIP() << "perf_event_paranoid is below 2";
  std::fflush(stdout);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(10);
    try {
      // The defaults (cycles where the PMU samples, cpu-clock otherwise) open and sample.
      Profiler defaults;
      defaults.start();
      profiler_test_workload(default_rounds / 8);
      defaults.stop();
      if (defaults.stats().samples == 0 || defaults.profile().samples.empty()) _exit(16);
      // The known answer, with cpu-clock as everywhere else in this file.
      Profiler profiler(cpu_clock_options());
      profiler.start();
      profiler_test_workload(default_rounds / 2);
      profiler.stop();
      bool noticed = false;
      for (const auto& notice : profiler.notices()) {
        noticed |= notice.find("user space only") != std::string::npos;
      }
      if (!noticed) _exit(11);
      Attribution a = attribute(profiler.profile());
      std::printf(
          "unprivileged: %llu samples, %.1f %% heavy, %llu kernel samples left out; "
          "defaults (%s): %llu samples\n",
          static_cast<unsigned long long>(a.samples), a.heavy_percent(),
          static_cast<unsigned long long>(profiler.stats().kernel_samples_left_out),
          defaults.events().c_str(), static_cast<unsigned long long>(defaults.stats().samples));
      std::fflush(stdout);
      if (a.heavy + a.light < 200) _exit(12);
      const auto& stats = profiler.stats();
      double tolerance = share_tolerance(75.0, a.heavy + a.light, stats.lost + stats.lost_samples);
      if (std::abs(a.heavy_percent() - 75.0) > tolerance || a.wrong_caller != 0) _exit(13);
      // User space only: no kernel frame anywhere.
      for (const auto& frame : profiler.profile().frames) {
        if (frame.kernel) _exit(14);
      }
      _exit(0);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "%s\n", error.what());
      _exit(15);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10: setresuid failed, 11: no user-space-only notice, 12: too few samples, 13: wrong "
         "attribution, 14: a kernel frame, 15: the profiler failed, 16: no samples with the "
         "default events";
}

TEST(Profiler, MisuseGivesClearErrors) {
  Profiler profiler(cpu_clock_options());
  try {
    profiler.stop();
    ADD_FAILURE() << "stop() without start() did not throw";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("not running; call start() first"), std::string::npos)
        << error.what();
  }
  try {
    (void)profiler.profile();
    ADD_FAILURE() << "profile() before stop() did not throw";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("no profile yet"), std::string::npos) << error.what();
  }
  profiler.start();
  try {
    profiler.start();
    ADD_FAILURE() << "a second start() did not throw";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("already running; call stop() first"),
              std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(profiler.running());  // the first start() is intact
  profiler.stop();
  EXPECT_NO_THROW((void)profiler.profile());

  ProfilerOptions bad_pages = cpu_clock_options();
  bad_pages.buffer_pages = 48;
  EXPECT_THROW(Profiler{bad_pages}, std::invalid_argument);
  ProfilerOptions bad_stack = cpu_clock_options();
  bad_stack.call_graph = ProfilerCallGraph::dwarf;
  bad_stack.dwarf_stack_size = 100;
  EXPECT_THROW(Profiler{bad_stack}, std::invalid_argument);
  ProfilerOptions bad_events;
  bad_events.events = "cycles,,";
  EXPECT_THROW(Profiler{bad_events}, perfscope::EventSpecError);
  ProfilerOptions unknown;
  unknown.events = "no-such-event-here";
  EXPECT_THROW(Profiler{unknown}, std::exception);
}

TEST(Profiler, FrequencyAboveTheKernelMaximumIsLoweredWithANotice) {
  auto max_rate = perfscope::sys::read_sysctl("perf_event_max_sample_rate");
  if (!max_rate || *max_rate <= 0) GTEST_SKIP() << "no kernel.perf_event_max_sample_rate";
  ProfilerOptions options = cpu_clock_options();
  options.frequency = static_cast<std::uint64_t>(*max_rate) + 1000;
  Profiler profiler(options);
  EXPECT_EQ(profiler.frequency(), static_cast<std::uint64_t>(*max_rate));
  ASSERT_EQ(profiler.notices().size(), 1u);
  EXPECT_NE(profiler.notices()[0].find("perf_event_max_sample_rate"), std::string::npos);
  profiler.start();  // the kernel accepts the lowered rate
  profiler_test_workload(10);
  profiler.stop();
  EXPECT_GT(profiler.stats().samples, 0u);
}

TEST(Profiler, WritesEveryFormatToFiles) {
  Profiler profiler(cpu_clock_options());
  profiler.start();
  profiler_test_workload(default_rounds / 8);
  profiler.stop();
  auto directory = std::filesystem::temp_directory_path() /
                   ("perfscope_profiler_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  for (auto format : {ExportFormat::folded, ExportFormat::speedscope, ExportFormat::gecko,
                      ExportFormat::pprof, ExportFormat::json, ExportFormat::svg}) {
    auto path = directory / ("profile." + std::string(perfscope::export_format_name(format)));
    profiler.write_file(path.string(), format);
    std::ostringstream in_memory;
    profiler.write(in_memory, format);
    EXPECT_EQ(std::filesystem::file_size(path), in_memory.str().size())
        << perfscope::export_format_name(format);
    EXPECT_GT(in_memory.str().size(), 100u) << perfscope::export_format_name(format);
  }
  std::ifstream json(directory / "profile.json");
  std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("profiler_test_heavy_leaf"), std::string::npos);
  std::filesystem::remove_all(directory);
  try {
    profiler.write_file("/nonexistent-directory/profile.folded", ExportFormat::folded);
    ADD_FAILURE() << "writing into a missing directory did not throw";
  } catch (const perfscope::Error& error) {
    EXPECT_NE(std::string(error.what()).find("cannot create '/nonexistent-directory/"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
