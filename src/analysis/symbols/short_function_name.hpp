// The short form of a demangled C++ name, as perf prints it by default (its demangler runs
// without parameter lists): "long ns::scaled<long>(long, long) const [clone .constprop.0]" is
// "ns::scaled<long>". The short form is always a contiguous part of the full one, so it is
// returned as a view into it: no allocation.
#pragma once

#include <string_view>

namespace perfscope {

std::string_view short_function_name(std::string_view demangled) noexcept;

// A symbol name without its ELF symbol version, as perf prints it by default:
// "__libc_start_main@@GLIBC_2.34" and "cfree@GLIBC_2.2.5" are "__libc_start_main" and "cfree";
// a PLT stub's "@plt" stays. A view into `name`.
std::string_view without_symbol_version(std::string_view name) noexcept;

}  // namespace perfscope
