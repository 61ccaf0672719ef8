#include "perfscope/analysis/symbols/jitdump.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "analysis/path_names.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/memory_map.hpp"

namespace perfscope {

namespace {

// Reads the dump's integers in its byte order.
class Fields {
 public:
  Fields(std::span<const std::uint8_t> bytes, bool swapped) : bytes_(bytes), swapped_(swapped) {}

  bool has(std::size_t at, std::size_t size) const noexcept {
    return at <= bytes_.size() && size <= bytes_.size() - at;
  }
  std::uint32_t u32(std::size_t at) const noexcept {
    std::uint32_t value;
    std::memcpy(&value, bytes_.data() + at, sizeof value);
    return swapped_ ? __builtin_bswap32(value) : value;
  }
  std::uint64_t u64(std::size_t at) const noexcept {
    std::uint64_t value;
    std::memcpy(&value, bytes_.data() + at, sizeof value);
    return swapped_ ? __builtin_bswap64(value) : value;
  }
  // The NUL-terminated string at `at`, ending before `end`; false when it has no NUL there.
  bool string(std::size_t at, std::size_t end, std::string_view& out) const noexcept {
    if (at >= end) return false;
    const void* nul = std::memchr(bytes_.data() + at, 0, end - at);
    if (!nul) return false;
    out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + at),
                           static_cast<const std::uint8_t*>(nul) - (bytes_.data() + at));
    return true;
  }
  std::span<const std::uint8_t> span(std::size_t at, std::size_t size) const noexcept {
    return bytes_.subspan(at, size);
  }

 private:
  std::span<const std::uint8_t> bytes_;
  bool swapped_;
};

std::string_view jitdump_record_name(std::uint32_t id) {
  switch (id) {
    case jitdump::code_load: return "CODE_LOAD";
    case jitdump::code_move: return "CODE_MOVE";
    case jitdump::code_debug_info: return "CODE_DEBUG_INFO";
    case jitdump::code_close: return "CODE_CLOSE";
    case jitdump::code_unwinding_info: return "CODE_UNWINDING_INFO";
    default: return "an unknown record";
  }
}

[[noreturn]] void refuse(std::string_view name, std::string summary) {
  throw Error(EINVAL, fmt::format("{} is not a jitdump: {}", name, summary),
              "a jitdump is the jit-PID.dump a JIT runtime writes for perf (node --perf-prof, "
              "a JVM perf agent, python -X perf_jit); perf maps (perf-PID.map) are text and are "
              "read as such");
}

}  // namespace

bool is_jitdump_path(std::string_view path) noexcept {
  return !detail::pid_in_file_name(path, "jit-", ".dump").empty();
}

const JitLine* JitCode::line_of(std::uint64_t address) const noexcept {
  auto after = std::upper_bound(
      lines.begin(), lines.end(), address,
      [](std::uint64_t value, const JitLine& line) { return value < line.address; });
  return after == lines.begin() ? nullptr : &*(after - 1);
}

Jitdump Jitdump::parse(std::vector<std::uint8_t> bytes, std::string_view name) {
  auto owned = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
  std::shared_ptr<const std::uint8_t> storage(owned, owned->data());
  return parse_bytes(std::move(storage), owned->size(), name);
}

Jitdump Jitdump::map_file(const std::string& path) {
  auto mapping = std::make_shared<sys::MemoryMap>();
  if (int error = mapping->map_file(path.c_str()); error != 0) {
    throw Error(-error, error == -ENODEV ? fmt::format("{} is not a regular file", path)
                                         : fmt::format("{} cannot be mapped", path));
  }
  std::shared_ptr<const std::uint8_t> storage(mapping,
                                              static_cast<const std::uint8_t*>(mapping->data()));
  return parse_bytes(std::move(storage), mapping->size(), path);
}

