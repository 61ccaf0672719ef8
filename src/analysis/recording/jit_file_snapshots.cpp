#include "perfscope/analysis/recording/jit_file_snapshots.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/symbols/jitdump.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

void JitFileSnapshots::observe(const RecordView& view, const ParseConfig& config) {
  auto type = static_cast<abi::RecordType>(view.header.type);
  if (type != abi::RecordType::comm && type != abi::RecordType::mmap &&
      type != abi::RecordType::mmap2 && type != abi::RecordType::exit) {
    return;
  }
  Record record;
  DecodeError error;
  if (!decode_record(view, config, record, error)) return;
  if (const auto* comm = std::get_if<CommRecord>(&record)) {
    running_.insert(comm->pid);
  } else if (const auto* mmap = std::get_if<MmapRecord>(&record)) {
    running_.insert(mmap->pid);
    if (is_jitdump_path(mmap->filename)) jitdumps_[mmap->pid].emplace(mmap->filename);
  } else if (const auto* mmap2 = std::get_if<Mmap2Record>(&record)) {
    running_.insert(mmap2->pid);
    if (is_jitdump_path(mmap2->filename)) jitdumps_[mmap2->pid].emplace(mmap2->filename);
  } else if (const auto* task = std::get_if<TaskRecord>(&record)) {
    // The process's last thread: its files are complete now, and a later process of the same
    // pid may overwrite them.
    if (task->pid == task->tid && running_.erase(task->pid) != 0) snapshot(task->pid);
  }
}

std::vector<EmbeddedFile> JitFileSnapshots::finish() {
  for (std::uint32_t pid : running_) snapshot(pid);
  running_.clear();
  return std::move(files_);
}

void JitFileSnapshots::snapshot(std::uint32_t pid) {
  copy(perf_map_embedded_kind, fmt::format("{}/perf-{}.map", perf_map_dir_, pid), false);
  auto dumps = jitdumps_.find(pid);
  if (dumps == jitdumps_.end()) return;
  for (const std::string& path : dumps->second) copy(jitdump_embedded_kind, path, true);
  jitdumps_.erase(dumps);
}

void JitFileSnapshots::copy(std::string_view kind, const std::string& path, bool must_exist) {
  auto text = sys::read_regular_file(path);
  if (!text) {
    if (must_exist || errno != ENOENT) {
      warnings_.push_back(
          fmt::format("{} was not carried into the recording ({}): a report "
                      "needs it where it is now",
                      path, std::strerror(errno)));
    }
    return;
  }
  if (carried_bytes_ + text->size() > max_bytes_) {
    warnings_.push_back(fmt::format(
        "{} ({} MB) was not carried into the recording: the JIT files carried already reach "
        "{} MB; a report needs it where it is now",
        path, text->size() >> 20, max_bytes_ >> 20));
    return;
  }
  carried_bytes_ += text->size();
  EmbeddedFile file;
  file.kind = std::string(kind);
  file.name = path;
  const auto* begin = reinterpret_cast<const std::byte*>(text->data());
  file.bytes.assign(begin, begin + text->size());
  files_.push_back(std::move(file));
}

}  // namespace perfscope
