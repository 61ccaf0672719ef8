// perf record's options of issue #44 that change what is recorded: -k/--clockid, --all-user,
// --all-kernel, --user-callchains, --kernel-callchains, --filter, -R, --sample-identifier,
// --no-buffering, --max-size, --timestamp-filename, -D/--delay, --control, --synth,
// --buildid-all and --dry-run. Each is
// judged by what the file holds (perf evlist -v reads the attributes perf would read, perfscope
// script the samples) and against perf where perf is installed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace pt = perfscope::testing;
namespace fs = std::filesystem;

namespace {

const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string perf_path = "/usr/bin/perf";
constexpr std::uint64_t kernel_space = 0xffff800000000000ULL;

bool have_perf() { return ::access(perf_path.c_str(), X_OK) == 0; }

class RecordPerfOptions : public ::testing::Test {
 protected:
  std::string file(const std::string& name) { return dir_.path() + "/" + name; }
  // perfscope record OPTIONS -o FILE -- work_helper getpid CALLS; the file.
  std::string record(const std::vector<std::string>& options, const std::string& calls = "1000") {
    std::string output = file("r" + std::to_string(++recordings_) + ".data");
    std::vector<std::string> command{"record", "-q", "-o", output};
    command.insert(command.end(), options.begin(), options.end());
    command.insert(command.end(), {"--", work_helper, "getpid", calls});
    auto recorded = pt::run_perfscope(command);
    EXPECT_EQ(recorded.exit_status, 0) << recorded.err;
    return output;
  }
  // The first line of `perfscope evlist -v`: the first event's attributes as perf prints them.
  std::string attributes(const std::string& recording) {
    auto listed = pt::run_perfscope({"evlist", "-v", "-i", recording});
    EXPECT_EQ(listed.exit_status, 0) << listed.err;
    return listed.out.substr(0, listed.out.find('\n'));
  }
  // The sample addresses `perfscope script -F FIELD` prints, as numbers.
  std::vector<std::uint64_t> addresses(const std::string& recording, const std::string& field) {
    auto script = pt::run_perfscope({"script", "-F", field, "-i", recording});
    EXPECT_EQ(script.exit_status, 0) << script.err;
    std::vector<std::uint64_t> found;
    std::istringstream words(script.out);
    for (std::string word; words >> word;) {
      if (word.find_first_not_of("0123456789abcdef") == std::string::npos) {
        found.push_back(std::stoull(word, nullptr, 16));
      }
    }
    return found;
  }
  std::size_t line_count(const std::string& text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  }
  pt::TempDir dir_;
  int recordings_ = 0;
};

std::uint64_t realtime_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(now.tv_nsec);
}

TEST_F(RecordPerfOptions, ClockidSetsTheClockOfSampleTimes) {
  std::uint64_t before = realtime_ns();
  std::string recording = record({"-e", "cpu-clock", "-k", "CLOCK_REALTIME"}, "200000");
  std::uint64_t after = realtime_ns();
  // clockid 0 (realtime) is left out of perf's attribute line, as perf leaves out every zero.
  std::string attr = attributes(recording);
  EXPECT_NE(attr.find("use_clockid: 1"), std::string::npos) << attr;
  EXPECT_EQ(attr.find(", clockid:"), std::string::npos) << attr;
  auto times = pt::run_perfscope({"script", "-F", "time", "--ns", "-i", recording});
  ASSERT_EQ(times.exit_status, 0) << times.err;
  std::istringstream lines(times.out);
  std::size_t samples = 0;
  for (std::string line; std::getline(lines, line);) {
    std::uint64_t seconds = std::stoull(line);
    std::uint64_t ns = std::stoull(line.substr(line.find('.') + 1));
    std::uint64_t time = seconds * 1000000000ULL + ns;
    EXPECT_GE(time, before) << line;
    EXPECT_LE(time, after) << line;
    ++samples;
  }
  EXPECT_GE(samples, 1u);
  // The header names the clock as perf's does.
  if (have_perf()) {
    auto header = pt::run_command({perf_path, "report", "--header-only", "-i", recording});
    EXPECT_NE(header.out.find("# clockid: realtime (0)"), std::string::npos) << header.out;
  }
  EXPECT_NE(attributes(record({"-e", "cpu-clock", "-k", "boot"})).find(", clockid: 7"),
            std::string::npos);
  auto unknown = pt::run_perfscope({"record", "-k", "sundial", "-o", file("x.data"), "true"});
  EXPECT_EQ(unknown.exit_status, 129);
  EXPECT_NE(unknown.err.find("unknown clockid 'sundial'"), std::string::npos) << unknown.err;
}

