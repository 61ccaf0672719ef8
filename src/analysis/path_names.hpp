// The last component of a path, as perf's short DSO names show it ("/usr/lib/libc.so.6" ->
// "libc.so.6"); a name without a slash is its own.
#pragma once

#include <string_view>

namespace perfscope::detail {

inline std::string_view file_name_of(std::string_view path) noexcept {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace perfscope::detail
