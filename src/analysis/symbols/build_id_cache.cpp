#include "perfscope/analysis/symbols/build_id_cache.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/kallsyms_cache.hpp"
#include "perfscope/analysis/symbols/symbol_file_locator.hpp"

namespace perfscope {

namespace fs = std::filesystem;

namespace {

std::string absolute_path(const std::string& file) {
  std::error_code error;
  fs::path absolute = fs::absolute(file, error);
  if (error) throw std::runtime_error(fmt::format("{}: {}", file, error.message()));
  return absolute.lexically_normal().string();
}

std::string link_path(const std::string& root, const std::string& hex) {
  return fmt::format("{}/.build-id/{}/{}", root, hex.substr(0, 2), hex.substr(2));
}

// Empty directories left by a removal, up to (not including) the cache's root.
void remove_empty_parents(fs::path directory, const fs::path& root) {
  std::error_code error;
  while (directory.has_parent_path() && directory != root &&
         directory.string().size() > root.string().size()) {
    if (!fs::is_empty(directory, error) || error) return;
    fs::remove(directory, error);
    if (error) return;
    directory = directory.parent_path();
  }
}

// The build id `file` is cached under; std::runtime_error when it has none.
std::string build_id_text(const std::string& file) {
  auto id = read_build_id(file);
  if (!id || id->empty()) {
    throw std::runtime_error(fmt::format(
        "{}: no build id to file it under (not an ELF file with a build-id note, or unreadable)",
        file));
  }
  return build_id_hex(*id);
}

}  // namespace

BuildIdCache::BuildIdCache(std::string root) : root_(std::move(root)) {
  if (root_.empty()) root_ = default_build_id_cache_dir();
  if (root_.empty()) {
    throw std::runtime_error("HOME is not set: there is no ~/.debug build-id cache to use");
  }
}

bool BuildIdCache::add(const std::string& file) {
  std::string hex = build_id_text(file);
  std::string path = absolute_path(file);
  std::string relative = path_under_root(path);
  std::string directory = fmt::format("{}/{}/{}", root_, relative, hex);
  std::string elf = directory + "/elf";
  std::string link = link_path(root_, hex);
  std::error_code error;
  bool had = fs::is_regular_file(elf, error) && fs::is_symlink(link, error);
  fs::create_directories(directory, error);
  if (error)
    throw std::runtime_error(fmt::format("cannot make {}: {}", directory, error.message()));
  if (!fs::is_regular_file(elf, error)) {
    // Copied through a temporary name: a reader never sees half a file.
    std::string temporary = elf + ".tmp";
    fs::copy_file(path, temporary, fs::copy_options::overwrite_existing, error);
    if (!error) fs::rename(temporary, elf, error);
    if (error) {
      fs::remove(temporary);
      throw std::runtime_error(fmt::format("cannot copy {} to {}: {}", path, elf, error.message()));
    }
  }
  fs::create_directories(fs::path(link).parent_path(), error);
  if (!fs::is_symlink(link, error)) {
    fs::remove(link, error);
    std::string target = fmt::format("../../{}/{}", relative, hex);
    if (::symlink(target.c_str(), link.c_str()) != 0) {
      throw std::runtime_error(
          fmt::format("cannot link {} to {}: {}", link, target, std::strerror(errno)));
    }
  }
  return !had;
}

bool BuildIdCache::remove(const std::string& file) {
  std::string hex = build_id_text(file);
  for (const CachedBuild& build : list()) {
    if (build.build_id == hex) {
      remove_build(build);
      return true;
    }
  }
  return false;
}

std::size_t BuildIdCache::purge(const std::string& path) {
  std::string wanted = path.starts_with('[') ? path : absolute_path(path);
  std::size_t removed = 0;
  for (const CachedBuild& build : list()) {
    if (build.path != wanted) continue;
    remove_build(build);
    ++removed;
  }
  return removed;
}

std::size_t BuildIdCache::purge_all() {
  std::vector<CachedBuild> builds = list();
  for (const CachedBuild& build : builds) remove_build(build);
  return builds.size();
}

bool BuildIdCache::holds(const std::string& build_id) const {
  if (build_id.size() < 3) return false;
  std::error_code error;
  return fs::is_directory(link_path(root_, build_id), error);
}

std::vector<CachedBuild> BuildIdCache::list() const {
  std::vector<CachedBuild> builds;
  std::error_code error;
  fs::directory_iterator prefixes(root_ + "/.build-id", error);
  for (; !error && prefixes != fs::directory_iterator(); prefixes.increment(error)) {
    std::string prefix = prefixes->path().filename().string();
    if (prefix.size() != 2) continue;
    std::error_code inner;
    fs::directory_iterator links(prefixes->path(), inner);
    for (; !inner && links != fs::directory_iterator(); links.increment(inner)) {
      std::error_code ignored;
      if (!links->is_symlink(ignored)) continue;  // perfscope's own kallsyms copies are not links
      fs::path target = fs::read_symlink(links->path(), ignored);
      if (ignored) continue;
      // ../../<path>/<build id>: the path is what lies between the root and the build id.
      std::string text = target.string();
      if (!text.starts_with("../../")) continue;
      std::string rest = text.substr(6);
      std::size_t slash = rest.rfind('/');
      if (slash == std::string::npos) continue;
      std::string relative = rest.substr(0, slash);
      std::string hex = prefix + links->path().filename().string();
      builds.push_back({hex, relative.starts_with('[') ? relative : "/" + relative});
    }
  }
  std::sort(builds.begin(), builds.end(),
            [](const CachedBuild& a, const CachedBuild& b) { return a.build_id < b.build_id; });
  return builds;
}

void BuildIdCache::remove_build(const CachedBuild& build) {
  std::error_code error;
  std::string link = link_path(root_, build.build_id);
  std::string relative = build.path.starts_with('[') ? build.path : path_under_root(build.path);
  fs::path directory = fmt::format("{}/{}/{}", root_, relative, build.build_id);
  fs::remove_all(directory, error);
  if (error) {
    throw std::runtime_error(
        fmt::format("cannot remove {}: {}", directory.string(), error.message()));
  }
  fs::remove(link, error);
  remove_empty_parents(directory.parent_path(), root_);
  remove_empty_parents(fs::path(link).parent_path(), root_);
}

}  // namespace perfscope
