// perf's raw dump (-D/--dump-raw-trace of report, annotate, script, diff and sched, and script's
// --dump-unsorted-raw-trace; issue #44), judged against perf 6.1 itself on the same files: byte
// for byte for report and annotate, the dump's own lines for the commands that print their
// output among them. On recordings made here by perf and by perfscope (call graphs, DWARF
// stacks compressed with zstd, registers, context switches, a pipe) and on the corpus of other
// tools' files that perf 6.1 reads. The one difference allowed: the [vdso] that perf names by a
// random /tmp/perf-vdso.so-XXXXXX copy when the file has no build id for it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace pt = perfscope::testing;

namespace {

const std::string work_helper = PERFSCOPE_WORK_HELPER_PATH;
const std::string perf_path = "/usr/bin/perf";

std::vector<std::string> lines_of(const std::string& text) {
  static const std::regex random_vdso("/tmp/perf-vdso\\.so-[A-Za-z0-9]{6}");
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    lines.push_back(std::regex_replace(line, random_vdso, "[vdso]"));
  }
  return lines;
}

// The dump's own lines: each record's "OFFSET@FILE" line, its hex lines and its decoded line.
std::vector<std::string> dump_lines(const std::string& text) {
  static const std::regex dump_line(R"(^([0-9a-fx]+@|\.|.*PERF_RECORD_))");
  std::vector<std::string> kept;
  for (std::string& line : lines_of(text)) {
    if (std::regex_search(line, dump_line)) kept.push_back(std::move(line));
  }
  return kept;
}

// Where two outputs first differ, for the failure message.
std::string first_difference(const std::vector<std::string>& perfs,
                             const std::vector<std::string>& ours) {
  for (std::size_t i = 0; i < std::max(perfs.size(), ours.size()); ++i) {
    const std::string a = i < perfs.size() ? perfs[i] : "(end)";
    const std::string b = i < ours.size() ? ours[i] : "(end)";
    if (a != b) return "line " + std::to_string(i + 1) + ":\nperf:      " + a + "\nperfscope: " + b;
  }
  return "";
}

class RawTraceDump : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "perf is not installed";
  }
  // `tool record ARGS -o FILE -- work_helper getpid CALLS`; the file.
  std::string record(const std::string& tool, const std::vector<std::string>& options,
                     const std::string& calls = "100000") {
    std::string file = dir_.path() + "/" + std::to_string(++recordings_) + ".data";
    std::vector<std::string> command{"record", "-q", "-o", file};
    command.insert(command.end(), options.begin(), options.end());
    command.insert(command.end(), {"--", work_helper, "getpid", calls});
    auto recorded =
        tool == "perf" ? pt::run_perf_or_perfscope("perf", command) : pt::run_perfscope(command);
    EXPECT_EQ(recorded.exit_status, 0) << recorded.err;
    return file;
  }
  // The whole stdout of `perf ARGS` and of `perfscope ARGS` are the same.
  static void expect_same_output(const std::vector<std::string>& arguments, bool dump_only) {
    auto perfs = pt::run_perf_or_perfscope("perf", arguments);
    auto ours = pt::run_perfscope(arguments);
    ASSERT_EQ(ours.exit_status, 0) << ours.err;
    auto a = dump_only ? dump_lines(perfs.out) : lines_of(perfs.out);
    auto b = dump_only ? dump_lines(ours.out) : lines_of(ours.out);
    EXPECT_GT(a.size(), 10u) << perfs.err;
    EXPECT_TRUE(a == b) << ::testing::PrintToString(arguments) << " differs at "
                        << first_difference(a, b);
  }
  pt::TempDir dir_;
  int recordings_ = 0;
};

