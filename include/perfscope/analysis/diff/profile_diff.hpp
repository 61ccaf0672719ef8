// Two profiles compared the way `perf diff` compares them: each profile aggregated into report
// rows (the same sort keys and filters as `perfscope report`), rows of the two matched by the text
// of their keys, and each row's share of its own profile compared. Shares, not counts: profiles
// of different lengths, sampling frequencies or event periods compare.
//
// The matching rule: a row's key is the text `perfscope report` shows for it, so symbols match by
// name and DSOs by file name ("libc.so.6", "[kernel.kallsyms]"), never by address or build id:
// a function of a rebuilt binary meets its old self. Unresolved addresses are named by their
// offset in the DSO and match only at the same offset; comm matches by name; pid and tid keys
// hold the process ids, which differ between runs (rows then match only within a run).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/analysis/profile/profile.hpp"
#include "perfscope/analysis/profile/report_table.hpp"

namespace perfscope {

struct ProfileDiffOptions {
  std::vector<ReportSortKey> sort{ReportSortKey::dso, ReportSortKey::sym};  // perf diff's default
  // Inclusive shares too (a row's own samples and its callees'), and Delta and Ratio of them;
  // needs call chains on both sides.
  bool children = false;
  double percent_limit = 0;  // rows below this share on both sides are not shown
};

// One side of a row: its share of the profile's event (% of the event's period), self and
// inclusive.
struct ProfileDiffSide {
  double self_percent = 0, total_percent = 0;
  std::uint64_t self_samples = 0, total_samples = 0;
  std::uint64_t self_period = 0, total_period = 0;
  bool present = false;  // the row is in this profile
};

enum class ProfileDiffStatus { changed, appeared, disappeared };

struct ProfileDiffRow {
  std::vector<std::string> keys;  // the report's text of each sort key
  ProfileDiffSide base, current;
  // NEW % - BASE % in points, of the self shares, or of the inclusive ones with children.
  double delta = 0;
  double self_delta = 0, total_delta = 0;
  std::optional<double> ratio;  // NEW % / BASE %; nullopt when the base share is 0
  ProfileDiffStatus status = ProfileDiffStatus::changed;
  // Whether the change is more than sampling noise. p_value: the chance of a difference of
  // shares at least this large if both recordings sampled the same program, from a two-sided
  // two-proportion test of the row's samples among each recording's samples (self, or inclusive
  // with children). significant: p_value times the event's rows is below 0.05 (Bonferroni: a
  // table of many rows holds a few small p-values by chance). Samples taken close together are
  // not independent, so this is a floor on the noise, not proof of a cause.
  double p_value = 1;
  bool significant = false;
  std::string explanation;  // why a row appeared or disappeared, as far as the profiles tell
};

struct ProfileDiffEvent {
  std::string name;
  std::uint64_t base_samples = 0, current_samples = 0;
  std::uint64_t base_period = 0, current_period = 0;  // after the filters
  // The shares' denominators: each side's event count before the filters (perf's "absolute").
  std::uint64_t base_total = 0, current_total = 0;
  // Set when the two profiles sampled at clearly different rates or periods (mean period per
  // sample more than 10 % apart): a note for the header.
  std::string rate_note;
  std::vector<ProfileDiffRow> rows;  // the largest |delta| first
};

struct ProfileDiff {
  std::vector<ReportSortKey> sort;
  std::string base_command, current_command;  // the recorded command lines
  bool children = false;
  std::vector<ProfileDiffEvent> events;  // those both profiles sampled, in the base's order
  std::vector<std::string> only_in_base, only_in_current;  // events sampled on one side only
};

// Throws std::runtime_error when the profiles have no sampled event in common (naming each
// side's) or --children is asked of profiles without call chains.
ProfileDiff diff_profiles(const Profile& base, const Profile& current,
                          const ProfileDiffOptions& options = {});

// perf diff's stdio layout with perfscope's columns: Baseline, New, Delta, Ratio (and the
// inclusive ones with children), the keys, and an explanation line below each row that
// appeared or disappeared. `base_name`, `current_name`: how the header names the inputs.
// Names the recorded processes chose (keys, commands, explanations) are escaped for a terminal
// (core/safe_text.hpp) unless `raw_names`.
std::string render_profile_diff(const ProfileDiff& diff, const std::string& base_name,
                                const std::string& current_name, bool raw_names = false);

// Schema perfscope-profile-diff version 1 (docs/USER_GUIDE.md).
std::string profile_diff_json(const ProfileDiff& diff, const std::string& base_name,
                              const std::string& current_name);

}  // namespace perfscope
