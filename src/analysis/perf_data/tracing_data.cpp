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