TEST_F(RawTraceDump, ReportDumpsAsPerfByteForByte) {
  std::vector<std::string> files{
      record("perf", {"-e", "cpu-clock", "-c", "100000", "-g"}),
      // zstd-compressed records: each carried record shows its COMPRESSED record's offset.
      record("perf", {"-e", "cpu-clock", "-z", "--call-graph", "dwarf,4096"}, "20000"),
      record("perf", {"-e", "cpu-clock", "-I", "--switch-events", "-W", "--data-page-size"}),
      record("perfscope", {"-e", "cpu-clock", "-g"}),
      record("perfscope", {"-e", "page-faults", "-c", "1", "-d", "--phys-data"}),
  };
  // A pipe: offsets count from the stream's first record, and records before the events are
  // known print "-1 -1".
  std::string piped = dir_.path() + "/piped.data";
  auto pipe = pt::run_command(
      {"/bin/sh", "-c",
       perf_path + " record -q -e cpu-clock -o - -- " + work_helper + " getpid 10000 > " + piped});
  ASSERT_EQ(pipe.exit_status, 0) << pipe.err;
  files.push_back(piped);
  for (const std::string& file : files) {
    expect_same_output({"report", "-D", "-i", file}, false);
  }
}

TEST_F(RawTraceDump, AnnotateScriptDiffAndSchedDumpAsPerf) {
  std::string perfs = record("perf", {"-e", "cpu-clock", "-g"});
  std::string ours = record("perfscope", {"-e", "cpu-clock", "-g"});
  // annotate: the dump, then every record type's count (those with none too).
  expect_same_output({"annotate", "-D", "-i", perfs}, false);
  // script prints its sample lines among the dump's (perfscope after it); the dump is perf's.
  expect_same_output({"script", "-D", "-i", perfs}, true);
  expect_same_output({"script", "--dump-unsorted-raw-trace", "-i", ours}, true);
  // diff: each recording's dump (its tool handles fewer records: ": unhandled!").
  expect_same_output({"diff", "-D", perfs, ours}, true);
}

TEST_F(RawTraceDump, UnsortedDumpIsInFileOrder) {
  std::string file = record("perfscope", {"-a", "-e", "cpu-clock"}, "200000");
  auto dumped = pt::run_perfscope({"script", "--dump-unsorted-raw-trace", "-i", file});
  ASSERT_EQ(dumped.exit_status, 0) << dumped.err;
  static const std::regex block(R"(^(0x[0-9a-f]+|0)@)");
  std::uint64_t previous = 0;
  std::size_t blocks = 0;
  std::smatch match;
  for (const std::string& line : lines_of(dumped.out)) {
    if (!std::regex_search(line, match, block)) continue;
    std::uint64_t offset = std::stoull(match[1], nullptr, 16);
    EXPECT_GE(offset, previous) << line;
    previous = offset;
    ++blocks;
  }
  EXPECT_GT(blocks, 100u);
}

// Other tools' files (../shared/corpus/perf-data) that perf 6.1 reads whole: the same dump.
TEST_F(RawTraceDump, CorpusFilesDumpAsPerf) {
  const std::string corpus = PERFSCOPE_CORPUS_PATH;
  if (!std::filesystem::is_directory(corpus)) GTEST_SKIP() << "no corpus at " << corpus;
  const std::vector<std::string> files{
      "quipper/perf.data.branch_stack_spec",
      "quipper/perf.data.group_desc-4.14",
      "quipper/perf.data.branch-4.14",
      "quipper/perf.data.callgraph_and_branch-3.8",
      "quipper/perf.data.forkexit-3.8",
      "quipper/perf.data.piped.header_features-4.16",
      "quipper/perf.data.piped.ctx_switch_namespaces-4.14",
      "quipper/perf.data.piped.corrupted.zero_size_sample-3.2",
      "autofdo/perf-kernel.data",
      "simpleperf/perf_b.data",
      "perfparser/contentsize.data",
      "perfparser/probe.data.stream",
      "perfparser/parallel_static_gcc_perf.data.zstd",
      "perfparser/vector_static_gcc_perf.lbr.data",
      "linux-perf-data/sleep.compressed.pipe.data",
  };
  std::size_t compared = 0;
  for (const std::string& name : files) {
    std::string file = corpus + "/" + name;
    if (!std::filesystem::exists(file)) continue;
    expect_same_output({"report", "-D", "-i", file}, false);
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "none of the corpus files is in " << corpus;
}

}  // namespace
