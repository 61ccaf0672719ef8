// Where the files a recording names are read on this machine. A recording names each file by the
// path it had where it was recorded and by its build id; on another machine, or after a rebuild,
// the file that was sampled is found under lookup roots, tried in this order:
//  - build-id directories in perf's ~/.debug layout (an extracted `perfscope archive` or `perf
//    archive`, a build-id cache): <root>/<path>/<build id>/elf (and `debug` beside it, `kallsyms`
//    for [kernel.kallsyms]), <root>/<path>/<build id> itself in perf's older layout, and the
//    <root>/.build-id/xx/<rest> links to them;
//  - a symfs (perf's --symfs): the recording machine's files under a directory, <symfs>/<path>;
//  - the recorded path itself.
// A candidate whose build id is not the recorded one is passed over and reported, never used: it
// is another build, and its symbols would name the wrong code. report, script and annotate all
// read files through this one place (the Symbolizer holds it; the DWARF unwinder and the
// annotator ask it too).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope {

struct SymbolLookupRoots {
  std::vector<std::string> build_id_dirs;  // perf ~/.debug layouts, first match wins
  std::string symfs;                       // empty: none
  bool empty() const noexcept { return build_id_dirs.empty() && symfs.empty(); }
};

struct LocatedFile {
  std::string path;        // the file to read: a candidate under the roots, else the recorded path
  bool from_root = false;  // found under a lookup root
  // Candidates passed over, each with why ("... has build id X, the recording Y").
  std::vector<std::string> rejected;
};

class SymbolFileLocator {
 public:
  SymbolFileLocator() = default;
  explicit SymbolFileLocator(SymbolLookupRoots roots) : roots_(std::move(roots)) {}

  const SymbolLookupRoots& roots() const noexcept { return roots_; }

  // The file to read for `recorded_path` recorded with `build_id` (empty: unknown; then only the
  // symfs can stand in for it, unchecked, as in perf).
  LocatedFile locate(std::string_view recorded_path, std::span<const std::uint8_t> build_id) const;
  // The separate debug file the build-id directories keep beside the file's `elf`; nullopt when
  // none does.
  std::optional<std::string> locate_debug(std::string_view recorded_path,
                                          std::span<const std::uint8_t> build_id) const;
  // The copies of kallsyms of the kernel with `build_id` in the build-id directories, in order
  // of preference (they may not exist).
  std::vector<std::string> kallsyms_candidates(std::span<const std::uint8_t> build_id) const;
  // Where debug files are looked for by build id: `debug_root`, and under the symfs the same
  // directory.
  std::vector<std::string> debug_roots(const std::string& debug_root) const;
  // The perf-PID.map of process `pid`: an archived copy (archives keep the file's path) when a
  // build-id directory has one, else the symfs's, else the one in `jit_map_dir`.
  std::string jit_map_path(std::uint32_t pid, const std::string& jit_map_dir) const;
  // A JIT file by the path it had when recorded (a jitdump): an archived copy when a build-id
  // directory has one, else the symfs's, else the path itself.
  std::string jit_file_path(const std::string& recorded_path) const;

 private:
  SymbolLookupRoots roots_;
};

// A recorded path as a path relative to a root ("/usr/lib/libc.so.6" → "usr/lib/libc.so.6");
// empty when it cannot be one (not absolute, or with a ".." component that would leave the root).
std::string path_under_root(std::string_view recorded_path);

}  // namespace perfscope
