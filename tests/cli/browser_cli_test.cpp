// Our exports in real viewers, in headless Chromium (issue #20): the speedscope app (npm
// `speedscope`) with the speedscope export of the known-answer workload, and the interactive SVG
// flame graph clicked and searched. tests/browser/check_exports.mjs drives the browser through
// puppeteer-core and prints what the pages show; the figures are judged here against the known
// answer (60/30/10 %) and, exactly, against what `perfscope report` says of the same recording.
// Screenshots are kept in the build directory (their paths are printed). Where Chromium, node or
// the npm packages are missing the tests skip, and the program exits 77 (ctest's skip).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
namespace pt = perfscope::testing;
using nlohmann::json;

const std::string known_answer_fp = PERFSCOPE_KNOWN_ANSWER_FP_PATH;
const std::string script = PERFSCOPE_BROWSER_SCRIPT;
const std::string artifact_root = PERFSCOPE_BROWSER_ARTIFACTS;

// Why the browser tests cannot run here, or nothing.
std::optional<std::string> missing_browser() {
  return pt::missing_browser(fs::path(script).parent_path().string(),
                             {"puppeteer-core", "speedscope"});
}

std::string recorded_path;  // removed at exit, once recorded

struct Recording {
  std::string data;
  std::map<std::string, double> self_percent;  // report --stdio --no-children, by symbol
  std::map<std::string, std::uint64_t> inclusive_samples;  // folded: stacks holding the symbol
  std::uint64_t samples = 0;
};

// The known-answer workload recorded with frame-pointer call chains, and what our own text report
// and folded stacks say of it: the figures the viewers must show.
const Recording& recording() {
  static Recording recorded = [] {
    Recording r;
    r.data = pt::temp_path("browser.data");
    recorded_path = r.data;
    auto result = pt::run_perfscope({"record", "-F", "4000", "-e", "cpu-clock", "-g", "-o", r.data,
                                     "--", known_answer_fp, "300"});
    EXPECT_EQ(result.exit_status, 0) << result.err;
    auto report =
        pt::run_perfscope({"report", "--stdio", "--no-children", "-g", "none", "-i", r.data});
    EXPECT_EQ(report.exit_status, 0) << report.err;
    static const std::regex row(R"(^\s+([0-9.]+)%\s+.*\[[.k]\] (\S+)\s*$)");
    std::istringstream table(report.out);
    for (std::string line; std::getline(table, line);) {
      std::smatch match;
      if (std::regex_match(line, match, row)) r.self_percent[match[2]] += std::stod(match[1]);
    }
    auto folded = pt::run_perfscope({"report", "--format", "folded", "-i", r.data});
    EXPECT_EQ(folded.exit_status, 0) << folded.err;
    std::istringstream stacks(folded.out);
    for (std::string line; std::getline(stacks, line);) {
      auto space = line.rfind(' ');
      if (space == std::string::npos) continue;
      std::uint64_t count = std::stoull(line.substr(space + 1));
      r.samples += count;
      std::set<std::string> frames;
      std::istringstream names(line.substr(0, space));
      for (std::string name; std::getline(names, name, ';');) frames.insert(name);
      for (const auto& name : frames) r.inclusive_samples[name] += count;
    }
    return r;
  }();
  return recorded;
}

double inclusive_percent(const std::string& symbol) {
  const Recording& r = recording();
  auto it = r.inclusive_samples.find(symbol);
  if (it == r.inclusive_samples.end() || r.samples == 0) return -1;
  return 100.0 * static_cast<double>(it->second) / static_cast<double>(r.samples);
}

// Runs the browser script; nothing when it skipped (the reason is then in `skipped`).
std::optional<json> run_browser(const std::vector<std::string>& arguments, std::string& skipped) {
  std::vector<std::string> argv{"node", script};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  auto result = pt::run_command(argv);
  if (result.exit_status == 77) {
    skipped = result.err;
    return std::nullopt;
  }
  EXPECT_EQ(result.exit_status, 0) << result.err;
  if (result.exit_status != 0) return json();
  return json::parse(result.out, nullptr, false);
}

