// `perfscope record` and `perfscope script` end to end, against Linux perf: perf reads our files
// and agrees with our reader sample by sample; we read the files perf record writes here and
// agree with perf script; a SIGKILLed recorder leaves a file both can read.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data_reader.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
using namespace perfscope;
namespace abi = perfscope::abi;

const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string perf_path = "/usr/bin/perf";

bool perf_available() { return ::access(perf_path.c_str(), X_OK) == 0; }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("perfscope_record_" + name + "_" + std::to_string(::getpid())))
      .string();
}

struct SampleLine {
  std::uint32_t tid;
  std::string time;  // seconds.microseconds, as perf script prints it
  std::uint64_t ip;
  bool operator==(const SampleLine&) const = default;
};

std::ostream& operator<<(std::ostream& out, const SampleLine& line) {
  return out << line.tid << " " << line.time << " " << std::hex << line.ip << std::dec;
}

// Our reader's samples in perf's order.
std::vector<SampleLine> our_samples(const std::string& path, std::string* comm = nullptr) {
  PerfDataReader reader = PerfDataReader::open(path);
  std::vector<SampleLine> lines;
  SampleRecord sample;
  auto error = reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    if (record.view.type() != static_cast<std::uint32_t>(abi::RecordType::sample)) return;
    DecodeError decode_error;
    if (!decode_sample(record.view, reader.events()[record.event].config, sample, decode_error)) {
      ADD_FAILURE() << "undecodable sample at offset " << record.offset << ": "
                    << decode_error.what;
      return;
    }
    char time[40];
    std::snprintf(time, sizeof time, "%llu.%06llu",
                  static_cast<unsigned long long>(sample.time / 1000000000ULL),
                  static_cast<unsigned long long>(sample.time % 1000000000ULL / 1000));
    lines.push_back({sample.tid, time, sample.ip});
  });
  EXPECT_FALSE(error) << error->what();
  (void)comm;
  return lines;
}

// perf script's samples: `-F tid,time,ip`.
std::vector<SampleLine> perf_samples(const std::string& path, std::string* err = nullptr) {
  auto result = pt::run_command({perf_path, "script", "-G", "-i", path, "-F", "tid,time,ip"});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  if (err) *err = result.err;
  std::vector<SampleLine> lines;
  std::istringstream in(result.out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    SampleLine sample{};
    std::string ip;
    fields >> sample.tid >> sample.time >> ip;
    if (!sample.time.empty() && sample.time.back() == ':') sample.time.pop_back();
    sample.ip = std::stoull(ip, nullptr, 16);
    lines.push_back(sample);
  }
  return lines;
}

void expect_same_samples(const std::string& path) {
  auto ours = our_samples(path);
  std::string err;
  auto theirs = perf_samples(path, &err);
  EXPECT_EQ(err.find("arning"), std::string::npos) << err;
  ASSERT_EQ(ours.size(), theirs.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    ASSERT_EQ(ours[i], theirs[i]) << "sample " << i;
  }
}