TEST_F(RecordPerfOptions, AllUserAndAllKernelSetEveryEventsExcludeBits) {
  // Mostly in the kernel: 200000 system calls.
  std::string user = record({"-e", "cpu-clock", "--all-user"}, "200000");
  EXPECT_NE(attributes(user).find("exclude_kernel: 1"), std::string::npos);
  auto user_ips = addresses(user, "ip");
  EXPECT_GE(user_ips.size(), 1u);
  for (std::uint64_t ip : user_ips) EXPECT_LT(ip, kernel_space) << std::hex << ip;
  std::string kernel = record({"-e", "cpu-clock", "--all-kernel"}, "200000");
  std::string kernel_attr = attributes(kernel);
  EXPECT_NE(kernel_attr.find("exclude_user: 1"), std::string::npos) << kernel_attr;
  EXPECT_EQ(kernel_attr.find("exclude_kernel"), std::string::npos) << kernel_attr;
  auto kernel_ips = addresses(kernel, "ip");
  EXPECT_GE(kernel_ips.size(), 1u);
  for (std::uint64_t ip : kernel_ips) EXPECT_GE(ip, kernel_space) << std::hex << ip;
}

TEST_F(RecordPerfOptions, CallchainsWithoutTheirKernelOrUserPart) {
  std::string user_only = record({"-e", "cpu-clock", "-g", "--user-callchains"}, "200000");
  EXPECT_NE(attributes(user_only).find("exclude_callchain_kernel: 1"), std::string::npos);
  auto user_frames = addresses(user_only, "ip");
  EXPECT_GE(user_frames.size(), 1u);
  for (std::uint64_t frame : user_frames) EXPECT_LT(frame, kernel_space) << std::hex << frame;
  std::string kernel_only = record({"-e", "cpu-clock", "-g", "--kernel-callchains"}, "200000");
  std::string attr = attributes(kernel_only);
  EXPECT_NE(attr.find("exclude_callchain_user: 1"), std::string::npos) << attr;
  // No user stack copy either: what it would fill is not recorded.
  EXPECT_EQ(attr.find("STACK_USER"), std::string::npos) << attr;
  // A sample in user space keeps its IP and no chain; one in the kernel, kernel frames only.
  auto script = pt::run_perfscope({"script", "-F", "time,ip", "-i", kernel_only});
  ASSERT_EQ(script.exit_status, 0) << script.err;
  std::vector<std::vector<std::uint64_t>> chains;
  std::istringstream lines(script.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    if (line[0] != '\t') {
      chains.emplace_back();
    } else if (!chains.empty()) {
      chains.back().push_back(std::stoull(line.substr(line.find_first_not_of(" \t")), nullptr, 16));
    }
  }
  std::size_t in_kernel = 0;
  for (const auto& chain : chains) {
    ASSERT_FALSE(chain.empty());
    if (chain[0] < kernel_space) {
      EXPECT_EQ(chain.size(), 1u) << std::hex << chain[0];
      continue;
    }
    ++in_kernel;
    for (std::uint64_t frame : chain) EXPECT_GE(frame, kernel_space) << std::hex << frame;
  }
  EXPECT_GE(in_kernel, 1u);
}

