// Differential outputs of two profiles: FlameGraph's two-column folded stacks and a red/blue
// differential flame graph. (The pprof pair for `go tool pprof -diff_base` is write_pprof of
// each profile.) Each profile should hold the samples of one event (ProfileFilter::event):
// counts of different events do not compare.
#pragma once

#include <ostream>
#include <string>

#include "perfscope/analysis/profile/profile.hpp"

namespace perfscope {

// The profile with the samples of event `event` only (the others' samples dropped), for the
// outputs below and the pprof pair.
Profile profile_of_event(Profile profile, std::uint32_t event);

// One line per stack of either profile, "comm;caller;...;leaf BASE_COUNT NEW_COUNT" (sample
// counts; 0 where a side lacks the stack), stacks named as write_folded names them: the input of
// FlameGraph's `flamegraph.pl` (which colours by the difference) and what its difffolded.pl
// writes.
void write_diff_folded(const Profile& base, const Profile& current, std::ostream& out);

// A flame graph of NEW's stacks (widths: NEW's samples), each frame coloured by how its share of
// the samples changed from BASE: red grew, blue shrank, white stayed; the deeper the colour, the
// larger the change (relative to the largest). Tooltips give both shares and the change in
// points; BASE's stacks that NEW lacks are not drawn (the subtitle says how much of BASE that
// is). The same page as write_flame_graph_svg: search, zoom, legend.
void write_diff_flame_graph_svg(const Profile& base, const Profile& current, std::ostream& out,
                                const std::string& base_name, const std::string& current_name);

}  // namespace perfscope