Jitdump Jitdump::parse_bytes(std::shared_ptr<const std::uint8_t> storage, std::size_t byte_count,
                             std::string_view name) {
  Jitdump dump;
  dump.storage_ = std::move(storage);
  dump.size_ = byte_count;
  const std::span<const std::uint8_t> data(dump.storage_.get(), dump.size_);
  if (data.size() < 4) {
    refuse(name, fmt::format("it has {} bytes, fewer than a magic number", data.size()));
  }
  std::uint32_t magic;
  std::memcpy(&magic, data.data(), sizeof magic);
  if (magic == __builtin_bswap32(jitdump::magic)) {
    dump.swapped_ = true;
  } else if (magic != jitdump::magic) {
    refuse(name, fmt::format("its magic number is 0x{:08x}, not \"JiTD\" (0x{:08x}) in either "
                             "byte order",
                             magic, jitdump::magic));
  }
  const Fields fields(data, dump.swapped_);
  if (!fields.has(0, jitdump::header_size)) {
    refuse(name, fmt::format("its header is cut short at {} bytes of {}", data.size(),
                             jitdump::header_size));
  }
  dump.version_ = fields.u32(4);
  const std::uint32_t header_size = fields.u32(8);
  dump.elf_machine_ = fields.u32(12);
  dump.pid_ = fields.u32(20);
  dump.header_timestamp_ = fields.u64(24);
  dump.flags_ = fields.u64(32);
  if (dump.version_ == 0) refuse(name, "its version is 0");
  if (header_size < jitdump::header_size || header_size > data.size()) {
    refuse(name, fmt::format("its header says it is {} bytes long (at least {}, at most the "
                             "file's {})",
                             header_size, jitdump::header_size, data.size()));
  }
  if (dump.version_ > 1) {
    dump.warnings_.push_back(
        fmt::format("{} is jitdump version {}; read as version 1, whose records it extends", name,
                    dump.version_));
  }

  // Debug and unwinding information come before the load of the code they describe.
  std::map<std::uint64_t, std::vector<JitLine>> pending_lines;  // by code address
  std::span<const std::uint8_t> pending_unwinding;
  std::uint64_t pending_hdr_size = 0, pending_mapped_size = 0;
  std::size_t unknown = 0;
  std::size_t at = header_size;
  while (at < data.size()) {
    if (!fields.has(at, jitdump::record_header_size)) {
      dump.warnings_.push_back(fmt::format(
          "{} ends inside a record header at offset {} ({} of {} bytes): the runtime was still "
          "writing it; the {} complete records before it are read",
          name, at, data.size() - at, jitdump::record_header_size, dump.records_));
      break;
    }
    const std::uint32_t id = fields.u32(at);
    const std::uint32_t size = fields.u32(at + 4);
    const std::uint64_t timestamp = fields.u64(at + 8);
    if (size < jitdump::record_header_size) {
      dump.warnings_.push_back(fmt::format(
          "{}: the record at offset {} says it is {} bytes long, less than its own header; "
          "reading stops there ({} records read)",
          name, at, size, dump.records_));
      break;
    }
    if (!fields.has(at, size)) {
      dump.warnings_.push_back(fmt::format(
          "{} ends inside its last record ({} at offset {}: {} of its {} bytes): the runtime "
          "was still writing it; the {} complete records before it are read",
          name, jitdump_record_name(id), at, data.size() - at, size, dump.records_));
      break;
    }
    const std::size_t body = at + jitdump::record_header_size;
    const std::size_t end = at + size;
    auto malformed = [&](std::string_view what) {
      dump.warnings_.push_back(fmt::format("{}: the {} record at offset {} {}; left out", name,
                                           jitdump_record_name(id), at, what));
    };
    switch (id) {
      case jitdump::code_load: {
        if (!fields.has(body, 40) || body + 40 > end) {
          malformed("is too short for its fields");
          break;
        }
        JitCode code;
        code.pid = fields.u32(body);
        code.tid = fields.u32(body + 4);
        code.start = fields.u64(body + 16);
        code.size = fields.u64(body + 24);
        code.code_index = fields.u64(body + 32);
        code.from = timestamp;
        if (!fields.string(body + 40, end, code.name)) {
          malformed("has no NUL-terminated name");
          break;
        }
        std::size_t code_at = body + 40 + code.name.size() + 1;
        if (code.size <= end - code_at) code.bytes = fields.span(code_at, code.size);
        if (auto lines = pending_lines.find(code.start); lines != pending_lines.end()) {
          code.lines = std::move(lines->second);
          pending_lines.erase(lines);
        }
        code.unwinding = pending_unwinding;
        code.eh_frame_hdr_size = pending_hdr_size;
        code.unwinding_mapped_size = pending_mapped_size;
        pending_unwinding = {};
        pending_hdr_size = pending_mapped_size = 0;
        dump.code_.push_back(std::move(code));
        break;
      }
      case jitdump::code_move: {
        if (!fields.has(body, 48) || body + 48 > end) {
          malformed("is too short for its fields");
          break;
        }
        const std::uint64_t old_address = fields.u64(body + 16);
        const std::uint64_t new_address = fields.u64(body + 24);
        const std::uint64_t index = fields.u64(body + 40);
        // The code moved is the latest load of that index at the old address.
        auto moved = std::find_if(dump.code_.rbegin(), dump.code_.rend(), [&](const JitCode& c) {
          return c.code_index == index && c.start == old_address && c.until == JitCode::forever;
        });
        if (moved == dump.code_.rend()) {
          malformed(fmt::format("moves code index {} from 0x{:x}, which no load put there", index,
                                old_address));
          break;
        }
        moved->until = timestamp;
        JitCode copy = *moved;
        copy.start = new_address;
        copy.size = fields.u64(body + 32);
        copy.from = timestamp;
        copy.until = JitCode::forever;
        for (JitLine& line : copy.lines) line.address = line.address - old_address + new_address;
        dump.code_.push_back(std::move(copy));
        break;
      }
      case jitdump::code_debug_info: {
        if (!fields.has(body, 16) || body + 16 > end) {
          malformed("is too short for its fields");
          break;
        }
        const std::uint64_t address = fields.u64(body);
        const std::uint64_t count = fields.u64(body + 8);
        std::vector<JitLine> lines;
        std::size_t entry = body + 16;
        std::string_view previous_file;
        bool complete = true;
        for (std::uint64_t i = 0; i < count; ++i) {
          JitLine line;
          if (entry + 16 > end) {
            complete = false;
            break;
          }
          line.address = fields.u64(entry);
          line.line = fields.u32(entry + 8);
          line.discriminator = fields.u32(entry + 12);
          std::string_view file;
          if (!fields.string(entry + 16, end, file)) {
            complete = false;
            break;
          }
          entry += 16 + file.size() + 1;
          // "\xff" repeats the previous entry's file name.
          line.file = file == "\xff" ? previous_file : file;
          previous_file = line.file;
          lines.push_back(line);
        }
        if (!complete) {
          malformed(fmt::format("ends within its entry {} of {}", lines.size(), count));
        }
        std::sort(lines.begin(), lines.end(),
                  [](const JitLine& a, const JitLine& b) { return a.address < b.address; });
        pending_lines[address] = std::move(lines);
        break;
      }
      case jitdump::code_unwinding_info: {
        if (!fields.has(body, 24) || body + 24 > end) {
          malformed("is too short for its fields");
          break;
        }
        const std::uint64_t unwinding_size = fields.u64(body);
        pending_hdr_size = fields.u64(body + 8);
        pending_mapped_size = fields.u64(body + 16);
        if (unwinding_size > end - (body + 24) || pending_hdr_size > unwinding_size) {
          malformed("holds fewer bytes than its sizes say");
          pending_hdr_size = pending_mapped_size = 0;
          break;
        }
        pending_unwinding = fields.span(body + 24, unwinding_size);
        break;
      }
      case jitdump::code_close:
        for (JitCode& code : dump.code_) code.until = std::min(code.until, timestamp);
        break;
      default: ++unknown; break;
    }
    ++dump.records_;
    at = end;
  }
  if (unknown != 0) {
    dump.warnings_.push_back(fmt::format(
        "{}: {} records of types this reader does not know were skipped", name, unknown));
  }
  std::stable_sort(dump.code_.begin(), dump.code_.end(), [](const JitCode& a, const JitCode& b) {
    return a.start != b.start ? a.start < b.start : a.from < b.from;
  });
  // Where pieces of code overlap (by start: each against the furthest end before it).
  std::uint64_t reach = 0;
  for (const JitCode& code : dump.code_) {
    dump.largest_size_ = std::max(dump.largest_size_, code.size);
    const std::uint64_t end = code.start + code.size;
    if (code.size != 0 && code.start < reach) {
      const std::uint64_t overlap_end = std::min(end, reach);
      if (!dump.contested_.empty() && code.start <= dump.contested_.back().second) {
        dump.contested_.back().second = std::max(dump.contested_.back().second, overlap_end);
      } else {
        dump.contested_.emplace_back(code.start, overlap_end);
      }
    }
    reach = std::max(reach, end);
  }
  return dump;
}

