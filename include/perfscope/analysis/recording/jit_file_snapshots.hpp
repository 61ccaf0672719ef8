// JitFileSnapshots: copies of the JIT symbol files a recording's processes wrote (perf maps,
// /tmp/perf-PID.map, and the jitdumps they mapped, jit-PID.dump), taken when each process exits
// and at the end of the recording, to be carried inside the perf.data (perfscope's embedded
// files): a report made later, after the runtime deleted or overwrote them, or on another machine,
// names the same JIT frames. perf ignores them.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

class JitFileSnapshots {
 public:
  explicit JitFileSnapshots(std::string perf_map_dir = "/tmp", std::uint64_t max_bytes = 1ULL << 30)
      : perf_map_dir_(std::move(perf_map_dir)), max_bytes_(max_bytes) {}

  // COMM, MMAP, MMAP2 and EXIT records: which processes there are, which jitdumps they mapped,
  // and when they end (their files are copied then).
  void observe(const RecordView& view, const ParseConfig& config);
  // Copies the files of the processes still running; returns every copy taken.
  std::vector<EmbeddedFile> finish();
  // What could not be carried (too large, unreadable), once each.
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }

 private:
  void snapshot(std::uint32_t pid);
  void copy(std::string_view kind, const std::string& path, bool must_exist);

  std::string perf_map_dir_;
  std::uint64_t max_bytes_;
  std::uint64_t carried_bytes_ = 0;
  std::set<std::uint32_t> running_;
  std::map<std::uint32_t, std::set<std::string>> jitdumps_;  // by pid
  std::vector<EmbeddedFile> files_;
  std::vector<std::string> warnings_;
};

}  // namespace perfscope
