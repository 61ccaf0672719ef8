// Symbol archives: the files a recording's samples reach, packed so that the recording can be
// reported on a machine that has none of them (`perfscope archive`, `report --archive`).
//
// The layout is perf's build-id cache (~/.debug), as `perf archive` packs it: for each file
// <path>/<build id>/elf (and `debug`, its separate debug file, when there is one), for the
// kernel [kernel.kallsyms]/<build id>/kallsyms, and a link .build-id/<xx>/<rest> to each such
// directory; JIT maps keep their path (tmp/perf-PID.map): they have no build id. So `tar xf
// ARCHIVE -C ~/.debug` makes it perf's cache, and perf's own tar.bz2 archives read back here.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/profile.hpp"
#include "perfscope/analysis/symbols/symbol_file_locator.hpp"

namespace perfscope {

// A bad archive (unsafe member names, too large, not a tar) or one that cannot be written.
class SymbolArchiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One file to pack: `member` is its name in the archive, `source` the file read for it.
struct SymbolArchiveFile {
  std::string member;
  std::string source;
  std::string recorded_path;  // the file the recording names
  std::uint64_t size = 0;
  // Packed instead of reading `source`, for files whose size stat cannot tell (/proc/kallsyms).
  std::optional<std::string> content;
};

// What an archive of a recording holds, and what it cannot.
struct SymbolArchivePlan {
  std::vector<SymbolArchiveFile> files;
  // The .build-id links: member name → link target (relative, as perf makes them).
  std::vector<std::pair<std::string, std::string>> links;
  // Needed by the samples, not packed: not found, of another build, or without a build id to
  // key them by.
  std::vector<MissingSymbolFile> missing;
  // Files packed on an assumption, said once each: a file only the call chains reach has no
  // build id in the recording (perf notes those of sampled ips), so it is packed as it is now.
  std::vector<std::string> notes;
};

struct SymbolArchivePlanOptions {
  // Where the files are read (a symfs, other archives), as report reads them.
  SymbolLookupRoots lookup;
  std::string debug_root = "/usr/lib/debug";  // separate debug files by build id / debuglink
  std::string build_id_cache_dir;             // the kallsyms copies; empty: $HOME/.debug
  std::string jit_map_dir = "/tmp";
};

// The files the samples of `profile` (built from `reader`) reach: every ELF file with its debug
// file, the kernel's kallsyms copy (the one saved at recording time in the build-id cache, else
// the running kernel's when it is the recorded one), and the JIT maps; each checked against the
// recorded build id.
SymbolArchivePlan plan_symbol_archive(const PerfDataReader& reader, const Profile& profile,
                                      const SymbolArchivePlanOptions& options = {});

struct SymbolArchiveSummary {
  std::uint64_t files = 0;      // regular members
  std::uint64_t links = 0;      // .build-id links
  std::uint64_t bytes_in = 0;   // the files' bytes
  std::uint64_t bytes_out = 0;  // the archive's size
  double seconds = 0;
};

// Writes `plan` as a tar archive compressed after `path`'s suffix: .tar.zst (the default, also
// for other names), .tar.bz2 (perf archive's), .tar.gz, .tar.xz, .tar. The file is written
// under a temporary name and renamed into place, mode 0600. Throws SymbolArchiveError.
SymbolArchiveSummary write_symbol_archive(const SymbolArchivePlan& plan, const std::string& path);

struct SymbolArchiveLimits {
  std::uint64_t max_bytes = std::uint64_t{8} << 30;  // all members together, uncompressed
  std::uint64_t max_members = 1'000'000;
};

struct SymbolArchiveExtraction {
  std::uint64_t files = 0;
  std::uint64_t bytes = 0;
  std::uint64_t links = 0;    // .build-id links, not recreated: files are found by their path
  std::uint64_t skipped = 0;  // hard links, devices, fifos: nothing a lookup reads
  double seconds = 0;
};

// An archive unpacked into a private directory (0700, under $TMPDIR or /tmp), removed with the
// object, and also when the process dies without running destructors (a signal: `report ... |
// head` ends by SIGPIPE): a small reaper process, out of the terminal's process group, waits on
// a pipe for that and runs `rm -rf` on the directory. Members are refused, and the whole archive
// with them, when their names are absolute or hold a ".." component; links are never created on
// disk, so nothing is written outside the directory; the total size and member count are bounded.
class ExtractedSymbolArchive {
 public:
  // Throws SymbolArchiveError saying which member or limit was the problem.
  static ExtractedSymbolArchive extract(const std::string& archive_path,
                                        const SymbolArchiveLimits& limits = {});
  ExtractedSymbolArchive(ExtractedSymbolArchive&& other) noexcept;
  ExtractedSymbolArchive& operator=(ExtractedSymbolArchive&& other) noexcept;
  ExtractedSymbolArchive(const ExtractedSymbolArchive&) = delete;
  ExtractedSymbolArchive& operator=(const ExtractedSymbolArchive&) = delete;
  ~ExtractedSymbolArchive();

  // A build-id directory for SymbolLookupRoots::build_id_dirs.
  const std::string& directory() const noexcept { return directory_; }
  const SymbolArchiveExtraction& summary() const noexcept { return summary_; }

 private:
  ExtractedSymbolArchive() = default;
  void start_reaper() noexcept;
  void release() noexcept;
  std::string directory_;
  SymbolArchiveExtraction summary_;
  int reaper_pipe_ = -1;  // closed by the destructor or by the process's death
  int reaper_ = -1;       // the reaper's pid
};

}  // namespace perfscope