void expect_screenshots(const json& page) {
  ASSERT_TRUE(page.contains("screenshots"));
  for (const auto& shot : page["screenshots"]) {
    std::ifstream file(shot.get<std::string>(), std::ios::binary);
    char magic[4] = {};
    file.read(magic, 4);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG") << shot;
    std::printf("screenshot: %s\n", shot.get<std::string>().c_str());
  }
}

// The SVG's header as Chromium laid it out: every text inside the image and none over another
// (a long command line in the subtitle wraps; the search result stays clear of the legend).
void expect_header_fits(const json& all, double page_width) {
  json texts = json::array();  // those drawn: empty ones (no search yet) have no box
  for (const auto& text : all) {
    if (text["right"].get<double>() > text["left"].get<double>()) texts.push_back(text);
  }
  ASSERT_GE(texts.size(), 5u) << all;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const json& a = texts[i];
    EXPECT_GE(a["left"].get<double>(), 0.0) << a;
    EXPECT_LE(a["right"].get<double>(), page_width) << a;
    for (std::size_t j = i + 1; j < texts.size(); ++j) {
      const json& b = texts[j];
      bool apart = a["right"].get<double>() <= b["left"].get<double>() + 0.5 ||
                   b["right"].get<double>() <= a["left"].get<double>() + 0.5 ||
                   a["bottom"].get<double>() <= b["top"].get<double>() + 0.5 ||
                   b["bottom"].get<double>() <= a["top"].get<double>() + 0.5;
      EXPECT_TRUE(apart) << a << " overlaps " << b;
    }
  }
}

// Every label drawn ends inside its frame, as the browser measures the text (the exporter and
// the page's script cut labels by a guessed character width).
void expect_labels_inside(const json& frames, const std::string& when) {
  for (const auto& frame : frames) {
    if (frame["text_right"].is_null()) continue;
    EXPECT_LE(frame["text_right"].get<double>(),
              frame["x"].get<double>() + frame["width"].get<double>() + 0.5)
        << when << ": " << frame;
  }
}

const json* frame_named(const json& frames, const std::string& name) {
  for (const auto& frame : frames) {
    if (frame["name"] == name) return &frame;
  }
  return nullptr;
}

// What speedscope's sandwich view shows as a function's total in the profile it opens on: the
// weight of the samples whose stack holds the function, in % of the profile's weight.
double total_percent_in_active_profile(const json& file, const std::string& name) {
  std::set<std::size_t> frames;
  const json& shared = file["shared"]["frames"];
  for (std::size_t i = 0; i < shared.size(); ++i) {
    if (shared[i]["name"] == name) frames.insert(i);
  }
  const json& profile = file["profiles"][file["activeProfileIndex"].get<std::size_t>()];
  double all = 0, holding = 0;
  for (std::size_t i = 0; i < profile["samples"].size(); ++i) {
    double weight = profile["weights"][i].get<double>();
    all += weight;
    for (const json& frame : profile["samples"][i]) {
      if (frames.count(frame.get<std::size_t>())) {
        holding += weight;
        break;
      }
    }
  }
  return all > 0 ? 100.0 * holding / all : -1;
}

