// PerfDataSink: a recording written to a perf.data file. While recording it does only what cannot
// wait: each record is copied into the writer's buffer (written out in large writes, a round at a
// time), the records that change mappings are replayed, and a sample's IP is looked up (through
// a small cache of the mappings hit last) only to note which files the samples hit, for the
// BUILD_ID section.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/recording/jit_file_snapshots.hpp"
#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"

namespace perfscope {

// BUILD_ID entries for `files` (TaskMaps::hit_files or mapped_files): each file's build id read
// from the file itself, the kernel's from /sys/kernel/notes; files without one are left out.
std::vector<BuildIdEntry> build_id_entries(const std::vector<TaskMaps::Hit>& files);

class PerfDataSink final : public RecordingSink {
 public:
  explicit PerfDataSink(PerfDataWriter& writer) : writer_(writer) {}
  void record(const RecordView& view, std::size_t event, const ParseConfig& config) override;
  void end_round() override { writer_.end_round(); }
  // An AUXTRACE record with the data, as perf record writes it.
  void aux_data(const SessionAuxData& data) override;

  // The files the samples hit, or (`every_mapped_file`, perf's --buildid-all) every file a
  // mapping named, with their build ids where one can be read (the kernel's from
  // /sys/kernel/notes).
  std::vector<BuildIdEntry> build_ids(bool every_mapped_file = false) const;
  // Copies of the perf maps and jitdumps of the recorded processes (JitFileSnapshots), the ones
  // of processes still running taken now.
  std::vector<EmbeddedFile> jit_files() { return jit_files_.finish(); }
  const std::vector<std::string>& jit_file_warnings() const noexcept {
    return jit_files_.warnings();
  }
  // The first and last sample times (both 0 without samples).
  std::uint64_t first_time() const noexcept { return first_time_; }
  std::uint64_t last_time() const noexcept { return last_time_; }

 private:
  void note_hit(const RecordView& view, const ParseConfig& config) noexcept;

  PerfDataWriter& writer_;
  TaskMaps maps_;
  JitFileSnapshots jit_files_;
  std::uint64_t first_time_ = 0, last_time_ = 0;
  // The mapping a sample of each of a few processes hit last: most samples hit one of these,
  // whose file is noted already. Cleared when mappings change.
  struct LastHit {
    std::uint32_t pid = 0;
    std::uint16_t cpumode = 0;
    std::uint64_t start = 1, end = 0;  // empty
  };
  static constexpr std::size_t last_hit_slots = 64;
  std::array<LastHit, last_hit_slots> last_hits_{};
};

}  // namespace perfscope