TEST_F(RecordPerfOptions, FilterKeepsTheHitsItMatchesOnTheEventsOfItsEventOption) {
  if (!pt::tracefs_available() || !pt::running_as_root()) {
    GTEST_SKIP() << "tracepoints need tracefs and root here";
  }
  const std::string getpid_filter = "id == " + std::to_string(SYS_getpid);
  // The filter is for sys_enter (the -e before it); sys_exit sees every system call.
  std::string recording = record({"-c", "1", "-e", "raw_syscalls:sys_enter", "--filter",
                                  getpid_filter, "-e", "raw_syscalls:sys_exit"});
  auto enter = pt::run_perfscope({"script", "-F", "event", "-i", recording});
  ASSERT_EQ(enter.exit_status, 0) << enter.err;
  std::size_t enters = 0, exits = 0;
  std::istringstream lines(enter.out);
  for (std::string line; std::getline(lines, line);) {
    enters += line.find("sys_enter") != std::string::npos;
    exits += line.find("sys_exit") != std::string::npos;
  }
  EXPECT_EQ(enters, 1000u);  // the helper's getpid calls, exactly
  EXPECT_GT(exits, 1000u);   // and every other system call's exit too
  if (have_perf()) {
    auto perf = pt::run_command({perf_path, "script", "-i", recording});
    EXPECT_EQ(perf.exit_status, 0) << perf.err;
    EXPECT_EQ(line_count(perf.out), enters + exits);
  }
  auto not_tracepoint = pt::run_perfscope(
      {"record", "-e", "cpu-clock", "--filter", "id == 1", "-o", file("x.data"), "true"});
  EXPECT_NE(not_tracepoint.exit_status, 0);
  EXPECT_NE(not_tracepoint.err.find("is not a tracepoint"), std::string::npos)
      << not_tracepoint.err;
  auto no_event =
      pt::run_perfscope({"record", "--filter", "id == 1", "-o", file("x.data"), "true"});
  EXPECT_NE(no_event.exit_status, 0);
  EXPECT_NE(no_event.err.find("has no event"), std::string::npos) << no_event.err;
}

// -D MS: what the command does before the delay is not sampled, what it does after is, every
// hit; -D -1 leaves the events disabled. perf records the same file's samples.
TEST_F(RecordPerfOptions, DelaySamplesOnlyWhatFollowsIt) {
  if (!pt::tracefs_available() || !pt::running_as_root()) {
    GTEST_SKIP() << "the getpid tracepoint needs tracefs and root here";
  }
  // 500 calls at once, a pause of 1200 ms, then 700 calls; sampling starts after 400 ms.
  auto hits = [&](const std::vector<std::string>& delay, std::string& err) {
    std::string output = file("delay" + std::to_string(++recordings_) + ".data");
    std::vector<std::string> command{"record", "-e",  "syscalls:sys_enter_getpid", "-c", "1",
                                     "-o",     output};
    command.insert(command.end(), delay.begin(), delay.end());
    command.insert(command.end(), {"--", work_helper, "getpid-delay-getpid", "500", "1200", "700"});
    auto recorded = pt::run_perfscope(command);
    EXPECT_EQ(recorded.exit_status, 0) << recorded.err;
    err = recorded.err;
    auto script = pt::run_perfscope({"script", "-F", "event", "-i", output});
    EXPECT_EQ(script.exit_status, 0) << script.err;
    return line_count(script.out);
  };
  std::string err;
  EXPECT_EQ(hits({}, err), 1200u) << err;
  EXPECT_EQ(err.find("Events disabled"), std::string::npos) << err;
  EXPECT_EQ(hits({"-D", "400"}, err), 700u) << err;
  EXPECT_EQ(err.rfind("Events disabled\nEvents enabled\n", 0), 0u) << err;
  EXPECT_EQ(hits({"--delay", "-1"}, err), 0u) << err;
  EXPECT_EQ(err.rfind("Events disabled\n[ perf record:", 0), 0u) << err;
  if (have_perf()) {
    auto perf = pt::run_command({perf_path, "script", "-i", file("delay2.data")});
    EXPECT_EQ(perf.exit_status, 0) << perf.err;
    EXPECT_EQ(line_count(perf.out), 700u);
  }
  auto bad = pt::run_perfscope({"record", "-D", "-2", "-o", file("x.data"), "true"});
  EXPECT_EQ(bad.exit_status, 129) << bad.err;
}

