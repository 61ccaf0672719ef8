// StackCompletionSink: completes the user call chains of a recording's samples as they pass on
// to the file (StackCompleter), replaying the records that change mappings so that each sample
// is unwound against the processes' mappings of its time. The recording session delivers the
// buffers' records merged by time for this (SamplingOptions::time_ordered).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"
#include "perfscope/analysis/unwinding/stack_completion.hpp"

namespace perfscope {

class StackCompletionSink final : public RecordingSink {
 public:
  StackCompletionSink(RecordingSink& downstream, StackCompletion mode);
  void record(const RecordView& view, std::size_t event, const ParseConfig& config) override;
  void end_round() override { downstream_.end_round(); }
  void aux_data(const SessionAuxData& data) override { downstream_.aux_data(data); }

  const StackCompletionStatistics& statistics() const noexcept { return completer_.statistics(); }
  StackCompletion mode() const noexcept { return completer_.mode(); }

 private:
  const ParseConfig& output_config(const ParseConfig& config);

  RecordingSink& downstream_;
  TaskMaps maps_;
  StackCompleter completer_;
  std::vector<std::byte> completed_;
  // The layout of the completed samples of each event's layout (a recording has a few).
  std::vector<std::pair<const ParseConfig*, ParseConfig>> output_configs_;
};

}  // namespace perfscope
