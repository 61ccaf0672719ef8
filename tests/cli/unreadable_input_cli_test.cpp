// Inputs that are no recording, or only part of one, for every subcommand that reads one: a
// directory, an endless device, an empty file, a file cut inside its header and a file cut
// inside its data. Each answer comes within 5 s, under 100 MB of RSS, with a sentence that names
// the file and never a library's exception text (vector::_M_default_append, std::bad_alloc); a
// file cut inside its data gives what was read, one warning in the same words and exit status 0
// from every subcommand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;

const std::string gnu_time = "/usr/bin/time";

// Each subcommand that reads a recording, as a user types it; the input follows -i (diff takes
// it first and compares it with a whole recording).
struct Reader {
  std::vector<std::string> words;
  bool reads_profiles = true;  // false: needs tracepoints the test's recording lacks (sched)
};
const std::vector<Reader> readers{{{"report", "--stdio"}},
                                  {{"report", "--format", "folded"}},
                                  {{"script"}},
                                  {{"script", "--json"}},
                                  {{"annotate"}},
                                  {{"archive", "-o", "/proc/self/fd/1"}},
                                  {{"sched", "timehist"}, false},
                                  {{"sched", "latency"}, false},
                                  {{"diff"}}};

struct InputRun {
  pt::CommandResult result;
  double seconds = 0;
  long max_rss_kb = -1;  // from GNU time; -1 without it
};

InputRun run_with_input(const Reader& reader, const std::string& input, const std::string& whole) {
  std::vector<std::string> argv{"/usr/bin/timeout", "5"};
  bool timed = ::access(gnu_time.c_str(), X_OK) == 0;
  if (timed) argv.insert(argv.end(), {gnu_time, "-q", "-f", "max_rss_kb=%M"});
  argv.push_back(PERFSCOPE_CLI_PATH);
  argv.insert(argv.end(), reader.words.begin(), reader.words.end());
  if (reader.words.front() == "diff") {
    argv.insert(argv.end(), {input, whole});
  } else {
    argv.insert(argv.end(), {"-i", input});
  }
  InputRun run;
  auto start = std::chrono::steady_clock::now();
  run.result = pt::run_command(argv);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (timed) {
    std::size_t at = run.result.err.rfind("max_rss_kb=");
    if (at != std::string::npos) {
      run.max_rss_kb = std::stol(run.result.err.substr(at + 11));
      run.result.err.erase(at);
    }
  }
  return run;
}

void expect_sane(const InputRun& run) {
  EXPECT_NE(run.result.exit_status, 124) << "still running after 5 s";
  EXPECT_LT(run.seconds, 5.0);
  // 100 MB in the release build; AddressSanitizer's shadow memory and quarantine add their own
  // tens of MB (123 MB seen), so its build is held to 300 MB.
  if (run.max_rss_kb >= 0) {
    EXPECT_LT(run.max_rss_kb, (pt::sanitized_build ? 300 : 100) * 1024);
  }
  for (const char* library_text : {"vector::", "bad_alloc", "basic_string", "std::", "stoi",
                                   "stoul", "out_of_range", "terminate called"}) {
    EXPECT_EQ(run.result.err.find(library_text), std::string::npos) << run.result.err;
  }
}

std::string name_of(const Reader& reader) {
  std::string name;
  for (const auto& word : reader.words) name += (name.empty() ? "" : " ") + word;
  return name;
}

class UnreadableInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new pt::TempDir;
    whole_ = dir_->path() + "/whole.data";
    auto recorded = pt::run_perfscope({"record", "-g", "-F", "2000", "-o", whole_, "--", "/bin/sh",
                                       "-c", "i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done"});
    ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
    std::ifstream in(whole_, std::ios::binary);
    bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  static void TearDownTestSuite() { delete dir_; }
  static pt::TempDir* dir_;
  static std::string whole_, bytes_;
};
pt::TempDir* UnreadableInput::dir_ = nullptr;
std::string UnreadableInput::whole_, UnreadableInput::bytes_;

