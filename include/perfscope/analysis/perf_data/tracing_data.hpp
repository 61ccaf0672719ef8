// perf.data's tracing data (the TRACING_DATA feature, in the layout trace-cmd calls version
// 0.6): the tracefs format files of the recorded tracepoints. Linux perf builds its tracepoint
// decoder from it alone, and refuses a file with tracepoint events but no tracing data.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_writer.hpp"

namespace perfscope {

struct TracingSystem {
  std::string name;                  // "syscalls"
  std::vector<std::string> formats;  // events/<system>/<event>/format of each recorded event
};

struct TracingData {
  std::string header_page;   // events/header_page
  std::string header_event;  // events/header_event
  std::vector<TracingSystem> systems;
};

// The bytes of the TRACING_DATA section, for this machine's endianness, long and page size.
std::vector<std::byte> encode_tracing_data(const TracingData& data);

// The tracing data of the tracepoint events among `events` (found by their attr.config ids),
// read from tracefs; nullopt when none is a tracepoint. Throws perfscope::Error when tracefs or a
// format file cannot be read.
std::optional<TracingData> collect_tracing_data(const std::vector<PerfDataEvent>& events);

}  // namespace perfscope

namespace perfscope {

// A tracepoint a TRACING_DATA section describes: its id and "system:name".
struct TracingDataEvent {
  std::uint64_t id = 0;
  std::string name;
};

// One event format of a TRACING_DATA section: its system ("sched", "ftrace") and the text of its
// events/<system>/<event>/format file, which points into the section.
struct TracingDataFormat {
  std::string system;
  std::string_view text;
};

// Every event format of a TRACING_DATA section, as tracing_data_events reads them (the same
// versions, byte orders and partial reads); TracepointCatalog::load_text decodes each.
std::vector<TracingDataFormat> tracing_data_formats(std::span<const std::byte> section,
                                                    std::string* error = nullptr);

// Reads the event formats out of a TRACING_DATA section (perf's layout, versions 0.5 and 0.6):
// each format's ID and name under its system. Returns what it could read before a malformed
// part (a section cut short still names the events before the cut); `error` (if given) says
// what was wrong. Files of other byte orders than this machine's are read too.
std::vector<TracingDataEvent> tracing_data_events(std::span<const std::byte> section,
                                                  std::string* error = nullptr);

}  // namespace perfscope
