#include "perfscope/analysis/perf_data/tracing_data.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>

#include "perfscope/analysis/perf_data/byte_writer.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

// trace-cmd's magic: 0x17 0x08 0x44 then "tracing" (no NUL), then the version string.
constexpr unsigned char tracing_magic[] = {0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
// 0.6 adds saved_cmdlines at the end; perf 3.10 and later read it.
constexpr char tracing_version[] = "0.6";

class Writer : public ByteWriter {
 public:
  // A NUL-terminated string, as perf's read_string() takes it.
  void c_string(const std::string& text) { put(text.c_str(), text.size() + 1); }
  void sized_u64(const std::string& text) {
    u64(text.size());
    put(text.data(), text.size());
  }
};

std::string read_tracefs_file(const std::string& path) {
  auto text = sys::read_text_file(path);
  if (!text) {
    int errnum = errno != 0 ? errno : EIO;
    throw Error(errnum, fmt::format("cannot read {}: {}", path, std::strerror(errnum)),
                "perf needs the tracefs format files of recorded tracepoints; run as root or "
                "make tracefs readable (mount -t tracefs nodev /sys/kernel/tracing).");
  }
  return std::move(*text);
}

std::optional<std::uint64_t> tracepoint_id_at(const std::string& event_dir) {
  auto id = sys::read_integer_file(event_dir + "/id");
  if (!id || *id < 0) return std::nullopt;
  return static_cast<std::uint64_t>(*id);
}

struct TracepointName {
  std::string system;
  std::string event;
};

// "syscalls:sys_enter_getpid" (possibly followed by ":modifiers" or "/terms/") as written.
std::optional<TracepointName> name_of_spec(const std::string& spec) {
  auto colon = spec.find(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  auto end = spec.find_first_of(":/ ", colon + 1);
  std::string event = spec.substr(colon + 1, end == std::string::npos ? end : end - colon - 1);
  if (event.empty()) return std::nullopt;
  return TracepointName{spec.substr(0, colon), event};
}

// Finds tracepoints by id: the event names give them directly in the usual case, and a scan of
// tracefs covers names that do not (renamed events, raw tracepoint:ID specs).
class TracepointLocator {
 public:
  explicit TracepointLocator(std::string events_dir) : events_dir_(std::move(events_dir)) {}

  std::optional<TracepointName> find(std::uint64_t id, const std::string& spec_name) {
    if (auto name = name_of_spec(spec_name)) {
      if (tracepoint_id_at(dir_of(*name)) == id) return name;
    }
    if (!scanned_) scan();
    auto found = by_id_.find(id);
    if (found == by_id_.end()) return std::nullopt;
    return found->second;
  }
  std::string dir_of(const TracepointName& name) const {
    return events_dir_ + "/" + name.system + "/" + name.event;
  }

 private:
  void scan() {
    scanned_ = true;
    for (const auto& system : sys::list_directory(events_dir_)) {
      for (const auto& event : sys::list_directory(events_dir_ + "/" + system)) {
        TracepointName name{system, event};
        if (auto id = tracepoint_id_at(dir_of(name))) by_id_.emplace(*id, name);
      }
    }
  }

  std::string events_dir_;
  bool scanned_ = false;
  std::map<std::uint64_t, TracepointName> by_id_;
};

}  // namespace

std::vector<std::byte> encode_tracing_data(const TracingData& data) {
  Writer out;
  out.put(tracing_magic, sizeof tracing_magic);
  out.c_string(tracing_version);
  out.u8(std::endian::native == std::endian::big ? 1 : 0);
  out.u8(sizeof(long));
  out.u32(static_cast<std::uint32_t>(::sysconf(_SC_PAGESIZE)));
  out.c_string("header_page");
  out.sized_u64(data.header_page);
  out.c_string("header_event");
  out.sized_u64(data.header_event);
  out.u32(0);  // ftrace's own (function tracer) formats: perf record does not use them
  out.u32(static_cast<std::uint32_t>(data.systems.size()));
  for (const auto& system : data.systems) {
    out.c_string(system.name);
    out.u32(static_cast<std::uint32_t>(system.formats.size()));
    for (const auto& format : system.formats) out.sized_u64(format);
  }
  // kallsyms and ftrace_printk: perf resolves kernel symbols from its own sources, and
  // bprint events are not what this data serves.
  out.u32(0);
  out.u32(0);
  out.u64(0);  // saved_cmdlines: comms come from the COMM records
  return std::move(out.bytes);
}

std::optional<TracingData> collect_tracing_data(const std::vector<PerfDataEvent>& events) {
  std::vector<const PerfDataEvent*> tracepoints;
  for (const auto& event : events) {
    if (event.attr.type != static_cast<std::uint32_t>(abi::EventType::tracepoint)) continue;
    bool seen = false;
    for (const auto* other : tracepoints) seen = seen || other->attr.config == event.attr.config;
    if (!seen) tracepoints.push_back(&event);
  }
  if (tracepoints.empty()) return std::nullopt;
  auto root = sys::tracefs_root();
  if (!root) {
    throw Error(ENOENT, "cannot find tracefs for the tracepoints' format files",
                "mount it: mount -t tracefs nodev /sys/kernel/tracing");
  }
  std::string events_dir = *root + "/events";
  TracingData data;
  data.header_page = read_tracefs_file(events_dir + "/header_page");
  data.header_event = read_tracefs_file(events_dir + "/header_event");
  TracepointLocator locator(events_dir);
  for (const auto* event : tracepoints) {
    auto name = locator.find(event->attr.config, event->name);
    if (!name) {
      throw Error(ENOENT,
                  fmt::format("no tracepoint in {} has id {} (event {})", events_dir,
                              event->attr.config, event->name),
                  "tracepoint ids change across boots and module loads; record again.");
    }
    std::string format = read_tracefs_file(locator.dir_of(*name) + "/format");
    TracingSystem* system = nullptr;
    for (auto& existing : data.systems) {
      if (existing.name == name->system) system = &existing;
    }
    if (!system) system = &data.systems.emplace_back(TracingSystem{name->system, {}});
    system->formats.push_back(std::move(format));
  }
  return data;
}

}  // namespace perfscope

