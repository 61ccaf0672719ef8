// Continuous profiling: a recording cut into intervals, one pprof profile each, ready to push.
// IntervalProfileSink builds the profile of the records as they come (passing them on to another
// sink, such as the perf.data file, when there is one); make_push_profile turns a finished
// interval into what a backend is sent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/analysis/push/push_request.hpp"
#include "perfscope/analysis/recording/recording_session.hpp"

namespace perfscope {

class IntervalProfileSink final : public RecordingSink {
 public:
  // `forward`: also receives every record (may be null).
  IntervalProfileSink(ProfileOptions options, RecordingSink* forward);
  void add_event(std::string name, const ParseConfig& config) {
    builder_.add_event(std::move(name), config);
  }
  void record(const RecordView& view, std::size_t event, const ParseConfig& config) override;
  void end_round() override;
  // The profile of the records since the last call (or the start).
  Profile take_interval() { return builder_.finish_interval(); }

 private:
  ProfileBuilder builder_;
  RecordingSink* forward_;
};

// The labels every pushed profile carries: host, command, event (the profile's event names,
// joined by '+'), then `extra` in order; an `extra` label of the same name replaces the
// built-in one.
std::vector<std::pair<std::string, std::string>> push_labels(
    const Profile& profile, const std::string& host, const std::string& command,
    const std::vector<std::pair<std::string, std::string>>& extra);

// `profile` as gzipped pprof with its labels and span (Unix seconds; `until` is at least
// `from` + 1, as Pyroscope wants a non-empty span).
PushProfile make_push_profile(const Profile& profile,
                              std::vector<std::pair<std::string, std::string>> labels,
                              std::uint64_t from_seconds, std::uint64_t until_seconds,
                              std::uint64_t sample_rate);

// A gzipped pprof file's bytes checked as one (gzip, then profile.proto with at least one sample
// type); returns its span in Unix seconds from time_nanos and duration_nanos when it has them.
// Throws std::invalid_argument saying what is wrong otherwise.
std::optional<std::pair<std::uint64_t, std::uint64_t>> check_pprof(const std::string& bytes,
                                                                   const std::string& name);

// The command that took most samples in `profile` (its comm), or empty without samples.
std::string busiest_command(const Profile& profile);

}  // namespace perfscope
