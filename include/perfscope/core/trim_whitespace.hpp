// Values read from kernel files (/proc/cpuinfo, sysfs), uname and credential files come with
// line ends and padding around them: spaces, tabs, CR and LF are cut from both ends.
#pragma once

#include <string>
#include <string_view>

namespace perfscope {

std::string trim_whitespace(std::string_view text);

}  // namespace perfscope
