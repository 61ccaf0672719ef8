// report --format html: the viewer application (viewer/) and the profile in one self-contained
// file that opens from file:// with no server. It carries what `perfscope view` would answer
// for the whole recording: each event's call trees (top-down and bottom-up) and timeline, and
// the function pane of each event's hottest functions (annotate's model); a time range or a
// filter needs `perfscope view` on the recording, and the page says so.
#pragma once

#include <ostream>
#include <string>

#include "perfscope/analysis/profile/profile.hpp"

namespace perfscope {
class PerfDataReader;
}  // namespace perfscope

namespace perfscope::cli {

// How many functions per event carry their code (source lines and instructions).
inline constexpr std::size_t html_annotated_functions = 10;

// Writes the page for `profile` (built from `reader` with every sample kept); `name` is how the
// page names the recording.
void write_report_html(const PerfDataReader& reader, Profile profile, const std::string& name,
                       std::ostream& out);

}  // namespace perfscope::cli
