// `perfscope view` (issue #34) in headless Chromium: the viewer is started on real recordings
// and tests/browser/check_viewer.mjs (node, puppeteer-core) drives the application and prints
// what it shows; the figures are judged here against the known answer (60/30/10 %), against
// `perfscope report` of the same file, and against what the workloads measured. Screenshots of
// each view are kept in the build directory (their paths are printed). Where Chromium, node or
// puppeteer-core are missing the browser tests skip, and the program exits 77 (ctest's skip).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/background_command.hpp"
#include "support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
namespace pt = perfscope::testing;
using nlohmann::json;

const std::string known_answer_fp = PERFSCOPE_KNOWN_ANSWER_FP_PATH;
const std::string waits_workload = PERFSCOPE_STACK_GAPS_WORKLOAD_PATH;
const std::string script = PERFSCOPE_VIEWER_SCRIPT;
const std::string artifacts = PERFSCOPE_BROWSER_ARTIFACTS;

std::optional<std::string> missing_node() {
  if (pt::run_command({"node", "--version"}).exit_status != 0) {
    return std::string("node is not installed (apt-get install nodejs)");
  }
  return std::nullopt;
}

std::optional<std::string> missing_browser() {
  return pt::missing_browser(fs::path(script).parent_path().string(), {"puppeteer-core"});
}

#define SKIP_WITHOUT_BROWSER()                                    \
  if (auto missing = missing_browser()) GTEST_SKIP() << *missing; \
  static_assert(true)

// `perfscope view --no-open FILE` running, and the address it printed.
class Viewer {
 public:
  explicit Viewer(const std::string& file, const std::string& second = "")
      : command_(
            second.empty()
                ? std::vector<std::string>{PERFSCOPE_CLI_PATH, "view", "--no-open", file}
                : std::vector<std::string>{PERFSCOPE_CLI_PATH, "view", "--no-open", file, second}) {
    EXPECT_TRUE(command_.wait_for_output("/t/", 60000)) << command_.out() << command_.err();
    std::smatch match;
    std::string out = command_.out();
    static const std::regex address(R"(http://127\.0\.0\.1:\d+/t/[0-9a-f]{32}/)");
    if (std::regex_search(out, match, address)) url_ = match[0];
  }
  const std::string& url() const { return url_; }
  // Ctrl-C stops it cleanly.
  pt::CommandResult stop() {
    command_.signal(SIGINT);
    return command_.wait(20000);
  }

 private:
  pt::BackgroundCommand command_;
  std::string url_;
};

// What check_viewer.mjs saw; nothing when it skipped.
std::optional<json> drive(const std::string& mode, const std::string& url, std::string& skipped,
                          const std::string& argument = "") {
  // Each test's screenshots in a folder of its own.
  std::string folder =
      artifacts + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::vector<std::string> argv{"node", script, mode, url, folder};
  if (!argument.empty()) argv.push_back(argument);
  auto result = pt::run_command(argv);
  if (result.exit_status == 77) {
    skipped = result.err;
    return std::nullopt;
  }
  EXPECT_EQ(result.exit_status, 0) << result.err;
  if (result.exit_status != 0) return json::object();
  return json::parse(result.out, nullptr, false);
}

void expect_clean_page(const json& page) {
  EXPECT_TRUE(page["page_errors"].empty()) << page["page_errors"];
  EXPECT_TRUE(page["dialogs"].empty()) << page["dialogs"];
  for (const auto& shot : page["screenshots"]) {
    std::ifstream file(shot.get<std::string>(), std::ios::binary);
    char magic[4] = {};
    file.read(magic, 4);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG") << shot;
    std::printf("screenshot: %s\n", shot.get<std::string>().c_str());
  }
}

double percent_text(const std::string& text) { return std::stod(text); }

