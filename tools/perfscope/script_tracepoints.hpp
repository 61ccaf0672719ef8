// The tracepoint payloads `perfscope script` prints: decoded by libtraceevent from the formats
// the recording carries (its TRACING_DATA), as perf script decodes them, or from this machine's
// tracefs for a recording without them (said in a note).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/tracepoint_format.hpp"

namespace perfscope::cli {

class ScriptTracepoints {
 public:
  explicit ScriptTracepoints(const PerfDataReader& reader);

  // Whether event `event` (an index into reader.events()) is a tracepoint with a known format.
  bool decodes(std::size_t event) const noexcept {
    return event < formats_.size() && formats_[event] != nullptr;
  }
  // The payload as the tracepoint's print fmt gives it ("prev_comm=sh prev_pid=12 ... ==> ...").
  std::string text(std::size_t event, std::span<const std::byte> payload) const;
  // Every field but the common ones by name: numbers as numbers, strings as strings, arrays and
  // dynamic data as hex.
  nlohmann::json fields(std::size_t event, std::span<const std::byte> payload) const;
  // Every field but the common ones as libtraceevent prints it (data convert --to-json's).
  std::vector<std::pair<std::string, std::string>> printed_fields(
      std::size_t event, std::span<const std::byte> payload) const {
    return catalog_.print_fields(*formats_[event], payload);
  }
  // The format of event `event`, null when it is no tracepoint or its format is unknown.
  const TracepointFormat* format(std::size_t event) const noexcept {
    return decodes(event) ? formats_[event] : nullptr;
  }
  // What could not be decoded from the recording itself, one sentence each.
  const std::vector<std::string>& notes() const noexcept { return notes_; }

 private:
  TracepointCatalog catalog_;
  std::vector<const TracepointFormat*> formats_;  // by event index; null: no tracepoint or format
  std::vector<std::string> notes_;
};

}  // namespace perfscope::cli
