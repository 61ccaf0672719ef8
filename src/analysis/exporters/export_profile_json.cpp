// perfscope's own JSON of the aggregated profile; docs/PROFILE_JSON.md is its schema. The tables
// are the Profile's own (indices stay valid across them); samples are aggregated per (stack,
// thread, event). Addresses are hex strings: kernel addresses exceed the 2^53 that JSON
// numbers hold exactly in JavaScript.
#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analysis/exporters/exporter_common.hpp"
#include "perfscope/analysis/exporters/profile_exporters.hpp"

namespace perfscope {

namespace {

using export_detail::TextSink;

void write_index(TextSink& sink, std::uint32_t index) {
  if (index == no_index) {
    sink.append("null");
  } else {
    sink.format("{}", index);
  }
}

void write_bool(TextSink& sink, bool value) { sink.append(value ? "true" : "false"); }

void write_summary(const ProfileSummary& summary, TextSink& sink) {
  sink.format(
      "\"summary\":{{\"samples\":{},\"samples_read\":{},\"lost\":{},\"lost_samples\":{},"
      "\"throttle\":{},\"unthrottle\":{},\"first_time\":{},\"last_time\":{},\"dwarf_unwinding\":",
      summary.samples, summary.samples_read, summary.lost, summary.lost_samples, summary.throttle,
      summary.unthrottle, summary.first_time, summary.last_time);
  write_bool(sink, summary.dwarf_unwinding);
  if (summary.clockid) {
    sink.format(",\"clockid\":{}", *summary.clockid);
  } else {
    sink.append(",\"clockid\":null");
  }
  if (summary.wall_clock_ns) {
    sink.format(",\"wall_clock_ns\":{}", *summary.wall_clock_ns);
  } else {
    sink.append(",\"wall_clock_ns\":null");
  }
  sink.format(
      ",\"unwinding\":{{\"samples\":{},\"complete\":{},\"no_user_regs\":{},"
      "\"jit_unwinding_info\":{}}}",
      summary.unwinding.samples, summary.unwinding.complete, summary.unwinding.no_user_regs,
      summary.unwinding.jit_unwinding_info);
  const std::pair<std::string_view, const std::string*> texts[] = {
      {"hostname", &summary.hostname},
      {"os_release", &summary.os_release},
      {"arch", &summary.arch},
      {"cpu_description", &summary.cpu_description},
      {"command_line", &summary.command_line}};
  for (const auto& [key, value] : texts) {
    sink.format(",\"{}\":", key);
    sink.json_string(*value);
  }
  for (const auto& [list_key, list] :
       {std::pair{"warnings", &summary.warnings}, std::pair{"notes", &summary.notes}}) {
    sink.format(",\"{}\":[", list_key);
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (i != 0) sink.put(',');
      sink.json_string((*list)[i]);
    }
    sink.put(']');
  }
  sink.put('}');
}

struct JsonSampleKey {
  std::uint32_t stack, thread, event;
  bool operator==(const JsonSampleKey&) const = default;
  bool operator<(const JsonSampleKey& other) const {
    return std::tie(stack, thread, event) < std::tie(other.stack, other.thread, other.event);
  }
};
struct JsonSampleKeyHash {
  std::size_t operator()(const JsonSampleKey& key) const noexcept {
    std::uint64_t h =
        (std::uint64_t{key.stack} << 32) ^ (std::uint64_t{key.thread} << 8) ^ key.event;
    return std::hash<std::uint64_t>{}(h * 0x9e3779b97f4a7c15ull);
  }
};
struct JsonSampleTotals {
  std::uint64_t count = 0, period = 0;
};

void write_events(const Profile& profile, TextSink& sink) {
  for (std::size_t i = 0; i < profile.events.size(); ++i) {
    const ProfileEvent& event = profile.events[i];
    sink.append(i == 0 ? "{\"name\":" : ",{\"name\":");
    sink.json_string(event.name);
    sink.format(",\"samples\":{},\"period\":{},\"has_callchains\":", event.samples, event.period);
    write_bool(sink, event.has_callchains);
    // Off-CPU intervals: the period is blocked ns (the samples of other events are on-CPU).
    if (event.off_cpu) sink.append(",\"off_cpu\":true");
    sink.put('}');
  }
}

void write_dsos(const Profile& profile, TextSink& sink) {
  for (std::size_t i = 0; i < profile.dsos.size(); ++i) {
    const ProfileDso& dso = profile.dsos[i];
    sink.append(i == 0 ? "{\"path\":" : ",{\"path\":");
    sink.json_string(dso.path);
    sink.append(",\"build_id\":");
    sink.json_string(dso.build_id);
    sink.append(",\"kernel\":");
    write_bool(sink, dso.kernel);
    sink.put('}');
  }
}

void write_functions(const Profile& profile, TextSink& sink) {
  for (std::size_t i = 0; i < profile.functions.size(); ++i) {
    const ProfileFunction& function = profile.functions[i];
    sink.append(i == 0 ? "{\"name\":" : ",{\"name\":");
    sink.json_string(function.name);
    sink.append(",\"dso\":");
    write_index(sink, function.dso);
    sink.append(",\"resolved\":");
    write_bool(sink, function.resolved);
    sink.put('}');
  }
}

void write_frames(const Profile& profile, TextSink& sink) {
  for (std::size_t i = 0; i < profile.frames.size(); ++i) {
    const ProfileFrame& frame = profile.frames[i];
    sink.format("{}{{\"function\":{},\"address\":\"{:#x}\",\"dso_address\":\"{:#x}\",",
                i == 0 ? "" : ",", frame.function, frame.address, frame.dso_address);
    sink.append("\"source_file\":");
    sink.json_string(frame.source_file);
    sink.format(",\"line\":{},\"inlined\":", frame.line);
    write_bool(sink, frame.inlined);
    sink.append(",\"kernel\":");
    write_bool(sink, frame.kernel);
    sink.append(",\"mapping\":");
    write_index(sink, frame.mapping);
    sink.put('}');
  }
}

void write_mappings(const Profile& profile, TextSink& sink) {
  for (std::size_t i = 0; i < profile.mappings.size(); ++i) {
    const ProfileMapping& mapping = profile.mappings[i];
    sink.append(i == 0 ? "{\"pid\":" : ",{\"pid\":");
    write_index(sink, mapping.pid);
    sink.append(",\"dso\":");
    write_index(sink, mapping.dso);
    sink.format(",\"start\":\"{:#x}\",\"end\":\"{:#x}\",\"pgoff\":\"{:#x}\"}}", mapping.start,
                mapping.end, mapping.pgoff);
  }
}

void write_stacks(const Profile& profile, TextSink& sink) {
  for (std::size_t i = 0; i < profile.stacks.size(); ++i) {
    sink.append(i == 0 ? "[" : ",[");
    write_index(sink, profile.stacks[i].parent);
    sink.format(",{}]", profile.stacks[i].frame);
  }
}

void write_threads(const Profile& profile, TextSink& sink) {
  for (std::size_t i = 0; i < profile.threads.size(); ++i) {
    const ProfileThread& thread = profile.threads[i];
    sink.format("{}{{\"pid\":{},\"tid\":{},\"comm\":", i == 0 ? "" : ",", thread.pid, thread.tid);
    sink.json_string(thread.comm);
    sink.put('}');
  }
}

// Samples aggregated per (stack, thread, event), in that order.
void write_samples(const Profile& profile, TextSink& sink) {
  std::unordered_map<JsonSampleKey, JsonSampleTotals, JsonSampleKeyHash> totals;
  export_detail::for_each_sample_group(profile, [&](const ProfileSampleGroup& group) {
    JsonSampleTotals& entry = totals[JsonSampleKey{group.stack, group.thread, group.event}];
    entry.count += group.samples;
    entry.period += group.period;
  });
  std::vector<std::pair<JsonSampleKey, JsonSampleTotals>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& [key, entry] = rows[i];
    sink.append(i == 0 ? "[" : ",[");
    write_index(sink, key.stack);
    sink.format(",{},{},{},{}]", key.thread, key.event, entry.count, entry.period);
  }
}

}  // namespace

void write_profile_json(const Profile& profile, std::ostream& out) {
  TextSink sink(out);
  sink.append("{\"format\":\"perfscope-profile\",\"version\":1,");
  write_summary(profile.summary, sink);
  sink.append(",\"events\":[");
  write_events(profile, sink);
  sink.append("],\"dsos\":[");
  write_dsos(profile, sink);
  sink.append("],\"functions\":[");
  write_functions(profile, sink);
  sink.append("],\"frames\":[");
  write_frames(profile, sink);
  sink.append("],\"mappings\":[");
  write_mappings(profile, sink);
  sink.append("],\"stacks\":[");
  write_stacks(profile, sink);
  sink.append("],\"threads\":[");
  write_threads(profile, sink);
  sink.append("],\"samples\":[");
  write_samples(profile, sink);
  sink.append("]}\n");
  sink.finish();
}

}  // namespace perfscope