TEST_F(UnreadableInput, DirectoryIsRefusedByName) {
  pt::TempDir dir;
  for (const auto& reader : readers) {
    SCOPED_TRACE(name_of(reader));
    InputRun run = run_with_input(reader, dir.path(), whole_);
    expect_sane(run);
    if (reader.words.front() == "diff") {
      EXPECT_EQ(run.result.exit_status, 129) << run.result.err;
      EXPECT_NE(run.result.err.find("'" + dir.path() + "' is a directory"), std::string::npos)
          << run.result.err;
      continue;
    }
    EXPECT_EQ(run.result.exit_status, 1) << run.result.err;
    EXPECT_NE(run.result.err.find("cannot read " + dir.path() + ": it is a directory"),
              std::string::npos)
        << run.result.err;
    EXPECT_NE(run.result.err.find("-i " + dir.path() + "/perf.data"), std::string::npos)
        << run.result.err;
  }
}

TEST_F(UnreadableInput, EndlessDeviceIsRefusedAtItsFirstBytes) {
  for (const auto& reader : readers) {
    SCOPED_TRACE(name_of(reader));
    InputRun run = run_with_input(reader, "/dev/zero", whole_);
    expect_sane(run);
    EXPECT_EQ(run.result.exit_status, reader.words.front() == "diff" ? 129 : 1) << run.result.err;
    EXPECT_NE(run.result.err.find("/dev/zero"), std::string::npos) << run.result.err;
    EXPECT_NE(run.result.err.find(reader.words.front() == "diff" ? "neither a perf.data recording"
                                                                 : "not a perf.data file"),
              std::string::npos)
        << run.result.err;
  }
}

TEST_F(UnreadableInput, EmptyFileIsRefusedByName) {
  std::string empty = dir_->write("empty.data", "");
  for (const auto& reader : readers) {
    SCOPED_TRACE(name_of(reader));
    InputRun run = run_with_input(reader, empty, whole_);
    expect_sane(run);
    EXPECT_EQ(run.result.exit_status, reader.words.front() == "diff" ? 129 : 1) << run.result.err;
    EXPECT_NE(run.result.err.find(empty), std::string::npos) << run.result.err;
    EXPECT_NE(run.result.err.find("empty"), std::string::npos) << run.result.err;
  }
}

TEST_F(UnreadableInput, FileCutInItsHeaderIsRefusedByName) {
  std::string cut = dir_->write("header-cut.data", bytes_.substr(0, 100));
  for (const auto& reader : readers) {
    SCOPED_TRACE(name_of(reader));
    InputRun run = run_with_input(reader, cut, whole_);
    expect_sane(run);
    EXPECT_EQ(run.result.exit_status, 1) << run.result.err;
    EXPECT_NE(run.result.err.find(cut + ": perf.data offset "), std::string::npos)
        << run.result.err;
  }
}

TEST_F(UnreadableInput, FileCutInItsDataGivesWhatWasReadWithOneWarning) {
  // Halfway through the data section (perf_file_header: data.offset at byte 40, data.size at 48).
  ASSERT_GT(bytes_.size(), 64u);
  std::uint64_t data_offset = 0, data_size = 0;
  std::memcpy(&data_offset, bytes_.data() + 40, 8);
  std::memcpy(&data_size, bytes_.data() + 48, 8);
  ASSERT_GT(data_size, 4096u) << "too few records to cut";
  std::string cut = dir_->write("data-cut.data", bytes_.substr(0, data_offset + data_size / 2));
  const std::string warning = "perfscope: warning: " + cut + ": perf.data offset ";
  const std::string covers = "the file is cut short; what follows covers the records before it";
  for (const auto& reader : readers) {
    if (!reader.reads_profiles) continue;  // the sched tests cut a sched recording
    SCOPED_TRACE(name_of(reader));
    InputRun run = run_with_input(reader, cut, whole_);
    expect_sane(run);
    EXPECT_EQ(run.result.exit_status, 0) << run.result.err;
    std::size_t at = run.result.err.find(warning);
    ASSERT_NE(at, std::string::npos) << run.result.err;
    EXPECT_NE(run.result.err.find(covers, at), std::string::npos) << run.result.err;
    EXPECT_EQ(run.result.err.find(warning, at + 1), std::string::npos) << "said once";
    if (reader.words.front() != "diff" && reader.words.size() == 1) {
      EXPECT_FALSE(run.result.out.empty()) << "what was read is shown";
    }
  }
}

}  // namespace
