// ProfileView: the questions `perfscope view` asks of a Profile, each answered as JSON for the
// browser application: what the recording holds (events, threads, time span), the call tree of a
// selection (top-down for the flame graph and the call tree, bottom-up for the callers view),
// and the timeline of its threads. A selection is an event, a time range and filters by comm,
// pid, tid and DSO; every view of the application asks with the same one. Answers are built on
// demand from the samples and pruned to what can be seen, so a large recording is never sent
// whole.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/analysis/profile/profile.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"

namespace perfscope {

struct ViewSelection {
  std::uint32_t event = 0;
  std::uint64_t from = 0;  // sample times, ns, [from, to)
  std::uint64_t to = std::numeric_limits<std::uint64_t>::max();
  std::string comm, dso;  // exact; empty: any. dso: the sample's leaf is in it
  std::optional<std::uint32_t> pid, tid;
};

struct ViewTreeOptions {
  bool inverted = false;  // bottom-up: leaf functions at the root, their callers below
  // Nodes below this share of the selection's weight are left out (their weight stays in their
  // parent's total); the answer says how many were.
  double min_share = 0.0005;
};

// `text` as a JSON string, quoted (bytes that are not UTF-8 become U+FFFD), as the view's
// answers write names: for what its callers add to them (file names, the diff's table).
std::string json_quoted(std::string_view text);

class ProfileView {
 public:
  // `profile`: built with keep_samples false and keep_sample_times (the view folds samples by
  // their group and keeps only their times: 8 to 12 bytes a sample).
  explicit ProfileView(Profile profile);

  // The options a view's profile is built with.
  static ProfileOptions profile_options();

  // With an on-CPU clock event and off-CPU samples (record --wall, or --off-cpu -e cpu-clock), the
  // view adds the event "wall-time" (report --wall's): both kinds at once, so each thread's
  // weight is its lifetime, on the CPU and off it. Its index, and the clock event it holds.
  std::optional<std::uint32_t> wall_event() const noexcept { return wall_event_; }
  std::optional<std::uint32_t> wall_clock_event() const noexcept { return wall_clock_event_; }

  const Profile& profile() const noexcept { return profile_; }

  // {"events":[{"name","samples","period","off_cpu","wall","in_wall"}],"threads":[{"pid","tid","comm"}],
  //  "dsos":[names],"first_time","last_time","samples","lost","warnings":[...]}
  std::string summary_json() const;
  // {"weight","samples","pruned","root":{"name":"all","dso":"","total","self","children":[...]}}
  std::string tree_json(const ViewSelection& selection, const ViewTreeOptions& options) const;
  // {"from","to","buckets","threads":[{"pid","tid","comm","weight","lane":[weights],
  //  "states":{"sleeping":[weights],...}}]}: the selection's weight per thread in `buckets`
  // equal spans of [from, to) (the whole recording when the selection has no range); off-CPU
  // intervals spread over the spans they cover, and for an off-CPU event each thread's lane per
  // state it was off the CPU in. The heaviest `max_threads` threads.
  std::string timeline_json(const ViewSelection& selection, std::uint32_t buckets,
                            std::uint32_t max_threads = 64) const;
  // The stack chart of one thread (selection.tid, else the thread that weighs most in the
  // selection): its samples in time order, consecutive ones with the same stack as one run.
  // {"tid","comm","from","to","truncated","functions":[[name,dso]],"stacks":[[parent,function]],
  //  "runs":[[start,end,stack,samples]]}: times in ns, stacks indexing "stacks" (parent -1: a
  // root frame), at most max_runs runs (then "truncated" is true and the rest left out).
  std::string stack_chart_json(const ViewSelection& selection, std::size_t max_runs = 200000) const;
  // The whole recording as the viewer's page can select from it without a server (report
  // --format html): {"from","to","buckets","functions":[[name,dso index or -1],...],
  // "stacks":[parent or -1, function, ...],"groups":[stack or -1, thread, event, state, ...],
  // "cells":[bucket, group, weight, samples, ...]}: each sample group's weight and samples in
  // each of `buckets` equal spans of the recording (an off-CPU interval's weight spread over
  // the spans it covers, what began before the first sample in the first). Spans are halved in
  // number (from 1024) until the cells are at most `max_cells`; none fit: an empty object.
  std::string sample_table_json(std::size_t max_cells) const;
  // The profile of the selection's samples alone, folded into sample groups (no times): what
  // report tables and diffs are made of. Its events' counts are the selection's.
  Profile selected_profile(const ViewSelection& selection) const;

 private:
  // Whether samples of `event` are of the selection's event `selected` (wall-time holds two).
  bool event_selected(std::uint32_t event, std::uint32_t selected) const noexcept;
  // Whether each sample group passes the selection's event and filters (the time range is
  // each sample's).
  std::vector<bool> groups_selected(const ViewSelection& selection) const;
  // visit(group, time, period) for each sample of the selection.
  template <typename Visit>
  void for_each_selected(const ViewSelection& selection, Visit&& visit) const;

  Profile profile_;
  std::optional<std::uint32_t> wall_event_, wall_clock_event_;
  std::vector<bool> wall_members_;  // per event: its samples are wall-time's
};

}  // namespace perfscope