TEST(BrowserSpeedscope, AppShowsTheKnownAnswerShares) {
  if (auto why = missing_browser()) GTEST_SKIP() << *why;
  const Recording& r = recording();
  ASSERT_GT(r.samples, 1000u);
  fs::path artifacts = fs::path(artifact_root) / "speedscope";
  fs::create_directories(artifacts);
  std::string profile = (artifacts / "known_answer.speedscope.json").string();
  auto exported =
      pt::run_perfscope({"report", "-i", r.data, "--format", "speedscope", "-o", profile});
  ASSERT_EQ(exported.exit_status, 0) << exported.err;

  std::string skipped;
  auto page = run_browser({"speedscope", profile, "leaf_60", artifacts.string()}, skipped);
  if (!page) GTEST_SKIP() << skipped;
  ASSERT_TRUE(page->is_object()) << "the browser script printed no JSON";
  std::printf("chromium: %s\n", page->value("chromium", "").c_str());
  EXPECT_TRUE((*page)["page_errors"].empty()) << (*page)["page_errors"];
  // The page is titled by the export's name: the recorded command line.
  EXPECT_NE(page->value("title", "").find("known_answer_fp"), std::string::npos)
      << (*page)["title"];

  // Sandwich: each leaf's total and self time as DOM text and bar widths; self equals what our
  // report says of the same recording (both are shares of the summed periods).
  const json& table = (*page)["sandwich"];
  for (auto [leaf, expected] : {std::pair{"leaf_60", 60.0}, {"leaf_30", 30.0}, {"leaf_10", 10.0}}) {
    const json* row = frame_named(table, leaf);
    ASSERT_NE(row, nullptr) << leaf << " is not in the sandwich table: " << table;
    EXPECT_EQ((*row)["file"], known_answer_fp);
    double total = (*row)["total_percent"].get<double>();
    double self = (*row)["self_percent"].get<double>();
    EXPECT_NEAR(total, expected, 5.0) << leaf;
    ASSERT_TRUE(r.self_percent.count(leaf)) << leaf;
    EXPECT_NEAR(self, r.self_percent.at(leaf), 0.01) << leaf;
    EXPECT_GE(total, self);
  }

  // Left Heavy, on the canvas: leaf_60's frame, found under the mouse by speedscope's tooltip,
  // starts at the left edge and is its share of the width, to a pixel.
  const json& heavy = (*page)["left_heavy"];
  ASSERT_TRUE(heavy.is_object()) << "leaf_60's frame was not found on the flame chart";
  EXPECT_EQ(heavy["tooltip"]["name"], "leaf_60");
  EXPECT_LE(heavy["left_px"].get<double>(), 1.0);  // the chart's first pixel, or its border
  double width = heavy["width_percent"].get<double>();
  double pixel = 100.0 / heavy["chart_width_px"].get<double>();
  EXPECT_NEAR(width, 60.0, 5.0);
  EXPECT_NEAR(width, (*frame_named(table, "leaf_60"))["total_percent"].get<double>(), 2 * pixel);
  std::smatch percent;
  std::string time = heavy["tooltip"]["time"];
  ASSERT_TRUE(std::regex_search(time, percent, std::regex(R"(\(([0-9.]+)%\))"))) << time;
  EXPECT_NEAR(std::stod(percent[1]), width, 1.0) << time;
  expect_screenshots(*page);
}

