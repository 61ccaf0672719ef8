// perf's build-id cache (~/.debug) managed as perf buildid-cache manages it, in perf's layout so
// that perf and perfscope share it both ways: a file's copy at <cache>/<its path>/<build id>/elf,
// found by build id through the link <cache>/.build-id/<2 hex digits>/<the rest>, which points
// at ../../<its path>/<build id>.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace perfscope {

struct CachedBuild {
  std::string build_id;  // lower-case hex
  std::string path;      // the file it is a copy of ("/usr/bin/ls", "[kernel.kallsyms]")
};

class BuildIdCache {
 public:
  // `root` empty: $HOME/.debug.
  explicit BuildIdCache(std::string root = {});
  const std::string& root() const noexcept { return root_; }

  // Each throws std::runtime_error saying what failed (the file has no build id, a write failed).
  // add: false when that build of the file was cached already.
  bool add(const std::string& file);
  // remove: the cached build of what `file` is now; false when it was not cached.
  bool remove(const std::string& file);
  // Every build cached for `path` (a file that may be gone); how many were removed.
  std::size_t purge(const std::string& path);
  std::size_t purge_all();
  // Whether a build is cached (its link resolves to a directory holding its copy).
  bool holds(const std::string& build_id) const;
  // Every cached build, by its link, in build-id order (perf's).
  std::vector<CachedBuild> list() const;

 private:
  void remove_build(const CachedBuild& build);
  std::string root_;
};

}  // namespace perfscope