// What check_viewer.mjs's flame mode saw on the known-answer recording `file`, judged: widths,
// zoom, search, keyboard, the function pane against annotate, the bottom-up rows against report.
void expect_known_answer_page(const json& p, const std::string& file) {
  // The known answer: work_60 is 60 % of main's width, work_30 30 %.
  double main_width = p["main_width"].get<double>();
  EXPECT_NEAR(p["work_60_width"].get<double>() / main_width, 0.60, 0.03) << p.dump();
  EXPECT_NEAR(p["work_30_width"].get<double>() / main_width, 0.30, 0.03) << p.dump();
  // A click zooms work_60 to the graph's width; the address reopens that zoom.
  double graph = p["graph_width"].get<double>();
  EXPECT_NEAR(p["zoomed_work_60_width"].get<double>(), graph, 1.0);
  EXPECT_NE(p["zoomed_hash"].get<std::string>().find("work_60"), std::string::npos);
  EXPECT_NEAR(p["reloaded_work_60_width"].get<double>(), graph, 1.0);
  // Search: work_30 is 30 % of the view, and its frame is highlighted.
  EXPECT_NEAR(p["search_work_30"].get<double>(), 0.30, 0.03);
  EXPECT_EQ(p["highlighted"], json::array({"work_30"}));
  // Keyboard: "/" focuses the search, Enter on a frame zooms to it.
  EXPECT_TRUE(p["slash_focuses_search"].get<bool>());
  EXPECT_EQ(p["keyboard_zoom"], "work_30");
  EXPECT_NEAR(p["keyboard_zoom_width"].get<double>(), graph, 1.0);
  // The icicle graph draws the same widths.
  EXPECT_NEAR(p["icicle_work_60_width"].get<double>() / p["icicle_main_width"].get<double>(),
              p["work_60_width"].get<double>() / main_width, 0.001);
  // The call tree's hot path: main, then work_60, then leaf_60.
  std::vector<std::string> hot = p["hot_path"];
  auto at = [&](const std::string& name) {
    return std::find(hot.begin(), hot.end(), name) - hot.begin();
  };
  ASSERT_LT(at("leaf_60"), static_cast<long>(hot.size())) << p["hot_path"];
  EXPECT_LT(at("main"), at("work_60"));
  EXPECT_LT(at("work_60"), at("leaf_60"));
  // The bottom-up rows are report --stdio's rows (self shares), row by row.
  auto report = pt::run_perfscope({"report", "--stdio", "--no-children", "-g", "none", "-i", file});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  std::map<std::string, double> reported;
  std::istringstream lines(report.out);
  static const std::regex row(R"(^\s+([0-9.]+)%\s+\d+\s+\S+\s+\S+\s+\[[.k]\]\s+(\S+)\s*$)");
  std::smatch match;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, match, row)) reported[match[2]] += std::stod(match[1]);
  }
  ASSERT_TRUE(reported.count("leaf_60")) << report.out;
  std::size_t compared = 0;
  for (const auto& shown : p["bottom_up_rows"]) {
    std::string name = shown["name"];
    if (!reported.count(name)) continue;
    EXPECT_NEAR(percent_text(shown["total"]), reported[name], 0.011) << name;
    EXPECT_NEAR(percent_text(shown["self"]), reported[name], 0.011) << name;
    ++compared;
  }
  for (const auto& entry : reported) {
    if (entry.second < 1.0) continue;
    const std::string& name = entry.first;  // a structured binding: not captured by clang 14
    bool shown = std::any_of(p["bottom_up_rows"].begin(), p["bottom_up_rows"].end(),
                             [&](const json& r) { return r["name"] == name; });
    EXPECT_TRUE(shown) << name << " is in report's rows but not the viewer's";
  }
  EXPECT_GE(compared, 3u);
  // The function pane: leaf_60's caller, and its instructions' shares as annotate gives them.
  EXPECT_EQ(p["function_title"], "leaf_60");
  EXPECT_EQ(p["function_callers"], json::array({"work_60"}));
  // Several levels of callers: work_60, then main, then libc's start.
  ASSERT_GE(p["function_caller_chain"].size(), 2u) << p["function_caller_chain"];
  EXPECT_EQ(p["function_caller_chain"][0], json::array({"work_60", 1}));
  EXPECT_EQ(p["function_caller_chain"][1], json::array({"main", 2}));
  EXPECT_GT(p["function_lines"].get<int>(), 0);
  EXPECT_NE(p["function_hash"].get<std::string>().find("fn=leaf_60"), std::string::npos);
  // "?" lists the keys; Escape hides the list.
  EXPECT_EQ(p["shortcuts"], json::array({"/", "Enter", "f", "Escape", "?"})) << p["shortcuts"];
  EXPECT_TRUE(p["shortcuts_hidden"].get<bool>());
  // It opens in view and closes with Escape.
  EXPECT_TRUE(p["function_pane_in_view"].get<bool>());
  EXPECT_TRUE(p["function_pane_closed"].get<bool>());
  EXPECT_EQ(p["function_hash_closed"].get<std::string>().find("fn="), std::string::npos);
  auto annotated = pt::run_perfscope({"annotate", "--format", "json", "-i", file, "leaf_60"});
  ASSERT_EQ(annotated.exit_status, 0) << annotated.err;
  json annotation = json::parse(annotated.out);
  std::map<std::string, double> by_address;
  for (const auto& instruction : annotation["functions"][0]["instructions"]) {
    by_address[instruction["address"]] = instruction["percent"];
  }
  ASSERT_EQ(p["function_instructions"].size(), by_address.size());
  double hottest = 0;
  for (const auto& instruction : p["function_instructions"]) {
    std::string address = instruction["address"];
    ASSERT_TRUE(by_address.count(address)) << address;
    EXPECT_DOUBLE_EQ(instruction["percent"].get<double>(), by_address[address]) << address;
    hottest = std::max(hottest, instruction["percent"].get<double>());
  }
  EXPECT_GT(hottest, 5.0);
  expect_clean_page(p);
}

