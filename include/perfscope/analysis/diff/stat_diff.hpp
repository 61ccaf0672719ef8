// Two `perfscope stat -r N --json` files compared event by event: the means, the change with its
// confidence interval (Welch's t), a verdict, the repeats that would resolve a given change, and
// CI thresholds ("task-clock>+3%") that fail only on a significant change beyond them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/analysis/diff/count_comparison.hpp"
#include "perfscope/analysis/diff/stat_file.hpp"

namespace perfscope {

// "EVENT>+P%" fails on a significant increase of more than P %, "EVENT<-P%" on a significant
// decrease of more than P %.
struct StatThreshold {
  std::string event;
  bool increase = true;  // '>' (else '<')
  double percent = 0;    // signed as written: +3 for ">+3%", -5 for "<-5%"
  std::string text;      // as given
};
// Throws std::invalid_argument saying what the form is.
StatThreshold parse_stat_threshold(std::string_view text);

struct StatDiffOptions {
  double confidence = 0.95;
  double resolve_percent = 1.0;  // the change "repeats needed" is computed for
  std::vector<StatThreshold> thresholds;
};

struct StatEventDiff {
  std::string name, unit;
  CountComparison comparison;
  double resolve_percent = 0;  // the threshold's for events with one, else the option's
  std::optional<std::size_t> repeats_needed;  // per side, to resolve resolve_percent
  std::vector<std::string> failed;            // thresholds this event crossed
};

struct StatDiff {
  std::string base_path, current_path, base_target, current_target;
  int base_runs = 0, current_runs = 0;
  double confidence = 0.95;
  std::vector<StatEventDiff> events;  // in the base file's order
  std::vector<std::string> only_in_base, only_in_current;
  bool regression() const noexcept;  // a threshold failed
};

// Throws std::runtime_error when the files share no event (naming each side's events) or a
// threshold names an event not in both.
StatDiff diff_stat_files(const StatFile& base, const StatFile& current,
                         const StatDiffOptions& options = {});

// Event names (sysfs's, or a stat file's) are escaped for a terminal unless `raw_names`.
std::string render_stat_diff(const StatDiff& diff, bool raw_names = false);
// Schema perfscope-stat-diff version 1 (docs/USER_GUIDE.md).
std::string stat_diff_json(const StatDiff& diff);

}  // namespace perfscope
