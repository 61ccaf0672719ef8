// The counts of a `perfscope stat --json` document (schema perfscope-stat), read back for
// `perfscope diff`: each event's value per repeat, and which kind of file a diff input is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "perfscope/analysis/diff/count_comparison.hpp"

namespace perfscope {

struct StatFileEvent {
  std::string name;
  std::string unit;            // display unit ("msec" for clocks, "" for counts)
  std::vector<double> values;  // each run's value (display units); empty without "values"
  RepeatSummary summary;       // from `values`, else from value / stddev / runs
};

struct StatFile {
  std::string path;
  std::string target;  // "'sleep 1'", "system wide", ...
  int runs = 0;
  // The counted events, then "elapsed" (wall-clock milliseconds per run) when the file has it.
  std::vector<StatFileEvent> events;
};

// Throws std::runtime_error saying what is wrong: not JSON, another schema, a newer version.
StatFile parse_stat_file(std::string_view text, const std::string& path);
StatFile read_stat_file(const std::string& path);

enum class DiffInputKind { perf_data, stat_json, profile_json, empty, directory, other };
// From the first bytes of the file; throws std::runtime_error when it cannot be read (naming
// the file and the system's reason).
DiffInputKind diff_input_kind(const std::string& path);
const char* diff_input_kind_name(DiffInputKind kind) noexcept;

}  // namespace perfscope