namespace perfscope {

namespace {

// Bounds-checked reads in the section's byte order; every read fails once one has.
class TracingReader {
 public:
  TracingReader(std::span<const std::byte> bytes) : bytes_(bytes) {}
  bool ok() const noexcept { return ok_; }
  void set_swapped(bool swapped) noexcept { swapped_ = swapped; }
  std::size_t left() const noexcept { return bytes_.size() - at_; }
  std::string_view c_string() noexcept {
    const char* text = reinterpret_cast<const char*>(bytes_.data() + at_);
    std::size_t length = ok_ ? strnlen(text, left()) : 0;
    if (!ok_ || length == left()) return fail_view();
    at_ += length + 1;
    return {text, length};
  }
  std::string_view bytes(std::uint64_t size) noexcept {
    if (!ok_ || size > left()) return fail_view();
    const char* text = reinterpret_cast<const char*>(bytes_.data() + at_);
    at_ += size;
    return {text, size};
  }
  std::uint64_t u64() noexcept { return number<std::uint64_t>(); }
  std::uint32_t u32() noexcept { return number<std::uint32_t>(); }
  std::uint8_t u8() noexcept { return number<std::uint8_t>(); }

 private:
  std::string_view fail_view() noexcept {
    ok_ = false;
    return {};
  }
  template <class T>
  T number() noexcept {
    T value{};
    if (!ok_ || sizeof value > left()) {
      ok_ = false;
      return value;
    }
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    if (swapped_) {
      if constexpr (sizeof value == 8) value = __builtin_bswap64(value);
      if constexpr (sizeof value == 4) value = __builtin_bswap32(value);
    }
    return value;
  }
  std::span<const std::byte> bytes_;
  std::size_t at_ = 0;
  bool ok_ = true;
  bool swapped_ = false;
};

// "name: sched_switch\nID: 316\n..." -> {316, "<system>:sched_switch"}.
std::optional<TracingDataEvent> event_of_format(std::string_view system, std::string_view format) {
  auto field = [&](std::string_view key) -> std::string_view {
    for (std::size_t at = 0; at < format.size();) {
      std::size_t end = format.find('\n', at);
      if (end == std::string_view::npos) end = format.size();
      std::string_view line = format.substr(at, end - at);
      if (line.starts_with(key)) {
        line.remove_prefix(key.size());
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
          line.remove_prefix(1);
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
        return line;
      }
      at = end + 1;
    }
    return {};
  };
  std::string_view name = field("name:");
  std::string_view id_text = field("ID:");
  if (name.empty() || id_text.empty()) return std::nullopt;
  std::uint64_t id = 0;
  for (char c : id_text) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return TracingDataEvent{id, fmt::format("{}:{}", system, name)};
}

}  // namespace

std::vector<TracingDataFormat> tracing_data_formats(std::span<const std::byte> section,
                                                    std::string* error) {
  std::vector<TracingDataFormat> formats;
  TracingReader in(section);
  auto failed = [&](const char* what) {
    if (error) *error = what;
    return formats;
  };
  std::string_view magic = in.bytes(sizeof tracing_magic);
  if (!in.ok() || std::memcmp(magic.data(), tracing_magic, sizeof tracing_magic) != 0) {
    return failed("the tracing data does not start with trace-cmd's magic");
  }
  in.c_string();  // the version: 0.5 and 0.6 differ after the formats only (saved_cmdlines)
  bool big_endian = in.u8() != 0;
  in.u8();  // the size of a long
  in.set_swapped(big_endian != (std::endian::native == std::endian::big));
  in.u32();  // the page size
  for (const char* header : {"header_page", "header_event"}) {
    if (in.c_string() != header) return failed("the tracing data lacks its header files");
    in.bytes(in.u64());
  }
  std::uint32_t ftrace_formats = in.u32();
  for (std::uint32_t i = 0; i < ftrace_formats && in.ok(); ++i) {
    std::string_view format = in.bytes(in.u64());
    if (in.ok()) formats.push_back({"ftrace", format});
  }
  std::uint32_t systems = in.u32();
  for (std::uint32_t i = 0; i < systems && in.ok(); ++i) {
    std::string_view system = in.c_string();
    std::uint32_t count = in.u32();
    for (std::uint32_t j = 0; j < count && in.ok(); ++j) {
      std::string_view format = in.bytes(in.u64());
      if (in.ok()) formats.push_back({std::string(system), format});
    }
  }
  if (!in.ok()) return failed("the tracing data ends inside its event formats");
  return formats;
}

std::vector<TracingDataEvent> tracing_data_events(std::span<const std::byte> section,
                                                  std::string* error) {
  std::vector<TracingDataEvent> events;
  for (const auto& format : tracing_data_formats(section, error)) {
    if (auto event = event_of_format(format.system, format.text)) events.push_back(*event);
  }
  return events;
}

}  // namespace perfscope
