// The copy of /proc/kallsyms that a recording leaves in perf's build-id cache,
// <cache>/.build-id/<2 hex digits of the kernel's build id>/<the rest>/kallsyms, so that a later
// report names kernel addresses as they were at recording time (after a reboot KASLR moves the
// kernel and modules come and go), and without making the kernel format 100k lines again.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace perfscope {

// $HOME/.debug, perf's build-id cache; empty when HOME is not set.
std::string default_build_id_cache_dir();

// Where the kallsyms copy of the kernel with `build_id` lies in the cache at `cache_dir`; empty
// when the build id is.
std::string kallsyms_cache_path(const std::string& cache_dir,
                                std::span<const std::uint8_t> build_id);

struct KallsymsCacheSave {
  std::string path;      // the copy's path; empty when there is none
  bool written = false;  // false when an existing copy of the same size was kept
  std::string problem;   // why no copy was saved; empty when one was (or was kept)
};
// Saves the running kernel's /proc/kallsyms in the cache at `cache_dir` (directories 0700, the
// file 0600, written through a temporary file renamed into place), unless kptr_restrict hides
// its addresses or the kernel's build id cannot be read.
KallsymsCacheSave save_kallsyms_copy(const std::string& cache_dir);

}  // namespace perfscope
