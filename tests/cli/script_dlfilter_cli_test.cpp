// perf script --dlfilter on perfscope (issue #45): a C filter compiled against perf's
// perf_dlfilter.h, unchanged, picks the same samples in perfscope script as in perf script (its
// start, filter_event_early, filter_event and stop, and the callbacks it makes: args,
// resolve_ip, resolve_address, attr, object_code, insn, srcline).
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

const std::string perf_path = "/usr/bin/perf";
const std::string workload = PERFSCOPE_KNOWN_ANSWER_FP_PATH;

#ifdef PERFSCOPE_DLFILTER_PATH
const std::string filter = PERFSCOPE_DLFILTER_PATH;
#else
const std::string filter;
#endif
#ifdef PERFSCOPE_PRINT_DLFILTER_PATH
const std::string print_filter = PERFSCOPE_PRINT_DLFILTER_PATH;
#else
const std::string print_filter;
#endif

std::string busiest_pid(const std::string& data) {
  auto pids = pt::run_perfscope({"script", "-i", data, "-F", "pid"});
  std::string first = pids.out.substr(0, pids.out.find('\n'));
  return first.substr(first.find_first_not_of(' '));
}

TEST(ScriptDlfilter, PerfsFilterPicksPerfsSamples) {
  if (filter.empty()) GTEST_SKIP() << "perf's perf_dlfilter.h is not installed (linux-perf)";
  pt::TempDir dir;
  std::string data = dir.path() + "/ka.data";
  auto recorded = pt::run_perfscope({"record", "-q", "-o", data, "--", workload, "20"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  std::string pid = busiest_pid(data);
  std::vector<std::string> words{"script",  "-i", data,      "--dlfilter", filter,
                                 "--dlarg", pid,  "--dlarg", "leaf_30"};
  auto ours = pt::run_perfscope(words);
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  // Only leaf_30's samples of the process, about 30 % of its 6:3:1 work.
  auto all = pt::run_perfscope({"script", "-i", data});
  std::size_t kept = 0, total = 0;
  for (std::size_t at = 0; (at = ours.out.find('\n', at)) != std::string::npos; ++at) ++kept;
  for (std::size_t at = 0; (at = all.out.find('\n', at)) != std::string::npos; ++at) ++total;
  EXPECT_GT(kept, total / 5) << ours.out.substr(0, 500);
  EXPECT_LT(kept, total * 2 / 5);
  EXPECT_EQ(ours.out.find("leaf_60"), std::string::npos);
  // stop() ran once, after every sample went through both calls.
  EXPECT_NE(ours.err.find("keep_pid_symbol: kept " + std::to_string(kept) + " of "),
            std::string::npos)
      << ours.err;
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  std::vector<std::string> perf_words{perf_path};
  perf_words.insert(perf_words.end(), words.begin(), words.end());
  auto perf = pt::run_command(perf_words);
  EXPECT_EQ(ours.out, perf.out);
  EXPECT_EQ(ours.err, perf.err);
}

// The filter's lines ("ip IP dso FILE insn BYTES srcline FILE:LINE") for the samples in files
// of `dsos`.
std::vector<std::string> callback_lines(const std::string& out,
                                        const std::vector<std::string>& dsos) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("ip ")) continue;
    for (const std::string& dso : dsos) {
      if (line.find(" dso " + dso + " ") != std::string::npos) lines.push_back(line);
    }
  }
  return lines;
}

