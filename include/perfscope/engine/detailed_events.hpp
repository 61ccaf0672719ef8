// perf stat's -d/-dd/-ddd detailed event sets: the generic cache events perf adds at each level.
#pragma once

#include <string>
#include <vector>

namespace perfscope {

// The events -d (level 1), -dd (2) or -ddd (3 or more) add, in perf's order, as an event-list
// string for parse_event_list ("" for level 0). Each level includes the ones below it.
std::string detailed_event_list(int level);

}  // namespace perfscope