TEST(BrowserSvg, ClickZoomsAndSearchHighlightsTheShare) {
  if (auto why = missing_browser()) GTEST_SKIP() << *why;
  const Recording& r = recording();
  ASSERT_GT(r.samples, 1000u);
  fs::path artifacts = fs::path(artifact_root) / "svg";
  fs::create_directories(artifacts);
  std::string svg = (artifacts / "known_answer.svg").string();
  auto exported = pt::run_perfscope({"report", "-i", r.data, "--format", "svg", "-o", svg});
  ASSERT_EQ(exported.exit_status, 0) << exported.err;

  std::string skipped;
  auto page = run_browser({"svg", svg, "leaf_30", artifacts.string()}, skipped);
  if (!page) GTEST_SKIP() << skipped;
  ASSERT_TRUE(page->is_object()) << "the browser script printed no JSON";
  EXPECT_TRUE((*page)["page_errors"].empty()) << (*page)["page_errors"];
  double padding = (*page)["padding"].get<double>();
  double full = (*page)["page_width"].get<double>() - 2 * padding;
  double share = inclusive_percent("leaf_30");
  EXPECT_NEAR(share, 30.0, 5.0);
  expect_header_fits((*page)["header"], (*page)["page_width"].get<double>());
  expect_header_fits((*page)["searched_header"], (*page)["page_width"].get<double>());
  for (const char* when : {"before", "zoomed", "reset"}) expect_labels_inside((*page)[when], when);

  // Before: leaf_30's frame is its share of the width (the SVG writes widths to 0.01 px).
  std::size_t target = (*page)["target_index"].get<std::size_t>();
  const json& before = (*page)["before"][target];
  EXPECT_EQ(before["name"], "leaf_30");
  EXPECT_NEAR(before["width"].get<double>(), full * share / 100.0, 0.01);

  // After the click: the frame spans the whole width; its callers stay below it, full width and
  // dimmed ("above"); the other branches are hidden; its callees stay inside it.
  const json& zoomed = (*page)["zoomed"];
  EXPECT_NEAR(zoomed[target]["x"].get<double>(), padding, 0.01);
  EXPECT_NEAR(zoomed[target]["width"].get<double>(), full, 0.01);
  EXPECT_EQ(zoomed[target]["text"], "leaf_30");
  std::set<std::string> callers{"all", "known_answer_fp", "__libc_start_call_main", "main",
                                "work_30"};
  std::size_t shown_callers = 0;
  for (const auto& frame : zoomed) {
    std::string name = frame["name"];
    if (name == "leaf_60" || name == "work_60" || name == "leaf_10" || name == "work_10") {
      EXPECT_FALSE(frame["shown"].get<bool>()) << name << " is shown in leaf_30's zoom";
    }
    if (!frame["shown"].get<bool>()) continue;
    if (frame["above"].get<bool>()) {
      EXPECT_TRUE(callers.count(name)) << name << " is drawn as a caller of leaf_30";
      EXPECT_NEAR(frame["width"].get<double>(), full, 0.01) << name;
      shown_callers += callers.count(name);
    } else {
      EXPECT_GE(frame["depth"].get<int>(), zoomed[target]["depth"].get<int>()) << name;
      EXPECT_GE(frame["x"].get<double>(), padding - 0.01) << name;
      EXPECT_LE(frame["x"].get<double>() + frame["width"].get<double>(), padding + full + 0.02)
          << name;
    }
  }
  EXPECT_EQ(shown_callers, callers.size());

  // Search (the button's prompt, then Ctrl-F): only leaf_30 is highlighted, and the share
  // printed is the share of samples under it, to the 0.01 % it is printed with.
  std::string matched = (*page)["matched"];
  std::smatch figure;
  ASSERT_TRUE(std::regex_match(matched, figure,
                               std::regex(R"(Matched: ([0-9.]+) % of samples \(leaf_30\))")))
      << matched;
  EXPECT_NEAR(std::stod(figure[1]), share, 0.0051) << matched;
  ASSERT_FALSE((*page)["searched_highlighted"].empty());
  for (const auto& name : (*page)["searched_highlighted"]) EXPECT_EQ(name, "leaf_30");
  EXPECT_EQ((*page)["cleared"], "");
  EXPECT_EQ((*page)["matched_by_keyboard"], matched);
  // A term too long for the header: the same share, the term cut short ("..") before the legend.
  std::string long_matched = (*page)["matched_long"];
  std::string long_term = (*page)["long_term"];
  EXPECT_EQ(long_matched.rfind(figure[0].str().substr(0, figure[0].str().find('(') + 1), 0), 0u)
      << long_matched;
  EXPECT_TRUE(long_matched.ends_with("..)")) << long_matched;
  EXPECT_LT(long_matched.size(), long_term.size() + 30);
  expect_header_fits((*page)["long_header"], (*page)["page_width"].get<double>());

  // Reset zoom: every frame back where it was (to a hundredth of a percent: 0.63 against 0.62
  // differs by a little more than 0.01 in doubles, which a loaded CI run met).
  const json& reset = (*page)["reset"];
  ASSERT_EQ(reset.size(), (*page)["before"].size());
  constexpr double hundredth = 0.01 + 1e-9;
  for (std::size_t i = 0; i < reset.size(); ++i) {
    const json& was = (*page)["before"][i];
    EXPECT_EQ(reset[i]["shown"], was["shown"]) << was["name"];
    EXPECT_NEAR(reset[i]["x"].get<double>(), was["x"].get<double>(), hundredth) << was["name"];
    EXPECT_NEAR(reset[i]["width"].get<double>(), was["width"].get<double>(), hundredth)
        << was["name"];
  }
  expect_screenshots(*page);
}

