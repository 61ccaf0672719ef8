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

// The PID of a file named PREFIX<PID>SUFFIX (perf-PID.map, jit-PID.dump) in any directory, or
// empty when the name is not of that form.
inline std::string_view pid_in_file_name(std::string_view path, std::string_view prefix,
                                         std::string_view suffix) noexcept {
  std::string_view name = file_name_of(path);
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return {};
  }
  std::string_view pid = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  return pid.find_first_not_of("0123456789") == std::string_view::npos ? pid : std::string_view();
}

// The short name report and the exports show for a file: its last component, or for the
// perf-PID.map of JIT code perf's "[JIT] tid PID" (perf script shows the map's path).
inline std::string short_dso_name(std::string_view path) {
  std::string_view name = file_name_of(path);
  if (std::string_view pid = pid_in_file_name(path, "perf-", ".map"); !pid.empty()) {
    return "[JIT] tid " + std::string(pid);
  }
  return std::string(name);
}

}  // namespace perfscope::detail