TEST(RecordCliTest, ExactTracepointHitsAndScriptLines) {
  if (!pt::tracefs_available()) GTEST_SKIP() << "tracefs is not available";
  std::string path = temp_path("tracepoint");
  auto result = pt::run_perfscope({"record", "-e", "syscalls:sys_enter_getpid", "-o", path, "--",
                                   work_helper, "getpid", "1000"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.err.find("1000 samples"), std::string::npos) << result.err;
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto samples = our_samples(path);
  ASSERT_EQ(samples.size(), 1000u);
  auto script = pt::run_perfscope({"script", "-i", path});
  ASSERT_EQ(script.exit_status, 0) << script.err;
  EXPECT_EQ(std::count(script.out.begin(), script.out.end(), '\n'), 1000);
  EXPECT_NE(script.out.find("work_helper"), std::string::npos);
  EXPECT_NE(script.out.find("syscalls:sys_enter_getpid: "), std::string::npos);
  auto json = pt::run_perfscope({"script", "--json", "-i", path});
  ASSERT_EQ(json.exit_status, 0) << json.err;
  std::istringstream lines(json.out);
  std::size_t json_samples = 0;
  for (std::string line; std::getline(lines, line);) {
    auto record = nlohmann::json::parse(line);
    if (record["type"] == "SAMPLE") {
      ++json_samples;
      EXPECT_TRUE(record.contains("raw"));
      EXPECT_EQ(record["period"], 1);
    }
  }
  EXPECT_EQ(json_samples, 1000u);
  std::filesystem::remove(path);
}

// perf refuses tracepoint events without the TRACING_DATA section ("incompatible file format"):
// it builds its decoder from the format files carried there, so each hit prints as one line.
TEST(RecordCliTest, PerfScriptReadsOurTracepointRecording) {
  if (!pt::tracefs_available()) GTEST_SKIP() << "tracefs is not available";
  if (!perf_available()) GTEST_SKIP() << "Linux perf is not installed at " << perf_path;
  constexpr int calls = 1234;
  std::string path = temp_path("tracing_data");
  auto result = pt::run_perfscope({"record", "-e", "syscalls:sys_enter_getpid", "-o", path, "--",
                                   work_helper, "getpid", std::to_string(calls)});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.err.find("warning"), std::string::npos) << result.err;
  EXPECT_TRUE(PerfDataReader::open(path).features().tracing_data.has_value());
  auto script = pt::run_command({perf_path, "script", "-i", path});
  ASSERT_EQ(script.exit_status, 0) << script.err;
  EXPECT_EQ(script.err.find("incompatible"), std::string::npos) << script.err;
  EXPECT_EQ(script.err.find("arning"), std::string::npos) << script.err;
  std::istringstream lines(script.out);
  int hits = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("sys_enter_getpid") != std::string::npos) ++hits;
  }
  EXPECT_EQ(hits, calls) << script.out.substr(0, 2000);
  std::filesystem::remove(path);
}

TEST(RecordCliTest, PerfReadsOurFilesAndAgrees) {
  if (!perf_available()) GTEST_SKIP() << "Linux perf is not installed at " << perf_path;
  for (std::vector<std::string> extra :
       {std::vector<std::string>{}, std::vector<std::string>{"-g"}}) {
    std::string path = temp_path("ours");
    std::vector<std::string> arguments{"record", "-e", "cpu-clock", "-F", "2000", "-o", path};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    arguments.insert(arguments.end(), {"--", work_helper, "getpid", "3000000"});
    auto result = pt::run_perfscope(arguments);
    ASSERT_EQ(result.exit_status, 0) << result.err;
    auto report = pt::run_command({perf_path, "report", "--stdio", "-i", path});
    EXPECT_EQ(report.exit_status, 0) << report.err;
    EXPECT_EQ(report.err.find("arning"), std::string::npos) << report.err;
    EXPECT_NE(report.out.find("work_helper"), std::string::npos);
    auto samples = our_samples(path);
    EXPECT_GT(samples.size(), 50u);
    expect_same_samples(path);
    auto comms = pt::run_command({perf_path, "script", "-i", path, "-F", "comm"});
    EXPECT_NE(comms.out.find("work_helper"), std::string::npos);
    std::filesystem::remove(path);
  }
}

TEST(RecordCliTest, WeReadPerfRecordFilesAndAgreeWithPerfScript) {
  if (!perf_available()) GTEST_SKIP() << "Linux perf is not installed at " << perf_path;
  std::vector<std::vector<std::string>> cases = {
      {"-e", "cpu-clock", "-F", "2000", "--", work_helper, "getpid", "3000000"},
      {"-g", "-e", "cpu-clock", "-F", "2000", "--", work_helper, "getpid", "3000000"},
      {"-e", "cpu-clock", "-F", "2000", "--", work_helper, "fork-getpid", "3000000"},
      {"-a", "-e", "cpu-clock", "-F", "1000", "--", "sleep", "0.2"},
  };
  if (pt::tracefs_available()) {
    cases.push_back({"-e", "syscalls:sys_enter_getpid", "--", work_helper, "getpid", "500"});
  }
  for (const auto& arguments : cases) {
    std::string path = temp_path("perf");
    std::vector<std::string> command{perf_path, "record", "-q", "-o", path};
    command.insert(command.end(), arguments.begin(), arguments.end());
    auto result = pt::run_command(command);
    ASSERT_EQ(result.exit_status, 0) << result.err;
    SCOPED_TRACE(arguments.front() + " " + arguments[1]);
    auto ours = our_samples(path);
    if (arguments[1] == "syscalls:sys_enter_getpid") {
      EXPECT_EQ(ours.size(), 500u);
    }
    expect_same_samples(path);
    std::filesystem::remove(path);
  }
}

