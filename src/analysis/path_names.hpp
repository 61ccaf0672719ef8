// The last component of a path, as perf's short DSO names show it ("/usr/lib/libc.so.6" ->
// "libc.so.6"); a name without a slash is its own.
#pragma once

#include <string>
#include <string_view>

namespace perfscope::detail {

inline std::string_view file_name_of(std::string_view path) noexcept {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The short name report and the exports show for a file: its last component, or for the
// perf-PID.map of JIT code perf's "[JIT] tid PID" (perf script shows the map's path).
inline std::string short_dso_name(std::string_view path) {
  std::string_view name = file_name_of(path);
  if (name.starts_with("perf-") && name.ends_with(".map") && name.size() > 9) {
    std::string_view pid = name.substr(5, name.size() - 9);
    if (pid.find_first_not_of("0123456789") == std::string_view::npos) {
      return "[JIT] tid " + std::string(pid);
    }
  }
  return std::string(name);
}

}  // namespace perfscope::detail