TEST(ViewCli, FlameGraphCallTreeAndSearchShowTheKnownAnswer) {
  SKIP_WITHOUT_BROWSER();
  pt::TempDir dir;
  std::string file = dir.path() + "/known.data";
  auto recorded =
      pt::run_perfscope({"record", "-F", "4000", "-g", "-o", file, "--", known_answer_fp, "300"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  Viewer viewer(file);
  ASSERT_FALSE(viewer.url().empty());
  std::string skipped;
  auto page = drive("flame", viewer.url(), skipped);
  if (!page) GTEST_SKIP() << skipped;
  ASSERT_TRUE(page->is_object() && page->contains("main_width")) << page->dump();
  expect_known_answer_page(*page, file);
  auto stopped = viewer.stop();
  EXPECT_EQ(stopped.exit_status, 0) << stopped.err;
}

// report --format html: the same application and numbers from file://, no server.
TEST(ViewCli, HtmlReportShowsTheSameFromAFile) {
  SKIP_WITHOUT_BROWSER();
  pt::TempDir dir;
  std::string file = dir.path() + "/known.data", html = dir.path() + "/known.html";
  auto recorded =
      pt::run_perfscope({"record", "-F", "4000", "-g", "-o", file, "--", known_answer_fp, "300"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  auto written = pt::run_perfscope({"report", "--format", "html", "-o", html, "-i", file});
  ASSERT_EQ(written.exit_status, 0) << written.err;
  EXPECT_LT(fs::file_size(html), 10u << 20);
  std::string skipped;
  auto page = drive("flame", "file://" + html, skipped);
  if (!page) GTEST_SKIP() << skipped;
  ASSERT_TRUE(page->is_object() && page->contains("main_width")) << page->dump();
  expect_known_answer_page(*page, file);
}

// First half leaf_60 alone, second half leaf_30 alone: dragging over the first half of the
// timeline (up to where the second program's samples begin) makes leaf_60 all but the whole of
// every view.
TEST(ViewCli, TimelineRangeFiltersEveryView) {
  SKIP_WITHOUT_BROWSER();
  pt::TempDir dir;
  std::string file = dir.path() + "/phased.data";
  auto recorded =
      pt::run_perfscope({"record", "-F", "2000", "-g", "-o", file, "--", "/bin/sh", "-c",
                         known_answer_fp + " 300 1,0,0 && " + known_answer_fp + " 300 0,1,0"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  // Where the second program's first sample falls on the timeline (first to last sample): the
  // drag ends at nine tenths of that, however a busy machine stretched either phase.
  auto script_out = pt::run_perfscope({"script", "-F", "time,sym", "-i", file});
  ASSERT_EQ(script_out.exit_status, 0) << script_out.err;
  std::istringstream lines(script_out.out);
  static const std::regex header(R"(^\s*(\d+\.\d+):\s*$)"), leaf(R"(^\s+(\S+)\s*$)");
  double first = -1, last = 0, second_phase = -1, time = 0;
  bool expect_leaf = false;
  std::smatch match;
  std::vector<double> leaf_60_times;  // seconds
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, match, header)) {
      time = std::stod(match[1]);
      if (first < 0) first = time;
      last = time;
      expect_leaf = true;
    } else if (expect_leaf && std::regex_match(line, match, leaf)) {
      if (match[1] == "leaf_30" && second_phase < 0) second_phase = time;
      if (match[1] == "leaf_60") leaf_60_times.push_back(time);
      expect_leaf = false;
    }
  }
  ASSERT_GT(second_phase, first) << script_out.out.substr(0, 2000);
  double range_end = 0.9 * (second_phase - first) / (last - first);
  // The first program's thread: the one of leaf_60's samples.
  auto tids = pt::run_perfscope({"script", "-F", "tid,sym", "-i", file});
  ASSERT_EQ(tids.exit_status, 0) << tids.err;
  std::smatch tid_match;
  ASSERT_TRUE(std::regex_search(tids.out, tid_match, std::regex(R"((\d+)\s*\n\s+leaf_60)")))
      << tids.out.substr(0, 2000);
  const std::string argument = fmt::format("{:.4f},{}", range_end, tid_match[1].str());
  Viewer viewer(file);
  ASSERT_FALSE(viewer.url().empty());
  std::string skipped;
  auto page = drive("phased", viewer.url(), skipped, argument);
  if (!page) GTEST_SKIP() << skipped;
  ASSERT_TRUE(page->contains("first_half_leaf_60")) << page->dump();
  const json& p = *page;
  // The html file answers the same range and filter from its own table (the range rounded out
  // to its 1024 spans); its function pane is the whole recording's, and says so.
  std::string html = dir.path() + "/phased.html";
  auto written = pt::run_perfscope({"report", "--format", "html", "-o", html, "-i", file});
  ASSERT_EQ(written.exit_status, 0) << written.err;
  auto from_file = drive("phased", "file://" + html, skipped, argument);
  ASSERT_TRUE(from_file && from_file->contains("first_half_leaf_60")) << skipped;
  const json& f = *from_file;
  EXPECT_NEAR(f["whole_leaf_60"].get<double>(), p["whole_leaf_60"].get<double>(), 1e-9);
  EXPECT_GE(f["first_half_leaf_60"].get<double>(), 0.90) << f.dump();
  EXPECT_LE(f["first_half_leaf_30"].get<double>(), 0.02) << f.dump();
  ASSERT_FALSE(f["first_half_rows"].empty());
  EXPECT_EQ(f["first_half_rows"][0]["name"], "leaf_60");
  EXPECT_NE(f["range_label"].get<std::string>().find("1024 spans"), std::string::npos)
      << f["range_label"];
  EXPECT_EQ(f["range_function_samples"].get<double>(), static_cast<double>(leaf_60_times.size()));
  EXPECT_NE(f["range_function_summary"].get<std::string>().find("whole recording only"),
            std::string::npos)
      << f["range_function_summary"];
  EXPECT_GE(f["tid_leaf_60"].get<double>(), 0.90) << f.dump();
  EXPECT_EQ(f["tid_leaf_30"].get<double>(), 0.0) << f.dump();
  EXPECT_NEAR(f["tid_leaf_60"].get<double>(), p["tid_leaf_60"].get<double>(), 1e-9);
  expect_clean_page(f);
  EXPECT_NEAR(p["whole_leaf_60"].get<double>(), 0.5, 0.1) << p.dump();
  // A time axis under the lanes, aligned with them: six ticks from 0 ms, rising; each lane says
  // its share, and the shares add up to the whole.
  ASSERT_EQ(p["axis"].size(), 6u) << p.dump();
  EXPECT_LT(std::abs(p["axis"][0].get<double>()), 1.0) << p["axis"];
  for (std::size_t i = 1; i < 6; ++i) {
    EXPECT_GT(p["axis"][i].get<double>(), p["axis"][i - 1].get<double>()) << p["axis"];
  }
  EXPECT_TRUE(p["axis_aligned"].get<bool>());
  double shares = 0;
  for (const auto& share : p["lane_shares"]) shares += share.get<double>();
  EXPECT_NEAR(shares, 1.0, 1e-6) << p["lane_shares"];
  // (The range's end lies near the phase change: a busy machine, such as the sanitizer pass's,
  // moves a few percent across it.)
  EXPECT_GE(p["first_half_leaf_60"].get<double>(), 0.90) << p.dump();
  EXPECT_LE(p["first_half_leaf_30"].get<double>(), 0.02) << p.dump();
  EXPECT_NE(p["hash"].get<std::string>().find("from="), std::string::npos);
  ASSERT_FALSE(p["first_half_rows"].empty());
  EXPECT_EQ(p["first_half_rows"][0]["name"], "leaf_60");
  // (The range's end lies near the phase change: a busy machine moves a few percent across it,
  // and stretches the program's start-up, whose samples are in the range too: 87.5 % in a
  // sanitizer pass. leaf_30's share above says the range left the second program out.)
  EXPECT_GE(percent_text(p["first_half_rows"][0]["total"]), 80.0);
  // The function pane counts leaf_60's samples in the range alone: those script shows between
  // the range's ends (in the address, ns; script's times are whole microseconds, so a sample
  // within a microsecond of an end may count on the other side).
  std::string hash = p["hash"].get<std::string>();
  std::smatch ends;
  ASSERT_TRUE(std::regex_search(hash, ends, std::regex(R"(from=(\d+)&to=(\d+))"))) << hash;
  const double from = std::stod(ends[1]) / 1e9, to = std::stod(ends[2]) / 1e9;
  auto in_range = std::count_if(leaf_60_times.begin(), leaf_60_times.end(),
                                [&](double t) { return t >= from - 1e-6 && t < to + 1e-6; });
  auto surely_in = std::count_if(leaf_60_times.begin(), leaf_60_times.end(),
                                 [&](double t) { return t >= from + 1e-6 && t < to - 1e-6; });
  const double pane = p["range_function_samples"].get<double>();
  EXPECT_GE(pane, static_cast<double>(surely_in)) << p["range_function_summary"];
  EXPECT_LE(pane, static_cast<double>(in_range)) << p["range_function_summary"];
  EXPECT_NE(p["range_function_summary"].get<std::string>().find("in the selected range"),
            std::string::npos);
  // The range cleared, the open pane follows: every leaf_60 sample of the recording.
  EXPECT_EQ(p["cleared_function_samples"].get<double>(), static_cast<double>(leaf_60_times.size()));
  EXPECT_EQ(f["cleared_function_samples"].get<double>(), static_cast<double>(leaf_60_times.size()));
  // The first program's thread alone, over the whole recording: leaf_60 all but its start-up
  // (98.9 % seen under the sanitizer pass, 94.7 % there on a busier run), and nothing of the
  // second program's leaf_30.
  EXPECT_GE(p["tid_leaf_60"].get<double>(), 0.90) << p.dump();
  EXPECT_EQ(p["tid_leaf_30"].get<double>(), 0.0) << p.dump();
  expect_clean_page(p);
}

TEST(ViewCli, EventSwitchShowsTheOffCpuWaits) {
  SKIP_WITHOUT_BROWSER();
  if (!pt::running_as_root() || !pt::tracefs_available()) {
    GTEST_SKIP() << "needs root and tracefs for sched_switch (off-CPU stacks)";
  }
  pt::TempDir dir;
  std::string file = dir.path() + "/waits.data";
  // --wall: the off-CPU samples and cpu-clock ones, so the view offers wall time too.
  auto recorded = pt::run_perfscope(
      {"record", "--wall", "-g", "-o", file, "--", waits_workload, "waits", "200"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  Viewer viewer(file);
  ASSERT_FALSE(viewer.url().empty());
  std::string skipped;
  auto page = drive("offcpu", viewer.url(), skipped);
  if (!page) GTEST_SKIP() << skipped;
  const json& p = *page;
  ASSERT_GE(p["offcpu_index"].get<int>(), 0) << p.dump();
  // The switch event the off-CPU samples were made from has none of its own: not offered.
  for (const auto& offered : p["events"]) {
    EXPECT_EQ(offered.get<std::string>().find("(0 samples)"), std::string::npos) << p["events"];
  }
  EXPECT_EQ(p["events"].size(), 3u) << p["events"];  // cpu-clock, offcpu-time, wall-time
  // The workload sleeps 200 ms and waits 200 ms on a pipe in each of its two threads' turns:
  // each a third of the blocked time (the rest is the threads' start and join).
  EXPECT_GT(p["sleep_share"].get<double>(), 0.2) << p.dump();
  EXPECT_GT(p["pipe_share"].get<double>(), 0.2) << p.dump();
  EXPECT_FALSE(p["lanes"].empty());
  // Sleeping (the sleep and the pipe read) is most of the blocked time; preemptions on a busy
  // machine may add some.
  ASSERT_TRUE(p["states"].contains("sleeping")) << p.dump();
  EXPECT_GT(p["states"]["sleeping"].get<double>(), 0.5) << p.dump();
  // Wall time: each of the two waiting threads (the process and its child) sleeps 200 ms and
  // waits 200 ms on the pipe, almost never on the CPU; the writer threads sleep 200 ms. So a
  // main thread's wall time is at least 400 ms, and the states seen are mostly sleeping.
  ASSERT_GE(p["wall_index"].get<int>(), 0) << p.dump();
  EXPECT_GT(p["wall_sleep_share"].get<double>(), 0.15) << p.dump();
  EXPECT_GT(p["wall_pipe_share"].get<double>(), 0.15) << p.dump();
  // (The workload's few milliseconds on the CPU may get no cpu-clock sample at all.)
  if (p["wall_states"].contains("on-cpu")) {
    EXPECT_LT(p["wall_states"]["on-cpu"].get<double>(), 0.3) << p.dump();
  }
  EXPECT_GT(p["wall_states"]["sleeping"].get<double>(), 0.5) << p.dump();
  ASSERT_FALSE(p["wall_lane_weights"].empty());
  EXPECT_GE(p["wall_lane_weights"][0].get<double>(), 400e6) << p["wall_lane_weights"];
  expect_clean_page(p);
  // The html file answers the same from its table.
  std::string html = dir.path() + "/waits.html";
  auto written = pt::run_perfscope({"report", "--format", "html", "-o", html, "-i", file});
  ASSERT_EQ(written.exit_status, 0) << written.err;
  auto from_file = drive("offcpu", "file://" + html, skipped);
  ASSERT_TRUE(from_file && from_file->contains("wall_index")) << skipped;
  const json& f = *from_file;
  for (const char* share : {"sleep_share", "pipe_share", "wall_sleep_share", "wall_pipe_share"}) {
    EXPECT_NEAR(f[share].get<double>(), p[share].get<double>(), 0.001) << share << f.dump();
  }
  EXPECT_NEAR(f["wall_states"]["sleeping"].get<double>(),
              p["wall_states"]["sleeping"].get<double>(), 0.01)
      << f.dump();
  expect_clean_page(f);
}

// 6,3,1 units against 3,6,1: the differential flame graph colours work_60 and work_30 with
// opposite signs, and the table says about -30 and +30 points for their leaves.
TEST(ViewCli, DiffOfTwoRecordingsShowsWhatMoved) {
  SKIP_WITHOUT_BROWSER();
  pt::TempDir dir;
  std::string base = dir.path() + "/base.data", current = dir.path() + "/new.data";
  for (const auto& [file, units] : {std::pair{base, "6,3,1"}, std::pair{current, "3,6,1"}}) {
    auto recorded = pt::run_perfscope(
        {"record", "-F", "4000", "-g", "-o", file, "--", known_answer_fp, "300", units});
    ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  }
  Viewer viewer(base, current);
  ASSERT_FALSE(viewer.url().empty());
  std::string skipped;
  auto page = drive("diff", viewer.url(), skipped);
  if (!page) GTEST_SKIP() << skipped;
  const json& p = *page;
  ASSERT_TRUE(p["diff_tab_shown"].get<bool>()) << p.dump();
  ASSERT_TRUE(p["frame_deltas"].contains("work_60")) << p.dump();
  EXPECT_NEAR(p["frame_deltas"]["work_60"].get<double>(), -30.0, 3.0);
  EXPECT_NEAR(p["frame_deltas"]["work_30"].get<double>(), 30.0, 3.0);
  EXPECT_EQ(p["frame_hues"]["work_60"], "220");  // blue: shrank
  EXPECT_EQ(p["frame_hues"]["work_30"], "0");    // red: grew
  std::map<std::string, double> table;
  for (const auto& row : p["table"]) table[row["name"]] = row["delta"];
  EXPECT_NEAR(table["leaf_60"], -30.0, 3.0) << p["table"];
  EXPECT_NEAR(table["leaf_30"], 30.0, 3.0) << p["table"];
  // Significance: thirty points of thousands of samples are far beyond chance; main (every
  // sample on both sides) did not change.
  for (const auto& row : p["table"]) {
    if (row["name"] == "leaf_60" || row["name"] == "leaf_30") {
      EXPECT_TRUE(row["significant"].get<bool>()) << row;
      EXPECT_LT(row["p_value"].get<double>(), 1e-6) << row;
      EXPECT_NE(row["text"].get<std::string>().find('.'), std::string::npos);
    }
    if (row["name"] == "main") {
      EXPECT_FALSE(row["significant"].get<bool>()) << row;
    }
  }
  // The first half of the base's span: the samples each recording took in that long from its
  // own first sample are compared (script's times are whole microseconds: a sample or two at the
  // end may fall either way), and the shift is the same.
  auto times_of = [](const std::string& path) {
    auto printed = pt::run_perfscope({"script", "-F", "time", "-i", path});
    std::vector<double> times;
    std::istringstream in(printed.out);
    for (std::string line; std::getline(in, line);) times.push_back(std::stod(line));
    return times;
  };
  const std::vector<double> base_times = times_of(base), current_times = times_of(current);
  ASSERT_FALSE(base_times.empty() || current_times.empty());
  const double half_span = (base_times.back() - base_times.front()) / 2;
  auto within = [&](const std::vector<double>& times) {
    return static_cast<double>(std::count_if(
        times.begin(), times.end(), [&](double t) { return t - times.front() < half_span; }));
  };
  EXPECT_NEAR(p["half_samples"]["base"].get<double>(), within(base_times), 2.0)
      << p["half_samples"];
  EXPECT_NEAR(p["half_samples"]["current"].get<double>(), within(current_times), 2.0)
      << p["half_samples"] << " half of the base's span: " << half_span << " s";
  // The range cut the base (its half span holds part of its samples); it cuts the current one
  // only where that run took longer than half the base's (two runs of one workload on a loaded
  // host can differ twofold: then every current sample is in the range, and rightly counted).
  EXPECT_LT(p["half_samples"]["base"].get<double>(), p["diff_samples"]["base"].get<double>());
  if (within(current_times) < static_cast<double>(current_times.size())) {
    EXPECT_LT(p["half_samples"]["current"].get<double>(),
              p["diff_samples"]["current"].get<double>());
  }
  std::map<std::string, double> half;
  for (const auto& row : p["half_table"]) half[row["name"]] = row["delta"];
  EXPECT_NEAR(half["leaf_60"], -30.0, 4.0) << p["half_table"];
  EXPECT_NEAR(half["leaf_30"], 30.0, 4.0) << p["half_table"];
  expect_clean_page(p);
}

// A process named like markup: shown as text, no element made of it, no script run.
TEST(ViewCli, HostileProcessNamesAreText) {
  SKIP_WITHOUT_BROWSER();
  pt::TempDir dir;
  std::string program = dir.path() + "/<img src=x onerror=alert(1)>";
  fs::copy_file(known_answer_fp, program);
  fs::permissions(program, fs::perms::owner_all);
  std::string file = dir.path() + "/hostile.data";
  auto recorded = pt::run_perfscope({"record", "-g", "-o", file, "--", program, "50"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  Viewer viewer(file);
  ASSERT_FALSE(viewer.url().empty());
  std::string skipped;
  auto page = drive("hostile", viewer.url(), skipped);
  if (!page) GTEST_SKIP() << skipped;
  const json& p = *page;
  ASSERT_FALSE(p["lane_names"].empty()) << p.dump();
  // The kernel keeps 15 bytes of the name: "<img src=x oner".
  EXPECT_NE(p["lane_names"][0].get<std::string>().find("<img src=x oner"), std::string::npos);
  EXPECT_EQ(p["images"], 0);
  EXPECT_EQ(p["frames_with_markup"], 0);
  expect_clean_page(p);
  // The same in report --format html, where the names sit inside the page's own script.
  std::string html = dir.path() + "/hostile.html";
  auto written = pt::run_perfscope({"report", "--format", "html", "-o", html, "-i", file});
  ASSERT_EQ(written.exit_status, 0) << written.err;
  auto from_file = drive("hostile", "file://" + html, skipped);
  ASSERT_TRUE(from_file && from_file->contains("lane_names")) << skipped;
  EXPECT_NE((*from_file)["lane_names"][0].get<std::string>().find("<img src=x oner"),
            std::string::npos);
  EXPECT_EQ((*from_file)["images"], 0);
  expect_clean_page(*from_file);
}

// Code without symbols (Debian's stripped coreutils): its frames are named by file and offset,
// "yes+0x5249", as speedscope names them, not by a bare "0x0000000000005249".
TEST(ViewCli, UnresolvedFramesAreNamedByFileAndOffset) {
  SKIP_WITHOUT_BROWSER();
  pt::TempDir dir;
  std::string file = dir.path() + "/stripped.data";
  auto recorded = pt::run_perfscope({"record", "-q", "-e", "cpu-clock", "-o", file, "--", "sh",
                                     "-c", "yes | head -c 300000000 > /dev/null"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  Viewer viewer(file);
  ASSERT_FALSE(viewer.url().empty());
  std::string skipped;
  auto page = drive("names", viewer.url(), skipped);
  if (!page) GTEST_SKIP() << skipped;
  std::size_t by_offset = 0;
  // The file's name (yes, head, or dash for sh), then the offset.
  static const std::regex shown(R"([A-Za-z0-9_.-]+\+0x[0-9a-f]+)");
  static const std::regex bare(R"(0x0*([0-9a-f]+))");
  for (const auto& frame : (*page)["frames"]) {
    std::string text = frame["text"], name = frame["name"];
    std::smatch offset;
    if (!std::regex_match(name, offset, bare)) continue;
    EXPECT_TRUE(std::regex_match(text, shown)) << text << " for " << name;
    EXPECT_TRUE(text.ends_with("+0x" + offset[1].str())) << text << " for " << name;
    ++by_offset;
  }
  if (by_offset == 0) GTEST_SKIP() << "yes and head have symbols here (debug files)";
  // Each stripped file is named with the share of samples taken in it, the largest first, and
  // the warnings are still there after a frame was hovered.
  const json& warnings = (*page)["warnings"];
  ASSERT_FALSE(warnings.empty()) << page->dump();
  bool yes_named = false;
  for (std::size_t i = 0; i < warnings.size(); ++i) {
    if (i > 0) {
      EXPECT_LE(warnings[i]["share"].get<double>(), warnings[i - 1]["share"].get<double>());
    }
    std::string text = warnings[i]["text"];
    if (text.find("/yes has no symbol table") != std::string::npos) {
      yes_named = true;
      EXPECT_GT(warnings[i]["share"].get<double>(), 0.0) << text;
      EXPECT_NE(text.find("% of the samples: "), std::string::npos) << text;
    }
  }
  EXPECT_TRUE(yes_named) << warnings;
  expect_clean_page(*page);
  EXPECT_EQ(viewer.stop().exit_status, 0);
}

// A stack deeper than the screen: the graph scrolls in its own box, anchored at its root, so the
// root is on the first screen (it was 2,000 px down, under the towers of a 127-frame chain).
TEST(ViewCli, DeepStacksShowTheirRootOnTheFirstScreen) {
  SKIP_WITHOUT_BROWSER();
  pt::TempDir dir;
  std::string file = dir.path() + "/deep.data";
  auto recorded = pt::run_perfscope(
      {"record", "-q", "-g", "-o", file, "--", PERFSCOPE_DEEP_STACK_WORKLOAD_PATH, "300", "300"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  Viewer viewer(file);
  ASSERT_FALSE(viewer.url().empty());
  std::string skipped;
  auto page = drive("deep", viewer.url(), skipped);
  if (!page) GTEST_SKIP() << skipped;
  const json& p = *page;
  // The graph is taller than the screen, and its root is on it, in both orientations.
  EXPECT_GT(p["flame"]["graph"].get<double>(), p["flame"]["screen"].get<double>()) << p.dump();
  for (const char* graph : {"flame", "icicle"}) {
    EXPECT_GE(p[graph]["top"].get<double>(), 0.0) << graph << p.dump();
    EXPECT_LE(p[graph]["bottom"].get<double>(), 900.0) << graph << p.dump();
  }
  expect_clean_page(p);
  EXPECT_EQ(viewer.stop().exit_status, 0);
}

// The stack chart (Firefox Profiler's): one thread's stacks in time order. A program that spins
// in phase_a, then in phase_b: every phase_a box is left of every phase_b box, at one depth.
TEST(ViewCli, StackChartShowsSamplesInTimeOrder) {
  SKIP_WITHOUT_BROWSER();
  pt::TempDir dir;
  std::string file = dir.path() + "/phases.data";
  auto recorded = pt::run_perfscope({"record", "-q", "-g", "-o", file, "--",
                                     PERFSCOPE_DEEP_STACK_WORKLOAD_PATH, "phases", "200"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  Viewer viewer(file);
  ASSERT_FALSE(viewer.url().empty());
  std::string skipped;
  auto page = drive("stack", viewer.url(), skipped);
  if (!page) GTEST_SKIP() << skipped;
  const json& p = *page;
  double a_end = -1, b_start = 1e9;
  int a_depth = -1, b_depth = -2;
  for (const auto& segment : p["segments"]) {
    std::string name = segment["name"];
    if (name.find("phase_a") != std::string::npos) {
      a_end = std::max(a_end, segment["x1"].get<double>());
      a_depth = segment["depth"];
    } else if (name.find("phase_b") != std::string::npos) {
      b_start = std::min(b_start, segment["x0"].get<double>());
      b_depth = segment["depth"];
    }
  }
  ASSERT_GE(a_end, 0.0) << p.dump();
  ASSERT_LT(b_start, 1e9) << p.dump();
  EXPECT_LE(a_end, b_start + 0.5) << p.dump();
  EXPECT_EQ(a_depth, b_depth);
  EXPECT_NE(p["hash"].get<std::string>().find("v=stack"), std::string::npos);
  EXPECT_NE(p["label"].get<std::string>().find(" samples"), std::string::npos) << p["label"];
  expect_clean_page(p);
  EXPECT_EQ(viewer.stop().exit_status, 0);
}

// Only the application and its API, for the token's holder, asked for by its loopback name.
TEST(ViewCli, TheServerRefusesWhatIsNotItsOwn) {
  if (auto missing = missing_node()) GTEST_SKIP() << *missing;
  pt::TempDir dir;
  std::string file = dir.path() + "/small.data";
  auto recorded = pt::run_perfscope({"record", "-o", file, "--", known_answer_fp, "20"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  Viewer viewer(file);
  ASSERT_FALSE(viewer.url().empty());
  std::string skipped;
  auto answers = drive("http", viewer.url(), skipped);
  ASSERT_TRUE(answers && answers->is_object()) << skipped;
  const json& a = *answers;
  EXPECT_EQ(a["with_token"], 200) << a.dump();
  EXPECT_EQ(a["api_with_token"], 200);
  EXPECT_EQ(a["no_token"], 403);
  EXPECT_EQ(a["wrong_token"], 403);
  EXPECT_EQ(a["foreign_host"], 403);
  EXPECT_EQ(a["foreign_host_same_port"], 403);
  std::size_t traversals = 0;
  for (const auto& [key, value] : a.items()) {
    if (!key.starts_with("traversal")) continue;
    ++traversals;
    EXPECT_FALSE(value["leaked"].get<bool>()) << key;
    EXPECT_GE(value["status"].get<int>(), 400) << key;
  }
  EXPECT_EQ(traversals, 4u);
}

// A TCP connection to 127.0.0.1:`port`, or -1.
int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    return fd;
  }
  if (fd >= 0) ::close(fd);
  return -1;
}

void receive_timeout(int fd, int seconds) {
  timeval limit{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
}

struct TimedAnswer {
  int status = 0;  // 0: no answer
  double seconds = 0;
  std::string body;
};

// GET `path` on a new connection: the answer's status and how long it took from connecting.
TimedAnswer timed_get(int port, const std::string& path) {
  auto start = std::chrono::steady_clock::now();
  TimedAnswer answer;
  int fd = connect_to(port);
  if (fd < 0) return answer;
  receive_timeout(fd, 5);  // a stalled server fails the test in under a minute
  std::string request =
      fmt::format("GET {} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n", path, port);
  std::string received;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    char chunk[65536];
    for (ssize_t n; (n = ::recv(fd, chunk, sizeof chunk, 0)) > 0;) received.append(chunk, n);
  }
  ::close(fd);
  answer.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (received.starts_with("HTTP/1.1 ") && received.size() > 12) {
    answer.status = std::stoi(received.substr(9, 3));
  }
  if (auto end = received.find("\r\n\r\n"); end != std::string::npos) {
    answer.body = received.substr(end + 4);
  }
  return answer;
}

// Anyone can connect to the port without the token: 8 connections that send nothing and 4 that
// send a header line every half second must not hold up the token holder's requests (200 of
// them, 20 at a time), and are closed by the server's deadlines while it keeps serving.
TEST(ViewCli, IdleAndSlowConnectionsHoldUpNoRequest) {
  pt::TempDir dir;
  std::string file = dir.path() + "/small.data";
  auto recorded = pt::run_perfscope({"record", "-o", file, "--", known_answer_fp, "20"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  Viewer viewer(file);
  std::smatch match;
  static const std::regex parts(R"(:(\d+)(/t/[0-9a-f]+/))");
  ASSERT_TRUE(std::regex_search(viewer.url(), match, parts)) << viewer.url();
  const int port = std::stoi(match[1]);
  const std::string prefix = match[2];
  std::vector<int> idle;
  std::vector<int> slow;
  for (int i = 0; i < 8; ++i) idle.push_back(connect_to(port));
  for (int i = 0; i < 4; ++i) {
    int fd = connect_to(port);
    std::string start = "GET " + prefix + " HTTP/1.1\r\n";
    ::send(fd, start.data(), start.size(), MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  for (int fd : idle) ASSERT_GE(fd, 0);
  for (int fd : slow) ASSERT_GE(fd, 0);
  auto slow_started = std::chrono::steady_clock::now();
  std::atomic<bool> done{false};
  std::thread dripping([&] {
    for (int line = 0; !done; ++line) {
      std::string header = fmt::format("X-Slow-{}: 1\r\n", line);
      for (int fd : slow) ::send(fd, header.data(), header.size(), MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  std::vector<TimedAnswer> answers(200);
  std::vector<std::thread> clients;
  for (std::size_t client = 0; client < 20; ++client) {
    clients.emplace_back([&, client] {
      for (std::size_t i = client; i < answers.size(); i += 20) {
        answers[i] = timed_get(port, prefix + (i % 2 ? "api/summary" : ""));
      }
    });
  }
  for (std::thread& client : clients) client.join();
  double slowest = 0;
  for (const TimedAnswer& answer : answers) {
    EXPECT_EQ(answer.status, 200);
    slowest = std::max(slowest, answer.seconds);
  }
  EXPECT_LE(slowest, 1.0) << "the slowest of 200 requests took " << slowest << " s";
  // The server closes them all: the idle ones after 5 s of silence, the slow ones 5 s after their
  // first byte although they keep sending.
  for (int fd : slow) {
    receive_timeout(fd, 10);
    char byte;
    ssize_t n = ::recv(fd, &byte, 1, 0);
    EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << "still open: " << n << " " << errno;
  }
  double slow_for =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - slow_started).count();
  EXPECT_LT(slow_for, 9.0);
  done = true;
  dripping.join();
  for (int fd : idle) {
    receive_timeout(fd, 10);
    char byte;
    EXPECT_LE(::recv(fd, &byte, 1, 0), 0);
  }
  for (int fd : idle) ::close(fd);
  for (int fd : slow) ::close(fd);
  TimedAnswer after = timed_get(port, prefix + "api/summary");
  EXPECT_EQ(after.status, 200);
  EXPECT_LE(after.seconds, 1.0);
  EXPECT_EQ(viewer.stop().exit_status, 0);
}

// Nodes under 0.05 % of the selection are pruned from the tree the viewer draws; what they weigh
// together is their parent's last child, "(other)", so every node's children and its self add up
// to it (a third of an xz graph was blank before).
TEST(ViewCli, PrunedChildrenAreShownAsOther) {
  pt::TempDir dir;
  std::string file = dir.path() + "/many.data";
  // Thousands of samples, so that a path seen once is under 0.05 %, in many kernel paths.
  auto recorded =
      pt::run_perfscope({"record", "-q", "-F", "20000", "-g", "-e", "cpu-clock", "-o", file, "--",
                         "sh", "-c", "yes | head -c 400000000 > /dev/null"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  Viewer viewer(file);
  std::smatch match;
  static const std::regex parts(R"(:(\d+)(/t/[0-9a-f]+/))");
  ASSERT_TRUE(std::regex_search(viewer.url(), match, parts)) << viewer.url();
  TimedAnswer answer = timed_get(std::stoi(match[1]), match[2].str() + "api/tree?event=0");
  ASSERT_EQ(answer.status, 200) << answer.body;
  json tree = json::parse(answer.body);
  const double weight = tree["weight"].get<double>();
  ASSERT_GT(tree["pruned"].get<int>(), 0) << "nothing was small enough to prune";
  std::size_t others = 0;
  std::vector<const json*> pending{&tree["root"]};
  while (!pending.empty()) {
    const json& node = *pending.back();
    pending.pop_back();
    std::uint64_t children = 0;
    for (const json& child : node["children"]) {
      children += child["total"].get<std::uint64_t>();
      if (child["name"] == "(other)") {
        ++others;
        EXPECT_TRUE(child["children"].empty());
        // The pruned weigh under 0.05 % each, not necessarily together.
        EXPECT_GT(child["total"].get<double>(), 0.0);
      } else {
        EXPECT_GE(child["total"].get<double>(), 0.0005 * weight - 1) << child["name"];
      }
      pending.push_back(&child);
    }
    EXPECT_EQ(children + node["self"].get<std::uint64_t>(), node["total"].get<std::uint64_t>())
        << node["name"];
  }
  EXPECT_GE(others, 1u);
  EXPECT_EQ(viewer.stop().exit_status, 0);
}

// The browser is given a private page that redirects, never the tokened address: a command line
// is readable by every user in /proc.
TEST(ViewCli, TheBrowserIsOpenedWithoutTheToken) {
  pt::TempDir dir;
  std::string file = dir.path() + "/small.data";
  auto recorded = pt::run_perfscope({"record", "-o", file, "--", known_answer_fp, "20"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  // A "browser" that keeps what it was given: its arguments, and the page's mode and text.
  std::string browser = dir.write("browser.sh",
                                  "#!/bin/sh\n"
                                  "echo \"$@\" > \"$(dirname \"$0\")/argv\"\n"
                                  "page=\"${1#file://}\"\n"
                                  "stat -c '%a' \"$page\" \"$(dirname \"$page\")\" > "
                                  "\"$(dirname \"$0\")/modes\"\n"
                                  "cat \"$page\" > \"$(dirname \"$0\")/page.tmp\"\n"
                                  "mv \"$(dirname \"$0\")/page.tmp\" \"$(dirname \"$0\")/page\"\n");
  fs::permissions(browser, fs::perms::owner_all);
  pt::BackgroundCommand viewer(
      {"env", "DISPLAY=:99", "BROWSER=" + browser, PERFSCOPE_CLI_PATH, "view", file});
  ASSERT_TRUE(viewer.wait_for_output("/t/", 60000)) << viewer.err();
  std::smatch match;
  std::string out = viewer.out();
  static const std::regex address(R"(http://127\.0\.0\.1:\d+/t/([0-9a-f]{32})/)");
  ASSERT_TRUE(std::regex_search(out, match, address)) << out;
  const std::string url = match[0];
  const std::string token = match[1];
  for (int waited = 0; !fs::exists(dir.path() + "/page") && waited < 200; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string argv = pt::read_file(dir.path() + "/argv");
  EXPECT_TRUE(argv.starts_with("file:///")) << argv;
  EXPECT_EQ(argv.find(token), std::string::npos) << argv;
  EXPECT_EQ(pt::read_file(dir.path() + "/modes"), "600\n700\n");
  EXPECT_NE(pt::read_file(dir.path() + "/page").find("url=" + url + "\""), std::string::npos);
  // No "open that address" advice when a browser was opened.
  EXPECT_EQ(out.find("Open that address"), std::string::npos) << out;
  viewer.signal(SIGINT);
  EXPECT_EQ(viewer.wait(20000).exit_status, 0);
  std::string page = argv.substr(std::string("file://").size());
  page.erase(page.find_last_not_of('\n') + 1);
  EXPECT_FALSE(fs::exists(page)) << page << " is left after the viewer stopped";
}

TEST(ViewCli, OptionErrorsAndHelp) {
  auto missing = pt::run_perfscope({"view", "/nonexistent/perf.data"});
  EXPECT_EQ(missing.exit_status, 129) << missing.err;
  EXPECT_NE(missing.err.find("/nonexistent/perf.data"), std::string::npos) << missing.err;
  pt::TempDir dir;
  std::string junk = dir.write("junk.data", "not a recording");
  auto bad = pt::run_perfscope({"view", "--no-open", junk});
  EXPECT_EQ(bad.exit_status, 1) << bad.err;
  EXPECT_NE(bad.err.find("perfscope: "), std::string::npos) << bad.err;
  auto help = pt::run_perfscope({"view", "--help"});
  EXPECT_EQ(help.exit_status, 0);
  EXPECT_NE(help.out.find("perfscope view --no-open --port 8123 perf.data"), std::string::npos)
      << help.out;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int status = RUN_ALL_TESTS();
  const auto& unit = *::testing::UnitTest::GetInstance();
  return status == 0 && unit.skipped_test_count() > 0 ? 77 : status;
}