TEST(RecordCliTest, SigkilledRecorderLeavesReadableFile) {
  std::string path = temp_path("killed");
  pid_t worker = ::fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    ::execl(work_helper.c_str(), work_helper.c_str(), "getpid", "4000000000", nullptr);
    ::_exit(127);
  }
  pid_t recorder = ::fork();
  ASSERT_GE(recorder, 0);
  if (recorder == 0) {
    std::string pid = std::to_string(worker);
    ::execl(PERFSCOPE_CLI_PATH, PERFSCOPE_CLI_PATH, "record", "-e", "cpu-clock", "-F", "2000", "-p",
            pid.c_str(), "-o", path.c_str(), nullptr);
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ::kill(recorder, SIGKILL);
  ::waitpid(recorder, nullptr, 0);
  ::kill(worker, SIGKILL);
  ::waitpid(worker, nullptr, 0);

  PerfDataReader reader = PerfDataReader::open(path);
  EXPECT_FALSE(reader.notes().empty());  // no feature sections: an unfinished file
  auto samples = our_samples(path);
  EXPECT_GT(samples.size(), 100u);
  for (const auto& sample : samples) EXPECT_EQ(sample.tid, static_cast<std::uint32_t>(worker));
  if (perf_available()) {
    // The header covers every finished round: perf reads those, without a warning.
    auto theirs = perf_samples(path);
    EXPECT_GT(theirs.size(), 100u);
    EXPECT_LE(theirs.size(), samples.size());
  }
  std::filesystem::remove(path);
}

