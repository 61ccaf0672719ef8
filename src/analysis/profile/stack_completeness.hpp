// How complete a profile's stacks are: of its samples with call chains, those whose outermost
// frame is a thread's first frame (report's "# Stacks" line).
#pragma once

#include "perfscope/analysis/profile/profile.hpp"

namespace perfscope {

// Sets profile.summary.stacks_walked and stacks_reaching_start from the profile's samples.
void count_stacks_reaching_start(Profile& profile);

}  // namespace perfscope
