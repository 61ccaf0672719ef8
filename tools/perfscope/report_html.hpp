// report --format html: the viewer application (viewer/) and the profile in one self-contained
// file that opens from file:// with no server. It carries the recording as a table of its sample
// groups' weights in spans of time (ProfileView::sample_table_json), from which the page answers
// the call trees, bottom-up view and timeline of any event, filter and range (rounded out to the
// spans), and the function pane of each event's hottest functions (annotate's model, of the
// whole recording). A recording too varied for the table carries each event's whole-recording
// answers instead; then a range or a filter needs `perfscope view`, and the page says so.
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
// ... of those with at least this share of their event's own samples.
inline constexpr double html_annotated_min_share = 0.005;
// The most cells (a sample group's weight in one span of time) the page carries: about 5 MB.
inline constexpr std::size_t html_max_table_cells = 250'000;

// Writes the page for `profile` (built from `reader` with ProfileView::profile_options()); `name`
// is how the page names the recording.
void write_report_html(const PerfDataReader& reader, Profile profile, const std::string& name,
                       std::ostream& out);

}  // namespace perfscope::cli
