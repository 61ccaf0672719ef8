#include "perfscope/analysis/recording/stack_completion_sink.hpp"

#include "perfscope/abi/record_type.hpp"

namespace perfscope {

StackCompletionSink::StackCompletionSink(RecordingSink& downstream, StackCompletion mode)
    : downstream_(downstream), completer_(maps_, mode) {}

const ParseConfig& StackCompletionSink::output_config(const ParseConfig& config) {
  for (const auto& [input, output] : output_configs_) {
    if (input == &config) return output;
  }
  output_configs_.emplace_back(&config, StackCompleter::output_config(config, completer_.mode()));
  return output_configs_.back().second;
}

void StackCompletionSink::record(const RecordView& view, std::size_t event,
                                 const ParseConfig& config) {
  if (view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample)) {
    if (completer_.complete(view, config, completed_)) {
      downstream_.record(record_view(completed_), event, output_config(config));
      return;
    }
  } else if (TaskMaps::observes(view.header.type)) {
    maps_.observe(view, config);
  }
  downstream_.record(view, event, config);
}

}  // namespace perfscope