// How many records of `type` ("COMM", "MMAP2") report --stats counts in a file.
std::uint64_t records_of(const std::string& recording, const std::string& type) {
  auto stats = pt::run_perfscope({"report", "--stats", "-i", recording});
  EXPECT_EQ(stats.exit_status, 0) << stats.err;
  std::string label = " " + type + " events:";
  std::size_t at = stats.out.find(label);
  if (at == std::string::npos) return 0;
  return std::stoull(stats.out.substr(at + label.size()));
}

// --synth: system-wide, the records of the processes that exist are written by default (a COMM
// and the code maps of each), their COMMs alone with `task`, none with `no`; what the kernel
// writes while recording (the sleep's exec) is kept every time. perf reads each file. (Bounds at
// half the default's counts: the suite's own programs start and end beside the recordings.)
TEST_F(RecordPerfOptions, SynthChoosesTheRecordsOfWhatExistsAtTheStart) {
  if (!pt::running_as_root()) GTEST_SKIP() << "a system-wide recording needs root here";
  auto record_all = [&](const std::vector<std::string>& synth) {
    std::string output = file("synth" + std::to_string(++recordings_) + ".data");
    std::vector<std::string> command{"record", "-q", "-a", "-e", "cpu-clock", "-o", output};
    command.insert(command.end(), synth.begin(), synth.end());
    command.insert(command.end(), {"--", "sleep", "0.1"});
    auto recorded = pt::run_perfscope(command);
    EXPECT_EQ(recorded.exit_status, 0) << recorded.err;
    if (have_perf()) {
      auto perf = pt::run_command({perf_path, "report", "--stats", "-i", output});
      EXPECT_EQ(perf.exit_status, 0) << perf.err;
      EXPECT_EQ(perf.err.find("WARNING"), std::string::npos) << perf.err;
    }
    return output;
  };
  std::string all = record_all({});
  std::string tasks = record_all({"--synth", "task"});
  std::string none = record_all({"--synth=NO"});
  std::string mmaps = record_all({"--synth", "cgroup,mmap"});
  std::uint64_t processes = records_of(all, "COMM");
  std::uint64_t maps = records_of(all, "MMAP2");
  ASSERT_GE(processes, 20u);  // the machine's processes' threads, and the sleep's exec
  ASSERT_GE(maps, processes / 2);
  // (The machine's processes come and go between the recordings: a suite runs beside them.)
  EXPECT_GE(records_of(tasks, "COMM"), processes / 2);
  // The sleep's own maps, and those of programs started meanwhile.
  EXPECT_LT(records_of(tasks, "MMAP2"), maps / 2);
  EXPECT_GE(records_of(mmaps, "MMAP2"), maps / 2);
  EXPECT_LT(records_of(none, "COMM"), processes / 2);
  // The sleep's two: named before its exec, as perf names it, then its exec (and those of other
  // programs started meanwhile).
  EXPECT_GE(records_of(none, "COMM"), 2u);
  auto bad = pt::run_perfscope({"record", "--synth", "files", "-o", file("x.data"), "true"});
  EXPECT_EQ(bad.exit_status, 129) << bad.err;
  EXPECT_NE(bad.err.find("unknown kind 'files'"), std::string::npos) << bad.err;
}

std::set<std::string> files_with_build_ids(const std::vector<std::string>& lister) {
  auto files = pt::build_id_list_files(lister);
  return {files.begin(), files.end()};
}

// --buildid-all: the build ids of every file the command mapped, not only of those samples hit
// (kernel code alone here); perf lists the same files.
TEST_F(RecordPerfOptions, BuildidAllListsEveryMappedFile) {
  const std::string helper = fs::canonical(work_helper).string();
  std::string hits = record({"-e", "cpu-clock", "--all-kernel"}, "20000");
  std::string every = record({"-e", "cpu-clock", "--all-kernel", "--buildid-all"}, "20000");
  auto hit_files = files_with_build_ids({PERFSCOPE_CLI_PATH, "buildid-list", "-i", hits});
  auto all_files = files_with_build_ids({PERFSCOPE_CLI_PATH, "buildid-list", "-i", every});
  EXPECT_EQ(hit_files.count(helper), 0u);
  EXPECT_EQ(all_files.count(helper), 1u);
  EXPECT_EQ(all_files.count("/usr/lib/x86_64-linux-gnu/libc.so.6"), 1u);
  EXPECT_GE(all_files.size(), hit_files.size() + 2);
  if (have_perf()) {
    EXPECT_EQ(files_with_build_ids({perf_path, "buildid-list", "-i", every}), all_files);
  }
}

