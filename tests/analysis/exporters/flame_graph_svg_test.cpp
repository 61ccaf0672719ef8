// The SVG flame graph's page layout on a one-function profile: a long subtitle wraps into lines
// that fit the image, labels are cut between characters, the search result has its room before
// the legend. tests/cli/browser_cli_test.cpp checks the same page as Chromium lays it out.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/analysis/exporters/profile_exporters.hpp"

namespace {

using perfscope::ExportFormat;
using perfscope::no_index;
using perfscope::Profile;

constexpr std::uint64_t period = 1'000'000;  // cpu-clock, 1 ms

// 12 samples of `function` (called by nothing) in one thread of "demo".
Profile one_function(std::string function, std::string command_line) {
  Profile p;
  p.dsos = {{"/usr/bin/demo", "", false}};
  p.functions = {{std::move(function), 0, true}};
  p.frames = {{0, 0x401000, 0x1000, "", 0, false, false}};
  p.stacks = {{no_index, 0}};
  p.threads = {{100, 100, "demo"}};
  p.events = {{"cpu-clock", 12, 12 * period, true}};
  for (std::uint64_t i = 0; i < 12; ++i) {
    p.samples.push_back({0, 0, 0, 0, 5'000'000'000 + i * period, period});
  }
  p.summary.samples = p.summary.samples_read = 12;
  p.summary.command_line = std::move(command_line);
  return p;
}

std::string svg_of(const Profile& profile) {
  std::ostringstream out;
  perfscope::write_profile(profile, ExportFormat::svg, out);
  return out.str();
}

// A long command line in the subtitle wraps at spaces into lines that fit the image (161
// characters of 12 px monospace), and the buttons move down below it.
TEST(FlameGraphSvg, WrapsALongSubtitle) {
  std::string command = "perfscope record -g";
  for (int i = 0; i < 40; ++i) command += " --some-option-" + std::to_string(i);
  std::string svg = svg_of(one_function("main", command));
  static const std::regex line(R"re(<text x="10" y="([0-9.]+)">([^<]*)</text>)re");
  std::vector<std::string> lines;
  double last_y = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line); it != std::sregex_iterator();
       ++it) {
    lines.push_back((*it)[2]);
    last_y = std::stod((*it)[1]);
  }
  ASSERT_GE(lines.size(), 5u) << svg.substr(0, 2000);
  std::string joined;
  for (const auto& text : lines) {
    EXPECT_LE(text.size(), 161u) << text;
    EXPECT_FALSE(text.empty());
    joined += (joined.empty() ? "" : " ") + text;
  }
  EXPECT_EQ(joined, "12 samples, cpu-clock (12 samples) of " + command);
  EXPECT_EQ(last_y, 44 + 16.0 * static_cast<double>(lines.size() - 1));
  std::string below = std::to_string(62 + 16 * (lines.size() - 1));
  EXPECT_NE(svg.find("<text id=\"reset\" class=\"button\" x=\"10\" y=\"" + below + "\">"),
            std::string::npos);
  // The search result from x 220 to the legend (4 entries of 95 px from the right, 10 px apart):
  // (810 - 10 - 220) / 7.3 characters.
  EXPECT_NE(svg.find("<text id=\"matched\" x=\"220\" y=\"" + below + "\" data-room=\"79\">"),
            std::string::npos);
}

// A label cut to its frame is cut between characters: a name of 3-byte characters keeps whole
// ones (cut by bytes, the last one would be broken and drawn as '?').
TEST(FlameGraphSvg, CutsLabelsBetweenCharacters) {
  std::string euros;
  for (int i = 0; i < 200; ++i) euros += "\xe2\x82\xac";
  std::string svg = svg_of(one_function(euros, "demo"));
  static const std::regex label(R"re(<text x="[0-9.]+" y="[0-9.]+">([^<]*\xe2[^<]*)</text>)re");
  std::vector<std::string> labels;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator();
       ++it) {
    labels.push_back((*it)[1]);
  }
  ASSERT_EQ(labels.size(), 1u) << svg;
  // The full width (1180 px) holds (1180 - 6) / 7.3 = 160 characters: 158 and "..".
  EXPECT_EQ(labels[0], euros.substr(0, 3 * 158) + "..");
}

}  // namespace
