// Stacks completed while recording (issue #30): -g recovers the callers the frame-pointer walk
// skips, --call-graph dwarf unwinds at record time and writes plain call chains; both against
// known answers, against --call-graph fp and --keep-stacks, and read by Linux perf.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "support/test_support.hpp"

namespace {

namespace pt = perfscope::testing;
namespace sf = perfscope::abi::sample_format;
using perfscope::PerfDataReader;

const std::string workload = PERFSCOPE_STACK_GAPS_WORKLOAD_PATH;
const std::string no_frame_pointers = PERFSCOPE_KNOWN_ANSWER_NOFP_PATH;
const std::string perf_path = "/usr/bin/perf";

struct FoldedLine {
  std::string stack;
  double weight = 0;
};

std::vector<FoldedLine> folded(const std::string& text) {
  std::vector<FoldedLine> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto space = line.rfind(' ');
    if (space == std::string::npos) continue;
    lines.push_back({line.substr(0, space), std::stod(line.substr(space + 1))});
  }
  return lines;
}

// The weight of the stacks that contain every one of `parts`.
double weight_of(const std::vector<FoldedLine>& lines, const std::vector<std::string>& parts) {
  double total = 0;
  for (const auto& line : lines) {
    bool all = true;
    for (const auto& part : parts) all = all && line.stack.find(part) != std::string::npos;
    if (all) total += line.weight;
  }
  return total;
}

double total_of(const std::vector<FoldedLine>& lines) { return weight_of(lines, {}); }

std::vector<FoldedLine> folded_report(const std::string& file,
                                      const std::vector<std::string>& more = {}) {
  std::vector<std::string> words{"report", "-i", file, "--format", "folded"};
  words.insert(words.end(), more.begin(), more.end());
  auto report = pt::run_perfscope(words);
  EXPECT_EQ(report.exit_status, 0) << report.err;
  return folded(report.out);
}

std::uint64_t sample_type_of(const std::string& file, std::size_t event = 0) {
  PerfDataReader reader = PerfDataReader::open(file);
  return reader.events().at(event).attr.sample_type;
}

std::uint64_t file_size(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? static_cast<std::uint64_t>(info.st_size) : 0;
}

bool can_record_off_cpu_stacks() { return pt::running_as_root() && pt::tracefs_available(); }

