// The text `perfscope script` writes: a buffered stdout, and the chunks of a walk fanned out over
// several workers written back in the chunks' order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

namespace perfscope::cli {

// Buffered stdout: a flat buffer written in 1 MiB blocks. A writer asks reserve() for room for
// what it is about to write, writes through the returned cursor without checks, and commits
// the cursor; a line's fields thus cost one bounds check, not one per character.
class Output {
 public:
  Output() : buffer_(block) {}
  char* reserve(std::size_t bytes) {
    if (buffer_.size() - used_ < bytes) {
      if (collecting_) {
        buffer_.resize(std::max(buffer_.size() * 2, used_ + bytes));
      } else {
        flush();
        if (buffer_.size() < bytes) buffer_.resize(bytes);
      }
    }
    return buffer_.data() + used_;
  }
  // A worker's output: kept (growing) until taken, never written here.
  void collect() { collecting_ = true; }
  std::vector<char> take() {
    std::vector<char> taken(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(used_));
    used_ = 0;
    return taken;
  }
  void commit(const char* end) { used_ = static_cast<std::size_t>(end - buffer_.data()); }
  void append(std::string_view text) {
    char* at = reserve(text.size());
    std::memcpy(at, text.data(), text.size());
    commit(at + text.size());
  }
  void flush() {
    std::fwrite(buffer_.data(), 1, used_, stdout);
    used_ = 0;
  }

 private:
  static constexpr std::size_t block = 1 << 20;
  std::vector<char> buffer_;
  std::size_t used_ = 0;
  bool collecting_ = false;
};

// The text of the walk's chunks, made by several workers, written to stdout in the chunks'
// order: each chunk's text waits until those before it are written.
class ChunkWriter {
 public:
  void write(std::uint64_t chunk, std::vector<char> text) {
    std::lock_guard lock(mutex_);
    waiting_.emplace(chunk, std::move(text));
    for (auto next = waiting_.find(next_); next != waiting_.end(); next = waiting_.find(next_)) {
      std::fwrite(next->second.data(), 1, next->second.size(), stdout);
      waiting_.erase(next);
      ++next_;
    }
  }

 private:
  std::mutex mutex_;
  std::map<std::uint64_t, std::vector<char>> waiting_;
  std::uint64_t next_ = 0;
};

}  // namespace perfscope::cli
