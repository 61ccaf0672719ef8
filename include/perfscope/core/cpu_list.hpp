// CPU lists in the kernel's notation ("0-3,8,10-11").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "perfscope/export.hpp"

namespace perfscope {

// Parses a CPU list; throws std::invalid_argument naming the bad part.
PERFSCOPE_EXPORT std::vector<int> parse_cpu_list(std::string_view text);
PERFSCOPE_EXPORT std::string format_cpu_list(const std::vector<int>& cpus);
// The online CPUs of this machine.
PERFSCOPE_EXPORT std::vector<int> online_cpus();

}  // namespace perfscope