TEST(RecordCliTest, SigtermFinishesTheFile) {
  std::string path = temp_path("term");
  pid_t recorder = ::fork();
  ASSERT_GE(recorder, 0);
  if (recorder == 0) {
    ::execl(PERFSCOPE_CLI_PATH, PERFSCOPE_CLI_PATH, "record", "-e", "cpu-clock", "-a", "-o",
            path.c_str(), nullptr);
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ::kill(recorder, SIGTERM);
  int status = 0;
  ::waitpid(recorder, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  PerfDataReader reader = PerfDataReader::open(path);
  EXPECT_TRUE(reader.notes().empty());
  EXPECT_TRUE(reader.features().hostname.has_value());
  EXPECT_FALSE(reader.features().build_ids.empty());
  std::filesystem::remove(path);
}

TEST(RecordCliTest, ScriptReportsMissingAndCorruptInput) {
  auto missing = pt::run_perfscope({"script", "-i", "/nonexistent/perf.data"});
  EXPECT_EQ(missing.exit_status, 1);
  EXPECT_NE(missing.err.find("cannot open /nonexistent/perf.data"), std::string::npos);
  std::string path = temp_path("garbage");
  {
    std::FILE* file = std::fopen(path.c_str(), "wb");
    std::fputs("this is not a perf.data file at all", file);
    std::fclose(file);
  }
  auto garbage = pt::run_perfscope({"script", "-i", path});
  EXPECT_EQ(garbage.exit_status, 1);
  EXPECT_NE(garbage.err.find("offset 0x0: not a perf.data file"), std::string::npos) << garbage.err;
  std::filesystem::remove(path);
}

}  // namespace

// `record -o -` streams pipe mode: perf script and our reader both take it from a pipe.
std::string pipe_record_command(const std::string& event, int calls) {
  return std::string(PERFSCOPE_CLI_PATH) + " record -e " + event + " -o - -- " + work_helper +
         " getpid " + std::to_string(calls);
}

TEST(RecordCliTest, PipeModeTracepointHitsReadByPerfAndUs) {
  if (!pt::tracefs_available()) GTEST_SKIP() << "tracefs is not available";
  constexpr int calls = 777;
  std::string recorder = pipe_record_command("syscalls:sys_enter_getpid", calls);
  std::string path = temp_path("pipe_tracepoint");
  auto stored = pt::run_command({"/bin/sh", "-c", recorder + " > " + path});
  ASSERT_EQ(stored.exit_status, 0) << stored.err;
  EXPECT_NE(stored.err.find(std::to_string(calls) + " samples"), std::string::npos) << stored.err;

  PerfDataReader reader = PerfDataReader::open(path);
  EXPECT_TRUE(reader.pipe_mode());
  ASSERT_EQ(reader.events().size(), 1u);
  EXPECT_EQ(reader.events()[0].name, "syscalls:sys_enter_getpid");
  EXPECT_FALSE(reader.events()[0].ids.empty());
  EXPECT_TRUE(reader.features().hostname.has_value());
  EXPECT_TRUE(reader.features().tracing_data.has_value());
  // The stream's order: ATTR first, FINISHED_INIT after the synthesized records and before any
  // sample.
  std::vector<std::uint32_t> types;
  auto error = reader.for_each_record(
      [&](const PerfDataRecord& record) { types.push_back(record.view.type()); });
  EXPECT_FALSE(error) << error->what();
  ASSERT_FALSE(types.empty());
  EXPECT_EQ(types.front(), static_cast<std::uint32_t>(perfscope::abi::UserRecordType::header_attr));
  auto init = std::find(types.begin(), types.end(),
                        static_cast<std::uint32_t>(perfscope::abi::UserRecordType::finished_init));
  auto first_sample = std::find(types.begin(), types.end(),
                                static_cast<std::uint32_t>(perfscope::abi::RecordType::sample));
  ASSERT_NE(init, types.end());
  EXPECT_LT(init, first_sample);
  EXPECT_EQ(our_samples(path).size(), static_cast<std::size_t>(calls));
  std::filesystem::remove(path);

  auto ours =
      pt::run_command({"/bin/sh", "-c", recorder + " | " + PERFSCOPE_CLI_PATH + " script -i -"});
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  EXPECT_EQ(std::count(ours.out.begin(), ours.out.end(), '\n'), calls) << ours.err;

  if (!perf_available()) GTEST_SKIP() << "Linux perf is not installed at " << perf_path;
  auto theirs = pt::run_command({"/bin/sh", "-c", recorder + " | " + perf_path + " script -i -"});
  ASSERT_EQ(theirs.exit_status, 0) << theirs.err;
  EXPECT_EQ(theirs.err.find("arning"), std::string::npos) << theirs.err;
  std::istringstream lines(theirs.out);
  int hits = 0, lines_seen = 0;
  for (std::string line; std::getline(lines, line); ++lines_seen) {
    if (line.find("work_helper") != std::string::npos &&
        line.find("syscalls:sys_enter_getpid:") != std::string::npos) {
      ++hits;
    }
  }
  EXPECT_EQ(hits, calls) << theirs.out.substr(0, 2000);
  EXPECT_EQ(lines_seen, calls);
}

TEST(RecordCliTest, PipeModeCpuClockAgreesWithPerfSampleBySample) {
  if (!perf_available()) GTEST_SKIP() << "Linux perf is not installed at " << perf_path;
  std::string path = temp_path("pipe_cpu_clock");
  std::string recorder = std::string(PERFSCOPE_CLI_PATH) +
                         " record -e cpu-clock -F 2000 -g -o - -- " + work_helper +
                         " getpid 3000000";
  auto stored = pt::run_command({"/bin/sh", "-c", recorder + " > " + path});
  ASSERT_EQ(stored.exit_status, 0) << stored.err;
  EXPECT_TRUE(PerfDataReader::open(path).pipe_mode());
  EXPECT_GT(our_samples(path).size(), 50u);
  expect_same_samples(path);
  auto report =
      pt::run_command({"/bin/sh", "-c", std::string(perf_path) + " report --stdio -i - < " + path});
  EXPECT_EQ(report.exit_status, 0) << report.err;
  EXPECT_EQ(report.err.find("arning"), std::string::npos) << report.err;
  EXPECT_NE(report.out.find("work_helper"), std::string::npos);
  std::filesystem::remove(path);
}
