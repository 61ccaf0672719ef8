// Running out of resources: file descriptors (a small RLIMIT_NOFILE), disk space (a tiny tmpfs),
// a read-only output directory, and a ring buffer far too small for the sample rate. Each must
// end in a clear error or a correct result with the loss reported, never a crash, a hang or an
// exit status of 0 over lost output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/core/sample_size.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
using perfscope::testing::expect_no_crash;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string prlimit = "/usr/bin/prlimit";

// A private directory, removed (and unmounted, when the test mounted on it) at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("perfscope_fault_" + name + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
    std::error_code ignored;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  // A tmpfs of `size` (e.g. "64k") with these extra options ("ro"), as root only.
  bool mount_tmpfs(const std::string& size, const std::string& extra = "") {
    std::string options = "size=" + size + (extra.empty() ? "" : "," + extra);
    mounted_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) == 0;
    return mounted_;
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
  bool mounted_ = false;
};

// n software events (each one fd per thread or CPU).
std::string many_events(int n) {
  const char* names[] = {"task-clock", "page-faults", "context-switches", "cpu-migrations"};
  std::string list;
  // Appended piecewise: ("," + std::string(name)) at -O3 is a false -Wrestrict for GCC 12.
  for (int i = 0; i < n; ++i) list.append(i ? "," : "").append(names[i % 4]);
  return list;
}