// --control with -D -1: the events wait for 'enable' from the FIFO, each command is answered
// "ack" on the other; 500 getpid hits after it, none of the 300 before; 'stop' ends the recording
// and its command as a stop signal does.
TEST_F(RecordPerfOptions, ControlFifoEnablesAndStops) {
  if (!pt::tracefs_available() || !pt::running_as_root()) {
    GTEST_SKIP() << "the getpid tracepoint needs tracefs and root here";
  }
  const std::string control = file("ctl"), ack = file("ack");
  ASSERT_EQ(::mkfifo(control.c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(ack.c_str(), 0600), 0);
  const std::string spec = "fifo:" + control + "," + ack;
  std::string output = file("control.data");
  pt::BackgroundCommand recorder({PERFSCOPE_CLI_PATH, "record", "-D", "-1", "--control", spec, "-e",
                                  "syscalls:sys_enter_getpid", "-c", "1", "-o", output, "--",
                                  work_helper, "getpid-delay-getpid", "300", "1500", "500"});
  auto recorded = pt::run_enabled_by_control(recorder, control, ack);
  EXPECT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_NE(recorded.err.find("Events disabled\nEvents enabled\n"), std::string::npos)
      << recorded.err;
  auto script = pt::run_perfscope({"script", "-F", "event", "-i", output});
  EXPECT_EQ(script.exit_status, 0) << script.err;
  EXPECT_EQ(line_count(script.out), 500u);

  std::string stopped = file("stopped.data");
  pt::BackgroundCommand long_run({PERFSCOPE_CLI_PATH, "record", "-v", "--control", spec, "-e",
                                  "syscalls:sys_enter_getpid", "-c", "1", "-o", stopped, "--",
                                  work_helper, "getpid-delay-getpid", "10", "60000", "10"});
  ASSERT_TRUE(long_run.wait_for_error("perfscope: recording ", 20000)) << long_run.err();
  ::usleep(500000);
  EXPECT_EQ(pt::control_command(control, ack, "stop"), "ack\n");
  auto ended = long_run.wait(20000);
  EXPECT_FALSE(long_run.timed_out()) << ended.err;
  EXPECT_EQ(ended.exit_status, 128 + SIGTERM) << ended.err;  // the command's, as at Ctrl-C
  auto kept = pt::run_perfscope({"script", "-F", "event", "-i", stopped});
  EXPECT_EQ(kept.exit_status, 0) << kept.err;
  EXPECT_EQ(line_count(kept.out), 10u);

  auto bad = pt::run_perfscope({"record", "--control", "pipe:x", "-o", file("x.data"), "true"});
  EXPECT_EQ(bad.exit_status, 129) << bad.err;
  auto missing = pt::run_perfscope(
      {"record", "--control", "fifo:" + file("none"), "-o", file("x.data"), "true"});
  EXPECT_NE(missing.exit_status, 0);
  EXPECT_NE(missing.err.find("is not a FIFO"), std::string::npos) << missing.err;
}

TEST_F(RecordPerfOptions, RawSamplesIdentifierAndNoBuffering) {
  std::string recording =
      record({"-e", "cpu-clock", "-R", "--sample-identifier", "--no-buffering", "-P"}, "200000");
  std::string attr = attributes(recording);
  EXPECT_NE(attr.find("sample_type: IP|TID|TIME|CPU|PERIOD|RAW|IDENTIFIER,"), std::string::npos)
      << attr;
  EXPECT_NE(attr.find("{ wakeup_events, wakeup_watermark }: 1,"), std::string::npos) << attr;
  EXPECT_EQ(attr.find("watermark: 1,"), std::string::npos) << attr;
  auto ours = pt::run_perfscope({"script", "-F", "tid,cpu,time,ip", "-i", recording});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_GE(line_count(ours.out), 1u);
  if (have_perf()) {
    auto perf = pt::run_command({perf_path, "script", "-F", "tid,cpu,time,ip", "-i", recording});
    EXPECT_EQ(perf.exit_status, 0) << perf.err;
    EXPECT_EQ(perf.out, ours.out);
  }
}

TEST_F(RecordPerfOptions, MaxSizeStopsTheRecordingAndItsCommandAsPerf) {
  std::string output = file("limited.data");
  // The command would run for minutes: the size limit ends it (timeout ends a broken recorder).
  auto limited = pt::run_command({"timeout", "60", PERFSCOPE_CLI_PATH, "record", "--max-size",
                                  "64K", "-e", "cpu-clock", "-F", "10000", "-o", output, "--",
                                  work_helper, "getpid", "1000000000"});
  EXPECT_EQ(limited.exit_status, 128 + SIGTERM) << limited.err;  // the command's, as perf
  EXPECT_NE(limited.err.find("[ perf record: perf size limit reached ("), std::string::npos)
      << limited.err;
  std::uintmax_t size = fs::file_size(output);
  EXPECT_GE(size, 64u * 1024);
  EXPECT_LT(size, 4u * 1024 * 1024);  // a poll's worth past the limit at most
  auto script = pt::run_perfscope({"script", "-i", output});
  EXPECT_EQ(script.exit_status, 0) << script.err;
  EXPECT_GE(line_count(script.out), 100u);
  auto bad = pt::run_perfscope({"record", "--max-size", "lots", "-o", file("x.data"), "true"});
  EXPECT_EQ(bad.exit_status, 129);
  EXPECT_NE(bad.err.find("'lots' is not a size"), std::string::npos) << bad.err;
}

TEST_F(RecordPerfOptions, TimestampFilenameNamesTheFinishedFile) {
  std::string output = file("stamped.data");
  auto recorded = pt::run_perfscope(
      {"record", "--timestamp-filename", "-e", "cpu-clock", "-o", output, "--", "true"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_FALSE(fs::exists(output));
  std::vector<std::string> stamped;
  for (const auto& entry : fs::directory_iterator(dir_.path())) {
    stamped.push_back(entry.path().filename().string());
  }
  ASSERT_EQ(stamped.size(), 1u);
  EXPECT_TRUE(std::regex_match(stamped[0], std::regex(R"(stamped\.data\.\d{16})"))) << stamped[0];
  EXPECT_NE(recorded.err.find("[ perf record: Dump " + file(stamped[0]) + " ]"), std::string::npos)
      << recorded.err;
  EXPECT_NE(recorded.err.find("MB " + output + ".<timestamp> ("), std::string::npos)
      << recorded.err;
  auto script = pt::run_perfscope({"script", "-i", file(stamped[0])});
  EXPECT_EQ(script.exit_status, 0) << script.err;
}

// NAMESPACES records: the command's own, synthesized, and its child's from the kernel at the
// fork; perf's script prints the same lines for perf's recording of the same command.
TEST_F(RecordPerfOptions, NamespacesAreRecordedAsPerfRecordsThem) {
  if (!have_perf()) GTEST_SKIP() << "perf (linux-perf) is not installed";
  auto namespace_lines = [&](const std::string& recorder) {
    std::string output = file(recorder + "-ns.data");
    auto recorded =
        pt::run_perf_or_perfscope(recorder, {"record", "-q", "--namespaces", "-e", "cpu-clock",
                                             "-o", output, "--", work_helper, "fork-getpid", "3"});
    EXPECT_EQ(recorded.exit_status, 0) << recorded.err;
    auto script =
        pt::run_command({perf_path, "script", "-v", "--show-namespace-events", "-i", output});
    EXPECT_EQ(script.exit_status, 0) << script.err;
    // Each record's line without its comm, pid and time (two runs), and its namespaces.
    std::vector<std::string> lines;
    std::istringstream text(script.out);
    for (std::string line; std::getline(text, line);) {
      if (line.find("PERF_RECORD_NAMESPACES") != std::string::npos) {
        lines.push_back(line.substr(line.find(" - ")));
      } else if (line.starts_with("\t\t")) {
        lines.push_back(line);
      }
    }
    return lines;
  };
  std::vector<std::string> ours = namespace_lines("perfscope");
  EXPECT_EQ(ours.size(), 6u);  // two records of three lines
  EXPECT_EQ(ours, namespace_lines("perf"));
  EXPECT_NE(attributes(file("perfscope-ns.data")).find("namespaces: 1"), std::string::npos);
}

// -n: no SAMPLE records, the process's side-band records as a recording with samples has them
// (its COMM before and after the exec, its EXIT, the MMAP2s of its code), as perf -n writes them.
TEST_F(RecordPerfOptions, NoSamplesKeepsTheSideBandAlone) {
  std::string sampled = record({"-e", "task-clock", "-c", "10000"});
  std::string side_band = record({"-n", "-e", "task-clock", "-c", "10000"});
  EXPECT_GT(records_of(sampled, "SAMPLE"), 10u);
  EXPECT_EQ(records_of(side_band, "SAMPLE"), 0u);
  for (const char* type : {"COMM", "EXIT", "MMAP2"}) {
    EXPECT_EQ(records_of(side_band, type), records_of(sampled, type)) << type;
  }
  EXPECT_EQ(records_of(side_band, "COMM"), 2u);
  EXPECT_NE(attributes(side_band).find("freq: 1"), std::string::npos) << attributes(side_band);
  if (have_perf()) {
    std::string theirs = file("perf_n.data");
    auto perf = pt::run_command({perf_path, "record", "-q", "-n", "-e", "task-clock", "-o", theirs,
                                 "--", work_helper, "getpid", "1000"});
    ASSERT_EQ(perf.exit_status, 0) << perf.err;
    for (const char* type : {"SAMPLE", "COMM", "EXIT"}) {
      EXPECT_EQ(records_of(side_band, type), records_of(theirs, type)) << type;
    }
    auto read = pt::run_command({perf_path, "report", "--stats", "-i", side_band});
    EXPECT_EQ(read.exit_status, 0) << read.err;
  }
}

// --timestamp-boundary (written always, -B too): perf's header gives the first and last sample
// times that script prints.
TEST_F(RecordPerfOptions, TimestampBoundaryIsTheFirstAndLastSampleTimes) {
  if (!have_perf()) GTEST_SKIP() << "perf reads the header";
  std::string recording =
      record({"-B", "--timestamp-boundary", "-e", "task-clock", "-c", "20000"}, "200000");
  auto script = pt::run_perfscope({"script", "-F", "time", "-i", recording});
  ASSERT_EQ(script.exit_status, 0) << script.err;
  std::vector<std::string> times;
  std::istringstream lines(script.out);
  for (std::string line; std::getline(lines, line);) {
    std::size_t start = line.find_first_not_of(' ');
    if (start != std::string::npos) times.push_back(line.substr(start, line.find(':') - start));
  }
  ASSERT_GE(times.size(), 2u) << script.out;
  auto header = pt::run_command({perf_path, "report", "--header-only", "-i", recording});
  ASSERT_EQ(header.exit_status, 0) << header.err;
  EXPECT_NE(header.out.find("# time of first sample : " + times.front() + "\n"), std::string::npos)
      << header.out << times.front();
  EXPECT_NE(header.out.find("# time of last sample : " + times.back() + "\n"), std::string::npos)
      << header.out << times.back();
}

TEST_F(RecordPerfOptions, DryRunChecksAndRecordsNothing) {
  std::string output = file("dry.data");
  auto dry = pt::run_perfscope(
      {"record", "--dry-run", "-e", "cpu-clock", "-o", output, "--", work_helper, "exit", "3"});
  EXPECT_EQ(dry.exit_status, 0) << dry.err;  // the command did not run: not its status 3
  EXPECT_FALSE(fs::exists(output));
  auto bad =
      pt::run_perfscope({"record", "--dry-run", "-e", "no-such-event", "-o", output, "true"});
  EXPECT_EQ(bad.exit_status, 129) << bad.err;
  EXPECT_FALSE(fs::exists(output));
}

}  // namespace