TEST(ScriptDlfilter, InstructionAndSourceLineAreThoseOfPerf) {
  if (print_filter.empty()) GTEST_SKIP() << "perf's perf_dlfilter.h is not installed (linux-perf)";
  pt::TempDir dir;
  std::string data = dir.path() + "/ka.data";
  auto recorded = pt::run_perfscope({"record", "-q", "-o", data, "--", workload, "5"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  std::vector<std::string> words{"script", "-i", data, "--dlfilter", print_filter};
  auto ours = pt::run_perfscope(words);
  ASSERT_EQ(ours.exit_status, 0) << ours.err;
  // The workload's own samples: whole x86 instructions and known_answer.cpp's lines; the
  // kernel's: neither (no file holds the kernel's code or lines).
  std::vector<std::string> own = callback_lines(ours.out, {workload});
  ASSERT_GT(own.size(), 50u) << ours.out.substr(0, 2000);
  static const std::regex own_line(
      R"(ip [0-9a-f]+ dso \S+ insn( [0-9a-f]{2})+ srcline \S+/known_answer\.cpp:[1-9][0-9]*)");
  std::size_t whole = 0;
  for (const std::string& line : own) whole += std::regex_match(line, own_line) ? 1 : 0;
  EXPECT_GT(whole, own.size() * 9 / 10) << own.front();
  for (const std::string& line : callback_lines(ours.out, {"[kernel.kallsyms]"})) {
    EXPECT_TRUE(line.ends_with(" insn srcline (none):0")) << line;
  }
  if (::access(perf_path.c_str(), X_OK) != 0) GTEST_SKIP() << "Linux perf is not installed";
  std::vector<std::string> perf_words{perf_path};
  perf_words.insert(perf_words.end(), words.begin(), words.end());
  auto perf = pt::run_command(perf_words);
  ASSERT_EQ(perf.exit_status, 0) << perf.err;
  // perf's file is the unit's directory joined to the name the DWARF gives
  // ("/src/build/../tests/x.cpp"); perfscope shortens it ("/src/tests/x.cpp").
  std::vector<std::string> theirs = callback_lines(perf.out, {workload, "[kernel.kallsyms]"});
  for (std::string& line : theirs) {
    std::size_t file = line.find(" srcline /");
    if (file == std::string::npos) continue;
    file += std::string_view(" srcline ").size();
    std::size_t colon = line.rfind(':');
    std::string path = line.substr(file, colon - file);
    line.replace(file, colon - file, std::filesystem::path(path).lexically_normal().string());
  }
  // An address of the workload without a line (its PLT, _start): perf's addr2line answers "??"
  // where perfscope's srcline callback returns NULL (the filter prints "(none)"); rare, noted.
  std::vector<std::string> mine = callback_lines(ours.out, {workload, "[kernel.kallsyms]"});
  for (std::string& line : mine) {
    if (line.find("[kernel.kallsyms]") == std::string::npos && line.ends_with(" (none):0")) {
      line.replace(line.size() - std::string_view("(none):0").size(), std::string::npos, "??:0");
    }
  }
  EXPECT_EQ(mine, theirs);
}

TEST(ScriptDlfilter, FailuresSayWhat) {
  if (filter.empty()) GTEST_SKIP() << "perf's perf_dlfilter.h is not installed (linux-perf)";
  pt::TempDir dir;
  std::string data = dir.path() + "/ka.data";
  ASSERT_EQ(pt::run_perfscope({"record", "-q", "-o", data, "--", workload, "2"}).exit_status, 0);
  // start() refuses without its two arguments.
  auto no_args = pt::run_perfscope({"script", "-i", data, "--dlfilter", filter});
  EXPECT_EQ(no_args.exit_status, 1);
  EXPECT_NE(no_args.err.find("start() failed"), std::string::npos) << no_args.err;
  auto missing = pt::run_perfscope({"script", "-i", data, "--dlfilter", "no_such_filter.so"});
  EXPECT_EQ(missing.exit_status, 1);
  EXPECT_NE(missing.err.find("no_such_filter.so"), std::string::npos) << missing.err;
  auto lone_arg = pt::run_perfscope({"script", "-i", data, "--dlarg", "1"});
  EXPECT_NE(lone_arg.exit_status, 0);
  EXPECT_NE(lone_arg.err.find("--dlfilter"), std::string::npos) << lone_arg.err;
}

}  // namespace