// A workload started by a shell that first spends a little CPU of its own: the file holds a
// profile for the shell and one for the workload, and speedscope opens on the workload's.
TEST(BrowserSpeedscope, OpensOnTheBusiestThread) {
  if (auto why = missing_browser()) GTEST_SKIP() << *why;
  pt::TempDir dir;
  std::string data = dir.path() + "/shell.data";
  auto recorded = pt::run_perfscope(
      {"record", "-F", "2000", "-e", "cpu-clock", "-g", "-o", data, "--", "sh", "-c",
       "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; " + known_answer_fp + " 100"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  fs::path artifacts = fs::path(artifact_root) / "speedscope-threads";
  fs::create_directories(artifacts);
  std::string profile = (artifacts / "shell_and_workload.speedscope.json").string();
  auto exported =
      pt::run_perfscope({"report", "-i", data, "--format", "speedscope", "-o", profile});
  ASSERT_EQ(exported.exit_status, 0) << exported.err;
  std::ifstream file(profile);
  json written = json::parse(file);
  ASSERT_GE(written["profiles"].size(), 2u) << "the shell has samples of its own";
  // (Not necessarily the first: a sample taken in the exec, before the COMM record that names
  // the shell, belongs to a thread still named perfscope, as in perf; a CI run had one.)
  bool shell_profile = false;
  for (const json& each : written["profiles"]) {
    shell_profile = shell_profile || each["name"].get<std::string>().rfind("sh ", 0) == 0;
  }
  EXPECT_TRUE(shell_profile) << written["profiles"].size() << " profiles";

  std::string skipped;
  auto page = run_browser({"speedscope", profile, "leaf_60", artifacts.string()}, skipped);
  if (!page) GTEST_SKIP() << skipped;
  ASSERT_TRUE(page->is_object()) << "the browser script printed no JSON";
  EXPECT_TRUE((*page)["page_errors"].empty()) << (*page)["page_errors"];
  // The toolbar names the profile shown and its place: "known_answer_fp PID/TID cpu-clock (2/2)".
  std::string toolbar = (*page)["toolbar"];
  std::smatch place;
  ASSERT_TRUE(std::regex_search(
      toolbar, place, std::regex(R"(known_answer_fp \S+ cpu-clock \(([0-9]+)/([0-9]+)\))")))
      << toolbar;
  EXPECT_EQ(std::stoul(place[2]), written["profiles"].size());
  EXPECT_EQ(std::stoul(place[1]), written["activeProfileIndex"].get<std::size_t>() + 1);
  const json* leaf = frame_named((*page)["sandwich"], "leaf_60");
  ASSERT_NE(leaf, nullptr) << (*page)["sandwich"];
  // The page shows the file's figure (to its two decimals); the file is the known answer's
  // (about 600 samples here: a loose bound, the exact one is the other tests').
  double shown = (*leaf)["total_percent"].get<double>();
  EXPECT_NEAR(shown, total_percent_in_active_profile(written, "leaf_60"), 0.01);
  EXPECT_NEAR(shown, 60.0, 10.0);
}

// `perfscope diff --format svg`: the same page over two recordings (NEW: the workload with its
// leaves' work swapped, 3,6,1: leaf_30 takes 60 %). Its long subtitle wraps inside the image.
TEST(BrowserSvg, DifferentialFlameGraphZoomsAndSearches) {
  if (auto why = missing_browser()) GTEST_SKIP() << *why;
  const Recording& r = recording();
  pt::TempDir dir;
  std::string swapped = dir.path() + "/swapped.data";
  auto recorded = pt::run_perfscope({"record", "-F", "2000", "-e", "cpu-clock", "-g", "-o", swapped,
                                     "--", known_answer_fp, "150", "3,6,1"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  fs::path artifacts = fs::path(artifact_root) / "svg-diff";
  fs::create_directories(artifacts);
  std::string svg = (artifacts / "known_answer_diff.svg").string();
  auto exported = pt::run_perfscope({"diff", r.data, swapped, "--format", "svg", "--output", svg});
  ASSERT_EQ(exported.exit_status, 0) << exported.err;

  std::string skipped;
  auto page = run_browser({"svg", svg, "leaf_30", artifacts.string()}, skipped);
  if (!page) GTEST_SKIP() << skipped;
  ASSERT_TRUE(page->is_object()) << "the browser script printed no JSON";
  EXPECT_TRUE((*page)["page_errors"].empty()) << (*page)["page_errors"];
  double page_width = (*page)["page_width"].get<double>();
  expect_header_fits((*page)["header"], page_width);
  expect_header_fits((*page)["searched_header"], page_width);
  for (const char* when : {"before", "zoomed", "reset"}) expect_labels_inside((*page)[when], when);
  std::size_t target = (*page)["target_index"].get<std::size_t>();
  EXPECT_NEAR((*page)["zoomed"][target]["width"].get<double>(),
              page_width - 2 * (*page)["padding"].get<double>(), 0.01);
  std::string matched = (*page)["matched"];
  std::smatch figure;
  ASSERT_TRUE(std::regex_match(matched, figure,
                               std::regex(R"(Matched: ([0-9.]+) % of samples \(leaf_30\))")))
      << matched;
  // The page shows the file's figure, the NEW recording's inclusive share of leaf_30 (settle,
  // which it calls, has samples of its own: report's Children column), to its two decimals; the
  // file is the known answer's (about 900 samples of work counted in iterations, so a loose
  // bound: a clean-clone run beside a busy core drew 65.2 %).
  auto report = pt::run_perfscope({"report", "-i", swapped, "--stdio", "--children", "--sort",
                                   "sym", "-g", "none", "--percent-limit", "5"});
  ASSERT_EQ(report.exit_status, 0) << report.err;
  std::smatch row;
  ASSERT_TRUE(std::regex_search(report.out, row,
                                std::regex(R"(([0-9.]+)%\s+[0-9.]+%\s+[0-9]+\s+\[\.\] leaf_30)")))
      << report.out;
  EXPECT_NEAR(std::stod(figure[1]), std::stod(row[1]), 0.01) << matched << "\n" << report.out;
  EXPECT_NEAR(std::stod(figure[1]), 60.0, 10.0) << matched;
  EXPECT_EQ((*page)["matched_by_keyboard"], matched);
  expect_screenshots(*page);
}

// A recording without samples: speedscope stops answering on a file without profiles, so the
// export holds one empty profile, which it shows; the SVG draws its empty root.
TEST(BrowserSpeedscope, RecordingWithoutSamplesOpens) {
  if (auto why = missing_browser()) GTEST_SKIP() << *why;
  pt::TempDir dir;
  std::string data = dir.path() + "/empty.data";
  auto recorded =
      pt::run_perfscope({"record", "-F", "10", "-e", "cpu-clock", "-o", data, "--", "true"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  fs::path artifacts = fs::path(artifact_root) / "speedscope-empty";
  fs::create_directories(artifacts);
  std::string profile = (artifacts / "empty.speedscope.json").string();
  auto exported =
      pt::run_perfscope({"report", "-i", data, "--format", "speedscope", "-o", profile});
  ASSERT_EQ(exported.exit_status, 0) << exported.err;

  std::string skipped;
  auto page = run_browser({"speedscope", profile, "-", artifacts.string()}, skipped);
  if (!page) GTEST_SKIP() << skipped;
  ASSERT_TRUE(page->is_object()) << "the browser script printed no JSON";
  EXPECT_TRUE((*page)["page_errors"].empty()) << (*page)["page_errors"];
  EXPECT_NE((*page)["toolbar"].get<std::string>().find("no samples"), std::string::npos)
      << (*page)["toolbar"];
  EXPECT_TRUE((*page)["sandwich"].empty()) << (*page)["sandwich"];
}

TEST(BrowserSvg, RecordingWithoutSamplesDraws) {
  if (auto why = missing_browser()) GTEST_SKIP() << *why;
  pt::TempDir dir;
  std::string data = dir.path() + "/empty.data";
  auto recorded =
      pt::run_perfscope({"record", "-F", "10", "-e", "cpu-clock", "-o", data, "--", "true"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  fs::path artifacts = fs::path(artifact_root) / "svg-empty";
  fs::create_directories(artifacts);
  std::string svg = (artifacts / "empty.svg").string();
  auto exported = pt::run_perfscope({"report", "-i", data, "--format", "svg", "-o", svg});
  ASSERT_EQ(exported.exit_status, 0) << exported.err;

  std::string skipped;
  auto page = run_browser({"svg", svg, "all", artifacts.string()}, skipped);
  if (!page) GTEST_SKIP() << skipped;
  ASSERT_TRUE(page->is_object()) << "the browser script printed no JSON";
  EXPECT_TRUE((*page)["page_errors"].empty()) << (*page)["page_errors"];
  double full = (*page)["page_width"].get<double>() - 2 * (*page)["padding"].get<double>();
  ASSERT_EQ((*page)["before"].size(), 1u);
  for (const char* when : {"before", "zoomed", "reset"}) {
    EXPECT_NEAR((*page)[when][0]["width"].get<double>(), full, 0.01) << when;
  }
  EXPECT_EQ((*page)["matched"], "Matched: 0.00 % of samples (all)");
}

// A program whose name (and so its comm and the recorded command line) holds U+FFFF: valid UTF-8
// that XML forbids. Chromium refuses a whole SVG over one such character; ours draws, with '?'.
TEST(BrowserSvg, NamesThatXmlForbidsStillDraw) {
  if (auto why = missing_browser()) GTEST_SKIP() << *why;
  pt::TempDir dir;
  std::string program = dir.path() + "/known_answer\xef\xbf\xbf";
  fs::copy_file(known_answer_fp, program);
  std::string data = dir.path() + "/odd.data";
  auto recorded = pt::run_perfscope(
      {"record", "-F", "2000", "-e", "cpu-clock", "-g", "-o", data, "--", program, "60"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  fs::path artifacts = fs::path(artifact_root) / "svg-names";
  fs::create_directories(artifacts);
  std::string svg = (artifacts / "xml_forbidden_name.svg").string();
  auto exported = pt::run_perfscope({"report", "-i", data, "--format", "svg", "-o", svg});
  ASSERT_EQ(exported.exit_status, 0) << exported.err;

  std::string skipped;
  auto page = run_browser({"svg", svg, "leaf_30", artifacts.string()}, skipped);
  if (!page) GTEST_SKIP() << skipped;
  ASSERT_TRUE(page->is_object()) << "the browser script printed no JSON";
  EXPECT_TRUE((*page)["page_errors"].empty()) << (*page)["page_errors"];
  EXPECT_NE(frame_named((*page)["before"], "known_answer?"), nullptr)
      << "the command's frame, U+FFFF shown as '?'";
  EXPECT_NEAR((*page)["zoomed"][(*page)["target_index"].get<std::size_t>()]["width"].get<double>(),
              (*page)["page_width"].get<double>() - 2 * (*page)["padding"].get<double>(), 0.01);
}

}  // namespace

// ctest counts a run whose tests skipped as skipped (SKIP_RETURN_CODE 77), not as passed.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int status = RUN_ALL_TESTS();
  std::error_code error;
  if (!recorded_path.empty()) fs::remove(recorded_path, error);
  const auto& unit = *::testing::UnitTest::GetInstance();
  return status == 0 && unit.skipped_test_count() > 0 ? 77 : status;
}
