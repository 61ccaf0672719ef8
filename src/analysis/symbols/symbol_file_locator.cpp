#include "perfscope/analysis/symbols/symbol_file_locator.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <system_error>

#include "perfscope/analysis/symbols/build_id.hpp"

namespace perfscope {

namespace {

bool is_regular(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_directory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The directories a build-id tree may keep the file's members in (elf, debug, kallsyms), in
// perf's layout, for each spelling of the build id; the .build-id link is the other way in.
std::vector<std::string> member_directories(const std::string& root, std::string_view recorded,
                                            std::span<const std::uint8_t> build_id) {
  std::vector<std::string> out;
  std::string relative = path_under_root(recorded);
  for (const std::string& hex : build_id_hex_spellings(build_id)) {
    if (!relative.empty()) out.push_back(fmt::format("{}/{}/{}", root, relative, hex));
    out.push_back(fmt::format("{}/.build-id/{}/{}", root, hex.substr(0, 2), hex.substr(2)));
  }
  return out;
}

// The one build-id directory under `directory` (perf's <root>/<path>/<build id>/); empty when
// there are none or several.
std::string single_build(const std::string& directory) {
  std::error_code error;
  std::filesystem::directory_iterator it(directory, error);
  std::string found;
  for (; !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    if (!it->is_directory(error)) continue;
    if (!found.empty()) return {};
    found = it->path().string();
  }
  return found;
}

}  // namespace

std::string path_under_root(std::string_view recorded_path) {
  if (recorded_path.empty()) return {};
  if (recorded_path.front() == '[') {
    // [kernel.kallsyms], [vdso]: perf keeps them under their bracketed names.
    if (recorded_path.find('/') != std::string_view::npos) return {};
    return std::string(recorded_path);
  }
  if (recorded_path.front() != '/') return {};
  std::string out;
  std::size_t at = 0;
  while (at < recorded_path.size()) {
    std::size_t slash = recorded_path.find('/', at);
    if (slash == std::string_view::npos) slash = recorded_path.size();
    std::string_view part = recorded_path.substr(at, slash - at);
    at = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return {};
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

LocatedFile SymbolFileLocator::locate(std::string_view recorded_path,
                                      std::span<const std::uint8_t> build_id) const {
  LocatedFile located;
  const std::vector<std::string> spellings = build_id_hex_spellings(build_id);
  const bool known = !spellings.empty();
  auto accept = [&](const std::string& candidate, bool check) {
    if (!is_regular(candidate)) return false;
    if (check) {
      auto actual = read_build_id(candidate);
      if (!actual || !same_build_id(*actual, build_id)) {
        located.rejected.push_back(fmt::format(
            "not using {} for {}: it has build id {}, the recording {} (another build)", candidate,
            recorded_path, actual ? build_id_hex(*actual) : std::string("none"),
            known ? spellings.front() : std::string("none")));
        return false;
      }
    }
    located.path = candidate;
    located.from_root = true;
    return true;
  };
  if (known) {
    for (const std::string& root : roots_.build_id_dirs) {
      for (const std::string& directory : member_directories(root, recorded_path, build_id)) {
        // perf's layout since 4.x: a directory with `elf`; before, the file itself.
        if (is_directory(directory) ? accept(directory + "/elf", true) : accept(directory, true)) {
          return located;
        }
      }
    }
  }
  if (!known) {
    // Unknown build id (a file only call chains reached: recorders note the build ids of
    // sampled ips): an archive holding exactly one build of the path stands in for it, unchecked.
    std::string relative = path_under_root(recorded_path);
    for (const std::string& root : roots_.build_id_dirs) {
      if (relative.empty()) break;
      std::string only = single_build(fmt::format("{}/{}", root, relative));
      if (!only.empty() && accept(only + "/elf", false)) return located;
    }
  }
  if (!roots_.symfs.empty()) {
    std::string relative = path_under_root(recorded_path);
    if (!relative.empty() && accept(fmt::format("{}/{}", roots_.symfs, relative), known)) {
      return located;
    }
  }
  located.path = std::string(recorded_path);
  return located;
}

std::optional<std::string> SymbolFileLocator::locate_debug(
    std::string_view recorded_path, std::span<const std::uint8_t> build_id) const {
  for (const std::string& root : roots_.build_id_dirs) {
    for (const std::string& directory : member_directories(root, recorded_path, build_id)) {
      std::string candidate = directory + "/debug";
      if (is_regular(candidate)) return candidate;
    }
  }
  return std::nullopt;
}

std::vector<std::string> SymbolFileLocator::kallsyms_candidates(
    std::span<const std::uint8_t> build_id) const {
  std::vector<std::string> out;
  for (const std::string& root : roots_.build_id_dirs) {
    for (const std::string& directory : member_directories(root, "[kernel.kallsyms]", build_id)) {
      out.push_back(directory + "/kallsyms");
    }
  }
  return out;
}

std::vector<std::string> SymbolFileLocator::debug_roots(const std::string& debug_root) const {
  std::vector<std::string> out;
  if (!debug_root.empty()) out.push_back(debug_root);
  std::string relative = path_under_root(debug_root);
  if (!roots_.symfs.empty() && !relative.empty()) {
    out.push_back(fmt::format("{}/{}", roots_.symfs, relative));
  }
  return out;
}

std::string SymbolFileLocator::jit_map_path(std::uint32_t pid,
                                            const std::string& jit_map_dir) const {
  return jit_file_path(fmt::format("{}/perf-{}.map", jit_map_dir, pid));
}

std::string SymbolFileLocator::jit_file_path(const std::string& local) const {
  std::string relative = path_under_root(local);
  if (!relative.empty()) {
    for (const std::string& root : roots_.build_id_dirs) {
      std::string candidate = fmt::format("{}/{}", root, relative);
      if (is_regular(candidate)) return candidate;
    }
    if (!roots_.symfs.empty()) {
      std::string candidate = fmt::format("{}/{}", roots_.symfs, relative);
      if (is_regular(candidate)) return candidate;
    }
  }
  return local;
}

}  // namespace perfscope