bool Jitdump::contested(std::uint64_t address) const noexcept {
  auto after = std::upper_bound(
      contested_.begin(), contested_.end(), address,
      [](std::uint64_t value, const std::pair<std::uint64_t, std::uint64_t>& range) {
        return value < range.first;
      });
  return after != contested_.begin() && address < (after - 1)->second;
}

const JitCode* Jitdump::find(std::uint64_t address, std::uint64_t time) const noexcept {
  auto after =
      std::upper_bound(code_.begin(), code_.end(), address,
                       [](std::uint64_t value, const JitCode& code) { return value < code.start; });
  const JitCode* at_time = nullptr;
  const JitCode* latest = nullptr;
  const JitCode* next = nullptr;  // the first to come after `time`
  for (auto it = after; it != code_.begin();) {
    --it;
    if (address - it->start >= largest_size_) break;
    if (!it->covers(address)) continue;
    if (!latest || it->from > latest->from) latest = &*it;
    if (time == 0) continue;
    if (it->from <= time && time < it->until && (!at_time || it->from > at_time->from)) {
      at_time = &*it;
    }
    if (it->from > time && (!next || it->from < next->from)) next = &*it;
  }
  if (time == 0) return latest;
  // A sample a little before the load that put code there (the runtime writes the record
  // after the code): the code that came next; else the last that was there.
  return at_time ? at_time : next ? next : latest;
}

}  // namespace perfscope
