// Jitdump: a jit-PID.dump file as JIT compilers write it for perf (V8's --perf-prof, the JVM
// agents, Python 3.13's -X perf_jit, .NET): a header, then CODE_LOAD, CODE_MOVE, CODE_DEBUG_INFO,
// CODE_UNWINDING_INFO and CODE_CLOSE records (tools/perf/Documentation/jitdump-specification.txt).
// Read whole, in either byte order, into the code regions it describes and when each held its
// address, so that a sample names the code that was there when it was taken.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perfscope/export.hpp"

namespace perfscope {

namespace jitdump {
inline constexpr std::uint32_t magic = 0x4A695444;  // "JiTD" read as a native integer
inline constexpr std::uint32_t code_load = 0, code_move = 1, code_debug_info = 2, code_close = 3,
                               code_unwinding_info = 4;
inline constexpr std::uint64_t flag_arch_timestamp = 1;  // timestamps are TSC, not a clock
inline constexpr std::size_t header_size = 40, record_header_size = 16;
}  // namespace jitdump

// A source line of JIT code (CODE_DEBUG_INFO): from `address` on, until the next entry's.
struct JitLine {
  std::uint64_t address = 0;
  std::uint32_t line = 0, discriminator = 0;
  std::string_view file;
};

// One piece of code, as loaded (and perhaps moved) by the runtime.
struct JitCode {
  static constexpr std::uint64_t forever = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t start = 0, size = 0;
  // When it held [start, start + size): from its load (or move) record's timestamp until the
  // code moved away, the dump closed, or forever.
  std::uint64_t from = 0, until = forever;
  std::uint64_t code_index = 0;
  std::uint32_t pid = 0, tid = 0;
  std::string_view name;
  std::span<const std::uint8_t> bytes;  // the machine code as loaded
  std::vector<JitLine> lines;           // by address
  // CODE_UNWINDING_INFO that came before the load: .eh_frame then its .eh_frame_hdr (the last
  // eh_frame_hdr_size bytes), as the runtime would map them after the code.
  std::span<const std::uint8_t> unwinding;
  std::uint64_t eh_frame_hdr_size = 0, unwinding_mapped_size = 0;

  bool covers(std::uint64_t address) const noexcept {
    return address >= start && address - start < size;
  }
  // The source line of `address`, or null.
  const JitLine* line_of(std::uint64_t address) const noexcept;
};

class PERFSCOPE_EXPORT Jitdump {
 public:
  // Parses `bytes` (a whole jit-PID.dump; `name` is for messages). Throws perfscope::Error
  // (EINVAL) with what is wrong when the bytes are not a jitdump (magic, version, header size).
  // A last record cut short (the runtime was still writing) is left out with a warning, as is
  // a record of an unknown type; a record whose size runs past the file ends the reading there.
  static Jitdump parse(std::vector<std::uint8_t> bytes, std::string_view name);
  // parse() of the file at `path`, mapped rather than read: only the pages the records' headers
  // and names lie in are touched (the code bytes, most of a dump, are read by annotate alone).
  // Throws perfscope::Error (errno) when it cannot be opened or is not a regular file.
  static Jitdump map_file(const std::string& path);

  std::uint32_t pid() const noexcept { return pid_; }
  std::uint32_t elf_machine() const noexcept { return elf_machine_; }
  std::uint32_t version() const noexcept { return version_; }
  // The timestamps are the CPU's time-stamp counter, not a clock the recording can share.
  bool arch_timestamps() const noexcept { return (flags_ & jitdump::flag_arch_timestamp) != 0; }
  bool byte_swapped() const noexcept { return swapped_; }
  std::uint64_t header_timestamp() const noexcept { return header_timestamp_; }
  std::size_t records() const noexcept { return records_; }
  std::size_t size() const noexcept { return size_; }  // bytes read
  const std::vector<JitCode>& code() const noexcept { return code_; }
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }

  // The code at `address` at `time`: the one loaded last at or before `time` among those that
  // covered it then; with none, the first loaded there after `time` (a sample taken just before
  // its load record was written), else the last that was there. With `time` 0 (clocks that
  // cannot be compared), the code loaded last that ever covered it. Null when none did.
  const JitCode* find(std::uint64_t address, std::uint64_t time) const noexcept;
  // Whether more than one piece of code ever covered `address` (reused or moved into): only
  // then does its name depend on time.
  bool contested(std::uint64_t address) const noexcept;

 private:
  static Jitdump parse_bytes(std::shared_ptr<const std::uint8_t> storage, std::size_t byte_count,
                             std::string_view name);
  std::shared_ptr<const std::uint8_t> storage_;  // the bytes: owned, or a mapping
  std::size_t size_ = 0;
  std::vector<JitCode> code_;  // by start, then load time
  std::uint64_t largest_size_ = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> contested_;  // [start, end), sorted
  std::vector<std::string> warnings_;
  std::uint32_t pid_ = 0, elf_machine_ = 0, version_ = 0;
  std::uint64_t flags_ = 0, header_timestamp_ = 0;
  std::size_t records_ = 0;
  bool swapped_ = false;
};

// Whether a path names a jitdump: "jit-PID.dump" with a numeric PID, in any directory.
PERFSCOPE_EXPORT bool is_jitdump_path(std::string_view path) noexcept;

}  // namespace perfscope
