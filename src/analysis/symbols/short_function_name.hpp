// The short form of a demangled C++ name, as perf prints it by default (its demangler runs
// without parameter lists): "long ns::scaled<long>(long, long) const [clone .constprop.0]" is
// "ns::scaled<long>". The short form is always a contiguous part of the full one, so it is
// returned as a view into it: no allocation.
#pragma once

#include <string_view>

namespace perfscope {

std::string_view short_function_name(std::string_view demangled) noexcept;

}  // namespace perfscope