// A leaf in a frameless libc routine: -g names its caller; the kernel's walk alone (fp) skips it.
TEST(StackCompletion, FramePointerGapsGetTheCallerOfAFramelessLeafBack) {
  pt::TempDir dir;
  std::string filled = dir.path() + "/g.data", plain = dir.path() + "/fp.data";
  auto recorded = pt::run_perfscope({"record", "-g", "-e", "cpu-clock", "-F", "2000", "-o", filled,
                                     "--", workload, "leaves", "400"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_NE(recorded.err.find("[ perfscope record: stacks: frame pointers; callers the walk "
                              "skipped recovered in "),
            std::string::npos)
      << recorded.err;
  // The file is an ordinary frame-pointer recording: no copies left in it.
  EXPECT_EQ(sample_type_of(filled) & (sf::regs_user | sf::stack_user), 0u);
  EXPECT_NE(sample_type_of(filled) & sf::callchain, 0u);

  auto lines = folded_report(filled);
  // Every sample in strlen (whatever glibc's variant: __strlen_avx2, __strlen_evex, ...).
  double in_strlen = weight_of(lines, {"strlen"});
  double under_caller = weight_of(lines, {";scan_part;", "strlen"});
  ASSERT_GT(in_strlen, 20) << recorded.err;
  EXPECT_GE(under_caller, 0.95 * in_strlen) << "of " << in_strlen;
  double in_memcpy = weight_of(lines, {"mem"});
  EXPECT_GE(weight_of(lines, {";copy_part;", "mem"}), 0.95 * in_memcpy) << "of " << in_memcpy;

  // --call-graph fp: the kernel's walk alone, as perf -g writes it (the caller lost).
  auto recorded_fp = pt::run_perfscope({"record", "--call-graph", "fp", "-e", "cpu-clock", "-F",
                                        "2000", "-o", plain, "--", workload, "leaves", "400"});
  ASSERT_EQ(recorded_fp.exit_status, 0) << recorded_fp.err;
  EXPECT_EQ(recorded_fp.err.find("stacks:"), std::string::npos) << recorded_fp.err;
  auto plain_lines = folded_report(plain);
  double plain_strlen = weight_of(plain_lines, {"strlen"});
  ASSERT_GT(plain_strlen, 20);
  EXPECT_LT(weight_of(plain_lines, {";scan_part;", "strlen"}), 0.5 * plain_strlen);
  EXPECT_EQ(sample_type_of(plain) & (sf::regs_user | sf::stack_user), 0u);
  // The -g file is barely larger for the frames it holds.
  EXPECT_LT(static_cast<double>(file_size(filled)), 1.3 * static_cast<double>(file_size(plain)));
}

// Off-CPU waits in system-call wrappers: -g names sleep_part and pipe_part, in the shares the
// DWARF recording gives.
TEST(StackCompletion, OffCpuWaitsAreNamedByTheirCallersWithFramePointers) {
  if (!can_record_off_cpu_stacks()) GTEST_SKIP() << "needs root and tracefs for sched_switch";
  pt::TempDir dir;
  std::string filled = dir.path() + "/g.data", dwarf = dir.path() + "/dwarf.data";
  auto recorded = pt::run_perfscope(
      {"record", "--off-cpu", "-g", "-o", filled, "--", workload, "waits", "100"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto recorded_dwarf = pt::run_perfscope({"record", "--off-cpu", "--call-graph", "dwarf", "-o",
                                           dwarf, "--", workload, "waits", "100"});
  ASSERT_EQ(recorded_dwarf.exit_status, 0) << recorded_dwarf.err;

  auto share = [](const std::vector<FoldedLine>& lines, const std::string& function) {
    double all = weight_of(lines, {"[offcpu-time];stack_gaps_work"});
    return all == 0 ? 0.0
                    : 100.0 * weight_of(lines, {"[offcpu-time];stack_gaps_work", function}) / all;
  };
  auto lines = folded_report(filled);
  auto dwarf_lines = folded_report(dwarf);
  double sleep_fp = share(lines, ";sleep_part;"), pipe_fp = share(lines, ";pipe_part;");
  double sleep_dwarf = share(dwarf_lines, ";sleep_part;"),
         pipe_dwarf = share(dwarf_lines, ";pipe_part;");
  EXPECT_GT(sleep_fp, 20) << recorded.err;
  EXPECT_GT(pipe_fp, 20) << recorded.err;
  EXPECT_NEAR(sleep_fp, sleep_dwarf, 3.0);
  EXPECT_NEAR(pipe_fp, pipe_dwarf, 3.0);
}

// --call-graph dwarf unwound while recording: the shares of the same workload recorded with
// --keep-stacks (unwound by report), at least as many complete stacks, a file a fraction of the
// size.
TEST(StackCompletion, DwarfUnwoundWhileRecordingMatchesStacksUnwoundByReport) {
  pt::TempDir dir;
  std::string unwound = dir.path() + "/unwound.data", kept = dir.path() + "/kept.data";
  auto recorded = pt::run_perfscope({"record", "--call-graph", "dwarf", "-e", "cpu-clock", "-F",
                                     "1000", "-o", unwound, "--", no_frame_pointers});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  EXPECT_NE(recorded.err.find("samples unwound while recording ("), std::string::npos)
      << recorded.err;
  auto recorded_kept =
      pt::run_perfscope({"record", "--call-graph", "dwarf", "--keep-stacks", "-e", "cpu-clock",
                         "-F", "1000", "-o", kept, "--", no_frame_pointers});
  ASSERT_EQ(recorded_kept.exit_status, 0) << recorded_kept.err;
  EXPECT_EQ(recorded_kept.err.find("stacks:"), std::string::npos);

  auto lines = folded_report(unwound);
  auto kept_lines = folded_report(kept);
  for (const std::string leaf : {";leaf_60", ";leaf_30", ";leaf_10"}) {
    double share = 100.0 * weight_of(lines, {";main;", leaf}) / total_of(lines);
    double kept_share = 100.0 * weight_of(kept_lines, {";main;", leaf}) / total_of(kept_lines);
    EXPECT_NEAR(share, kept_share, 1.0) << leaf;
  }
  // Stacks that reach main, read back from each file.
  double reach = weight_of(lines, {";main;"}) / total_of(lines);
  double kept_reach = weight_of(kept_lines, {";main;"}) / total_of(kept_lines);
  EXPECT_GE(reach, kept_reach - 0.01);
  EXPECT_LT(file_size(unwound) * 5, file_size(kept));
  // report's header says where the stacks came from.
  auto header = pt::run_perfscope({"report", "-i", unwound, "--stdio", "--percent-limit", "50"});
  EXPECT_NE(header.out.find("# Stacks: DWARF unwound while recording ("), std::string::npos)
      << header.out;
  auto kept_header = pt::run_perfscope({"report", "-i", kept, "--stdio", "--percent-limit", "50"});
  EXPECT_NE(kept_header.out.find("# Stacks: DWARF unwound here ("), std::string::npos)
      << kept_header.out;
}

TEST(StackCompletion, LinuxPerfReadsTheUnwoundFileWithoutWarnings) {
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  pt::TempDir dir;
  std::string unwound = dir.path() + "/perf.data";
  auto recorded = pt::run_perfscope({"record", "--call-graph", "dwarf", "-e", "cpu-clock", "-F",
                                     "1000", "-o", unwound, "--", no_frame_pointers});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto report = pt::run_command({perf_path, "report", "-i", unwound, "--stdio", "--no-children",
                                 "--sort", "sym", "-g", "caller"});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  EXPECT_EQ(report.err.find("arning"), std::string::npos) << report.err;
  // The leaves under main, from the call chains alone (perf finds no stack to unwind).
  EXPECT_NE(report.out.find("leaf_60"), std::string::npos) << report.out;
  EXPECT_NE(report.out.find("main"), std::string::npos) << report.out;
  auto script = pt::run_command({perf_path, "script", "-i", unwound, "-F", "ip,sym"});
  ASSERT_EQ(script.exit_status, 0) << script.err;
  EXPECT_NE(script.out.find("main"), std::string::npos);
}

// The rows of `report --stdio --no-children`: symbol -> share.
std::map<std::string, double> report_rows(const std::string& file) {
  auto report = pt::run_perfscope(
      {"report", "-i", file, "--stdio", "--no-children", "--sort", "sym", "-g", "none"});
  EXPECT_EQ(report.exit_status, 0) << report.err;
  std::map<std::string, double> rows;
  std::istringstream in(report.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string share, samples;
    if (!(words >> share) || share.back() != '%') continue;
    std::string symbol;
    std::getline(words, symbol);
    rows[symbol.substr(symbol.find_first_not_of(' '))] += std::stod(share);
  }
  return rows;
}

// perf's DWARF file, unwound by inject: report's rows of the original within 0.5 points, a
// fraction of the size, and perf reads it.
TEST(StackCompletion, InjectUnwindKeepsTheRowsOfPerfsDwarfFile) {
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  pt::TempDir dir;
  std::string original = dir.path() + "/perf.data", unwound = dir.path() + "/small.data";
  auto recorded =
      pt::run_command({perf_path, "record", "-q", "--call-graph", "dwarf", "-e", "cpu-clock", "-F",
                       "1000", "-o", original, "--", no_frame_pointers});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto injected = pt::run_perfscope({"inject", "--unwind", "-i", original, "-o", unwound});
  ASSERT_EQ(injected.exit_status, 0) << injected.err;
  EXPECT_NE(injected.err.find("samples unwound ("), std::string::npos) << injected.err;
  auto before = report_rows(original), after = report_rows(unwound);
  ASSERT_FALSE(before.empty());
  for (const auto& [symbol, share] : before) {
    if (share < 1.0) continue;
    EXPECT_NEAR(after[symbol], share, 0.5) << symbol;
  }
  auto children = folded_report(unwound);
  EXPECT_GE(weight_of(children, {";main;", ";leaf_60"}) / total_of(children), 0.5);
  EXPECT_LT(file_size(unwound) * 10, file_size(original));
  auto perf_report = pt::run_command({perf_path, "report", "-i", unwound, "--stdio"});
  EXPECT_EQ(perf_report.exit_status, 0) << perf_report.err;
  EXPECT_NE(perf_report.out.find("leaf_60"), std::string::npos);
}

TEST(StackCompletion, InjectUnwindRefusesWhatItCannotDo) {
  pt::TempDir dir;
  std::string plain = dir.path() + "/fp.data";
  auto recorded = pt::run_perfscope(
      {"record", "--call-graph", "fp", "-e", "cpu-clock", "-o", plain, "--", "true"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto refused = pt::run_perfscope({"inject", "--unwind", "-i", plain, "-o", dir.path() + "/x"});
  EXPECT_EQ(refused.exit_status, 2);
  EXPECT_NE(refused.err.find("the recording has no stack copies to unwind"), std::string::npos)
      << refused.err;
  auto same = pt::run_perfscope({"inject", "--unwind", "-i", plain, "-o", plain});
  EXPECT_EQ(same.exit_status, 2);
  EXPECT_NE(same.err.find("that is the input"), std::string::npos) << same.err;
  auto nothing = pt::run_perfscope({"inject", "-i", plain, "-o", dir.path() + "/y"});
  EXPECT_EQ(nothing.exit_status, 2);
  EXPECT_NE(nothing.err.find("--unwind"), std::string::npos) << nothing.err;
}

TEST(StackCompletion, KeepStacksNeedsDwarf) {
  auto refused = pt::run_perfscope({"record", "-g", "--keep-stacks", "--", "true"});
  EXPECT_EQ(refused.exit_status, 2);
  EXPECT_NE(refused.err.find("--keep-stacks keeps the user stack copies of --call-graph dwarf"),
            std::string::npos)
      << refused.err;
}

}  // namespace