std::vector<std::string> with_limit(const std::string& nofile, std::vector<std::string> args) {
  std::vector<std::string> argv{prlimit, "--nofile=" + nofile, PERFSCOPE_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Totals of a recording: samples, LOST records and what they say was lost, LOST_SAMPLES.
struct FileLoss {
  std::uint64_t samples = 0, lost_records = 0, lost = 0, lost_samples = 0;
};

FileLoss loss_in_file(const std::string& path) {
  FileLoss totals;
  auto reader = perfscope::PerfDataReader::open(path);
  auto error = reader.for_each_record([&](const perfscope::PerfDataRecord& record) {
    auto word = [&](std::size_t index) {
      std::uint64_t value = 0;
      std::size_t at = 8 + index * 8;
      if (at + 8 <= record.view.bytes.size()) {
        std::memcpy(&value, record.view.bytes.data() + at, sizeof value);
      }
      return value;
    };
    switch (static_cast<perfscope::abi::RecordType>(record.view.type())) {
      case perfscope::abi::RecordType::sample: ++totals.samples; break;
      case perfscope::abi::RecordType::lost:
        ++totals.lost_records;
        totals.lost += word(1);  // id, lost
        break;
      case perfscope::abi::RecordType::lost_samples: totals.lost_samples += word(0); break;
      default: break;
    }
  });
  EXPECT_FALSE(error) << error->what();
  return totals;
}

// "[ perfscope record: S samples, L LOST records (N records lost), M lost samples, ..."
FileLoss loss_reported(const std::string& err) {
  FileLoss totals;
  auto at = err.find("[ perfscope record: ");
  if (at == std::string::npos) return totals;
  unsigned long long samples = 0, records = 0, lost = 0, lost_samples = 0;
  std::sscanf(err.c_str() + at,
              "[ perfscope record: %llu samples, %llu LOST records (%llu records lost), %llu lost "
              "samples",
              &samples, &records, &lost, &lost_samples);
  return {samples, records, lost, lost_samples};
}

// The hard limit is too low for the events: a clear error that names the limit and the fix, and
// no recording left behind.
TEST(OpenFilesLimit, HardLimitTooLowIsAClearError) {
  if (::access(prlimit.c_str(), X_OK) != 0) GTEST_SKIP() << "util-linux prlimit is not installed";
  TempDir dir("emfile_hard");
  std::string output = dir / "perf.data";
  for (const auto& args :
       {std::vector<std::string>{"stat", "-e", many_events(40), "--", work_helper, "exit", "0"},
        std::vector<std::string>{"record", "-e", many_events(40), "-o", output, "--", work_helper,
                                 "exit", "0"}}) {
    SCOPED_TRACE(args[0]);
    auto result = pt::run_command(with_limit("20:20", args));
    expect_no_crash(result);
    EXPECT_EQ(result.exit_status, 1) << result.err;
    EXPECT_THAT(result.err, HasSubstr("EMFILE"));
    EXPECT_THAT(result.err, HasSubstr("RLIMIT_NOFILE) is 20 (hard 20)"));
    EXPECT_THAT(result.err, HasSubstr("raise the hard limit"));
    EXPECT_FALSE(std::filesystem::exists(output));
  }
}

// The soft limit is too low but the hard one is not: raised, with a notice, and everything counts.
TEST(OpenFilesLimit, SoftLimitIsRaisedWithANotice) {
  if (::access(prlimit.c_str(), X_OK) != 0) GTEST_SKIP() << "util-linux prlimit is not installed";
  TempDir dir("emfile_soft");
  std::string output = dir / "perf.data";
  auto stat = pt::run_command(with_limit(
      "20:4096", {"stat", "--csv", "-e", many_events(40), "--", work_helper, "faults", "100"}));
  expect_no_crash(stat);
  ASSERT_EQ(stat.exit_status, 0) << stat.err;
  EXPECT_THAT(stat.err, HasSubstr("raised the open-files soft limit (RLIMIT_NOFILE) from 20 to"));
  // All ten copies of page-faults counted the command's faults.
  int counted = 0;
  std::istringstream lines(stat.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("page-faults,", 0) == 0 && std::atol(line.c_str() + 12) >= 100) {
      ++counted;
    }
  }
  EXPECT_EQ(counted, 10) << stat.err;

  auto record =
      pt::run_command(with_limit("20:4096", {"record", "-e", many_events(40), "-o", output, "--",
                                             work_helper, "faults", "100"}));
  expect_no_crash(record);
  ASSERT_EQ(record.exit_status, 0) << record.err;
  EXPECT_THAT(record.err, HasSubstr("raised the open-files soft limit (RLIMIT_NOFILE) from 20 to"));
  auto reader = perfscope::PerfDataReader::open(output);
  EXPECT_TRUE(reader.notes().empty());
  EXPECT_EQ(reader.events().size(), 40u);
}

// The disk fills up while recording: the recorder says so and fails, promptly (the command is
// ended, not waited for), and never prints its success summary.
TEST(OutputDeviceFull, RecordFailsClearlyAndEndsTheCommand) {
  if (!pt::running_as_root()) GTEST_SKIP() << "mounting a small tmpfs needs root";
  TempDir dir("enospc");
  ASSERT_TRUE(dir.mount_tmpfs("256k")) << "mount -t tmpfs failed";
  std::string output = dir / "perf.data";
  auto started = std::chrono::steady_clock::now();
  // About 20 s of getpid calls at 50000 samples/s: megabytes a second into 256 KiB.
  auto result = pt::run_perfscope({"record", "-e", "task-clock", "-c", "20000", "-o", output, "--",
                                   work_helper, "getpid", "200000000"});
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  expect_no_crash(result);
  EXPECT_EQ(result.exit_status, 1) << result.err;
  EXPECT_THAT(result.err, HasSubstr("No space left on device"));
  EXPECT_THAT(result.err, HasSubstr("the disk is full"));
  EXPECT_THAT(result.err, Not(HasSubstr("[ perfscope record:")));
  EXPECT_THAT(result.err, Not(HasSubstr("[ perf record:")));
  EXPECT_LT(seconds, 10.0) << "the recorder waited for its command after the error";
  // What did reach the disk is a readable (unfinished) recording or a clear refusal.
  try {
    auto reader = perfscope::PerfDataReader::open(output);
    (void)reader.for_each_record([](const perfscope::PerfDataRecord&) {});
  } catch (const perfscope::PerfDataError& error) {
    SUCCEED() << error.what();
  }
}

// Full before the first byte: the header cannot be written. stat -o on a full disk fails too
// (the counts are written at the end, through a buffer).
TEST(OutputDeviceFull, FullFromTheStart) {
  if (!pt::running_as_root()) GTEST_SKIP() << "mounting a small tmpfs needs root";
  TempDir dir("enospc_full");
  ASSERT_TRUE(dir.mount_tmpfs("64k")) << "mount -t tmpfs failed";
  {
    std::ofstream filler(dir / "filler", std::ios::binary);
    std::string block(4096, 'x');
    for (int i = 0; i < 64 && filler; ++i) filler << block;
  }
  auto record =
      pt::run_perfscope({"record", "-o", dir / "perf.data", "--", work_helper, "getpid", "1000"});
  expect_no_crash(record);
  EXPECT_EQ(record.exit_status, 1) << record.err;
  EXPECT_THAT(record.err, HasSubstr("No space left on device"));
  EXPECT_THAT(record.err, Not(HasSubstr("[ perfscope record:")));
  EXPECT_THAT(record.err, Not(HasSubstr("[ perf record:")));

  auto stat = pt::run_perfscope(
      {"stat", "-e", "task-clock", "-o", dir / "counts", "--", work_helper, "getpid", "1000"});
  expect_no_crash(stat);
  EXPECT_EQ(stat.exit_status, 1) << stat.err;
  EXPECT_THAT(stat.err, HasSubstr("No space left on device"));
}

// A directory the recorder may not write: refused before the command runs, nothing left behind.
TEST(ReadOnlyOutput, RecordAndStatRefuseAndLeaveNothing) {
  TempDir dir("readonly");
  if (pt::running_as_root()) {
    // Root ignores directory permissions: a read-only mount refuses even root.
    ASSERT_TRUE(dir.mount_tmpfs("64k", "ro")) << "mount -o ro failed";
  } else {
    ASSERT_EQ(::chmod(dir.path().c_str(), 0555), 0);
  }
  std::string output = dir / "perf.data";
  auto record = pt::run_perfscope({"record", "-o", output, "--", work_helper, "getpid", "1000"});
  expect_no_crash(record);
  EXPECT_EQ(record.exit_status, 1) << record.err;
  EXPECT_THAT(record.err, HasSubstr("cannot create " + output));
  EXPECT_THAT(record.err,
              AnyOf(HasSubstr("Read-only file system"), HasSubstr("Permission denied")));
  EXPECT_THAT(record.err, HasSubstr("-o FILE"));
  EXPECT_FALSE(std::filesystem::exists(output));

  auto stat = pt::run_perfscope(
      {"stat", "-e", "task-clock", "-o", dir / "counts", "--", work_helper, "getpid", "10"});
  expect_no_crash(stat);
  EXPECT_EQ(stat.exit_status, 1) << stat.err;
  EXPECT_THAT(stat.err, HasSubstr("cannot write"));
  EXPECT_FALSE(std::filesystem::exists(dir / "counts"));
}

// One page of ring buffer for a tracepoint hit a million times: most records are lost, and every
// lost one is accounted for. Samples in the file plus samples lost is the exact number of calls,
// the summary says what the file says, and the run ends.
TEST(TinyRingBuffer, LossIsCountedReportedAndNeverHangs) {
  if (!pt::tracefs_available()) GTEST_SKIP() << "tracefs is not mounted (tracepoints need it)";
  if (!pt::running_as_root()) GTEST_SKIP() << "tracepoint samples need root at paranoid 2";
  TempDir dir("tiny_ring");
  std::string output = dir / "perf.data";
  constexpr long calls = 1000000;
  auto started = std::chrono::steady_clock::now();
  auto result =
      pt::run_perfscope({"record", "-e", "syscalls:sys_enter_getpid", "-c", "1", "--mmap-pages",
                         "1", "-o", output, "--", work_helper, "getpid", std::to_string(calls)});
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_LT(seconds, 60.0);
  FileLoss file = loss_in_file(output);
  FileLoss reported = loss_reported(result.err);
  EXPECT_GT(file.lost_records, 0u) << "one page should not hold " << calls << " samples";
  EXPECT_EQ(reported.samples, file.samples) << result.err;
  EXPECT_EQ(reported.lost_records, file.lost_records) << result.err;
  EXPECT_EQ(reported.lost, file.lost) << result.err;
  EXPECT_EQ(reported.lost_samples, file.lost_samples) << result.err;
  // LOST counts every record lost (a few COMM/MMAP among them): with the samples kept they are
  // every call. The recorder's LOST_SAMPLES record at the end (as perf record writes one) is the
  // kernel's own count of the same losses (PERF_FORMAT_LOST, Linux 6.0 and newer).
  std::uint64_t accounted = file.samples + file.lost;
  if (file.lost_samples != 0) {
    EXPECT_EQ(file.lost_samples, file.lost) << result.err;
  }
  EXPECT_GE(accounted, static_cast<std::uint64_t>(calls)) << result.err;
  EXPECT_LE(accounted, static_cast<std::uint64_t>(calls) + 64) << result.err;
}

// The same loss in threads and processes created after the recording started (inherited
// events): the kernel charges an inherited event's losses to the event perfscope opened
// (__perf_output_begin writes through event->parent), so the final PERF_FORMAT_LOST read covers
// them. A shell pipes the go byte to work_helper, whose 4 threads make 250 000 calls each.
TEST(TinyRingBuffer, LossInThreadsCreatedLaterIsCounted) {
  if (!pt::tracefs_available()) GTEST_SKIP() << "tracefs is not mounted (tracepoints need it)";
  if (!pt::running_as_root()) GTEST_SKIP() << "tracepoint samples need root at paranoid 2";
  TempDir dir("tiny_ring_threads");
  std::string output = dir / "perf.data";
  constexpr long threads = 4, calls = 250000;
  auto result =
      pt::run_perfscope({"record", "-e", "syscalls:sys_enter_getpid", "-c", "1", "--mmap-pages",
                         "1", "-o", output, "--", "/bin/sh", "-c",
                         "echo go | " + work_helper + " threads " + std::to_string(threads) + " " +
                             std::to_string(calls) + " >/dev/null"});
  expect_no_crash(result);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  FileLoss file = loss_in_file(output);
  FileLoss reported = loss_reported(result.err);
  EXPECT_GT(file.lost, 0u) << "one page should not hold " << threads * calls << " samples";
  EXPECT_EQ(reported.samples, file.samples) << result.err;
  EXPECT_EQ(reported.lost, file.lost) << result.err;
  // Every call, the shell's own getpid and a few lost COMM/MMAP/FORK records at most on top.
  std::uint64_t accounted = file.samples + file.lost;
  if (file.lost_samples != 0) {
    EXPECT_EQ(file.lost_samples, file.lost) << result.err;
  }
  EXPECT_GE(accounted, static_cast<std::uint64_t>(threads * calls)) << result.err;
  EXPECT_LE(accounted, static_cast<std::uint64_t>(threads * calls) + 64) << result.err;
}

// A buffer smaller than one sample: `--call-graph dwarf` dumps 8 KiB of stack with every sample,
// one page holds 4 KiB. perf 6.1 records only LOST records and says "lost 100.00%" at the end;
// perfscope refuses before starting the command, with the sizes and the fix. The fix it names is
// enough: the same recording with the suggested pages keeps samples.
TEST(TinyRingBuffer, SmallerThanOneSampleIsRefusedWithTheSizes) {
  TempDir dir("smaller_than_sample");
  std::string output = dir / "perf.data";
  std::string marker = dir / "ran";
  std::vector<std::string> refused{"record",       "-e",    "task-clock", "-c", "100000",
                                   "--call-graph", "dwarf", "-m",         "1",  "-o",
                                   output,         "--",    "/bin/sh",    "-c", "touch " + marker};
  auto result = pt::run_perfscope(refused);
  expect_no_crash(result);
  EXPECT_EQ(result.exit_status, 1) << result.err;
  EXPECT_THAT(result.err, HasSubstr("8192 bytes of user stack dump")) << result.err;
  EXPECT_THAT(result.err, HasSubstr("ring buffer of 1 page (4096 bytes) holds records of at "
                                    "most 4088 bytes: the kernel would drop every sample"));
  EXPECT_THAT(result.err, HasSubstr("at least 4 pages"));
  EXPECT_THAT(result.err, HasSubstr("perfscope record -m 16"));
  EXPECT_THAT(result.err, HasSubstr("--call-graph dwarf,SIZE"));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran";
  EXPECT_FALSE(std::filesystem::exists(output));

  // A smaller dump fits the page: no refusal (it is the sample's size that counts).
  auto small_dump =
      pt::run_perfscope({"record", "-e", "task-clock", "-c", "100000", "--call-graph", "dwarf,2048",
                         "-m", "1", "-o", output, "--", work_helper, "getpid", "300000"});
  expect_no_crash(small_dump);
  ASSERT_EQ(small_dump.exit_status, 0) << small_dump.err;
  EXPECT_GT(loss_in_file(output).samples, 0u) << small_dump.err;

  // --keep-stacks: the samples as the kernel wrote them, which the bound below is about.
  auto fixed = pt::run_perfscope({"record", "-e", "task-clock", "-c", "100000", "--call-graph",
                                  "dwarf", "--keep-stacks", "-m", "16", "-o", output, "--",
                                  work_helper, "getpid", "300000"});
  expect_no_crash(fixed);
  ASSERT_EQ(fixed.exit_status, 0) << fixed.err;
  FileLoss file = loss_in_file(output);
  FileLoss reported = loss_reported(fixed.err);
  EXPECT_GT(file.samples, 0u) << fixed.err;
  EXPECT_EQ(reported.samples, file.samples) << fixed.err;
  EXPECT_EQ(reported.lost, file.lost) << fixed.err;

  // The size the refusal is computed from is a lower bound: no sample the kernel wrote is
  // smaller (a call chain of more than two entries makes most of them larger).
  auto reader = perfscope::PerfDataReader::open(output);
  ASSERT_EQ(reader.events().size(), 1u);
  auto bound = perfscope::smallest_user_sample(reader.events()[0].attr);
  EXPECT_EQ(bound.stack_dump, 8192u);
  std::size_t smallest = ~std::size_t{0}, checked = 0;
  auto error = reader.for_each_record([&](const perfscope::PerfDataRecord& record) {
    if (record.view.type() != static_cast<std::uint32_t>(perfscope::abi::RecordType::sample)) {
      return;
    }
    smallest = std::min<std::size_t>(smallest, record.view.bytes.size());
    ++checked;
  });
  ASSERT_FALSE(error) << error->what();
  ASSERT_GT(checked, 0u);
  EXPECT_GE(smallest, bound.bytes);
  // 127 frames of call chain at the most (kernel.perf_event_max_stack) and its context markers.
  EXPECT_LE(smallest, bound.bytes + 140 * 8);
}

}  // namespace
