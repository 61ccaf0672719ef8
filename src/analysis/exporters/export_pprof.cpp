// pprof's profile.proto, gzipped, as `go tool pprof` reads it. Sample values: the number of
// samples, then one column per event with the sum of its sample periods ("cpu-clock" in
// nanoseconds, other events in counts), aggregated per stack and thread; labels name the
// thread (comm, pid, tid) and an off-CPU sample's state. With off-CPU samples the time columns
// are named cpu, off_cpu (and wall), in nanoseconds. One location per sampled address with the
// calls inlined there as its extra lines (innermost first). Mappings are the recording's own (the
// Profile's mappings: start, limit and file offset as the MMAP records had them, one per distinct
// range whatever process mapped it); a frame the recording mapped nothing for gets one per DSO and
// load bias (address minus the DSO-relative address) spanning the addresses sampled there. With the
// recording's CLOCK_DATA, time_nanos is the wall-clock time of the first sample.
#include <zlib.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/exporters/exporter_common.hpp"
#include "perfscope/analysis/exporters/profile_exporters.hpp"
#include "perfscope/version.hpp"
#include "profile.pb.h"

namespace perfscope {

namespace {

class StringTable {
 public:
  explicit StringTable(perftools::profiles::Profile& pb) : pb_(pb) { index(""); }
  // proto3 strings must be UTF-8 (strict decoders such as Go's reject the profile otherwise):
  // names are bytes the recorded processes chose, so invalid ones become U+FFFD.
  std::int64_t index(std::string_view text) {
    if (!is_valid_utf8(text)) return index(valid_utf8(text));
    auto [it, added] = indices_.try_emplace(std::string(text), pb_.string_table_size());
    if (added) pb_.add_string_table(it->first);
    return it->second;
  }

 private:
  perftools::profiles::Profile& pb_;
  std::unordered_map<std::string, std::int64_t> indices_;
};

// A recorded range (dso, start, limit, offset), or a made-up one (dso, bias, 0, 0) for frames
// without: the same four words key both.
struct MappingKey {
  std::uint32_t dso;
  std::uint64_t start, limit, offset;
  bool operator==(const MappingKey&) const = default;
};
struct MappingKeyHash {
  std::size_t operator()(const MappingKey& key) const noexcept {
    std::uint64_t h = key.start * 0x9e3779b97f4a7c15ull ^ key.dso;
    h = (h ^ key.limit) * 0x9e3779b97f4a7c15ull ^ key.offset;
    return std::hash<std::uint64_t>{}(h);
  }
};

struct MappingRange {
  std::uint32_t dso = no_index;
  std::uint64_t start = 0, limit = 0, offset = 0;
  // Made up: the bias, and the lowest and highest address seen.
  bool recorded = true;
  std::uint64_t bias = 0;
  std::uint64_t low = ~std::uint64_t{0}, high = 0;
};

void gzip_to(const std::string& bytes, std::ostream& out) {
  z_stream stream{};
  // 15 window bits + 16: a gzip header and trailer rather than a zlib one.
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::runtime_error("zlib could not start compressing the pprof profile");
  }
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  std::string chunk(1 << 16, '\0');
  int status = Z_OK;
  do {
    stream.next_out = reinterpret_cast<Bytef*>(chunk.data());
    stream.avail_out = static_cast<uInt>(chunk.size());
    status = deflate(&stream, Z_FINISH);
    if (status == Z_STREAM_ERROR) break;
    out.write(chunk.data(), static_cast<std::streamsize>(chunk.size() - stream.avail_out));
  } while (status != Z_STREAM_END && out);
  deflateEnd(&stream);
  if (status != Z_STREAM_END) {
    if (!out) {
      throw std::runtime_error(
          "writing the exported profile failed (disk full, or the output closed?)");
    }
    throw std::runtime_error("zlib failed compressing the pprof profile");
  }
  if (!out.flush()) {
    throw std::runtime_error(
        "writing the exported profile failed (disk full, or the output closed?)");
  }
}

// An event's sample type: its name, or with off-CPU samples the names pprof users know for
// time profiles (Go's, and perf's off-CPU convention): cpu and off_cpu (and wall for the merged
// wall time), in nanoseconds.
std::string sample_type_name(const Profile& profile, const ProfileEvent& event) {
  if (!export_detail::has_off_cpu_samples(profile)) return event.name;
  if (event.off_cpu) return "off_cpu";
  if (event.name == wall_time_event_name) return "wall";
  if (export_detail::is_clock_event(event.name)) return "cpu";
  return event.name;
}

// The sample types (samples, then one column per event), the period, the times and comments.
void add_header(const Profile& profile, perftools::profiles::Profile& pb, StringTable& strings) {
  auto add_value_type = [&](perftools::profiles::ValueType* type, std::string_view name,
                            std::string_view unit) {
    type->set_type(strings.index(name));
    type->set_unit(strings.index(unit));
  };
  add_value_type(pb.add_sample_type(), "samples", "count");
  for (const auto& event : profile.events) {
    add_value_type(pb.add_sample_type(), sample_type_name(profile, event),
                   export_detail::is_clock_event(event.name) ? "nanoseconds" : "count");
  }
  if (!profile.events.empty()) {
    const ProfileEvent& event = profile.events.front();
    add_value_type(pb.mutable_period_type(), sample_type_name(profile, event),
                   export_detail::is_clock_event(event.name) ? "nanoseconds" : "count");
    if (event.samples != 0) {
      pb.set_period(static_cast<std::int64_t>((event.period + event.samples / 2) / event.samples));
    }
    pb.set_default_sample_type(strings.index(sample_type_name(profile, event)));
  }
  if (profile.summary.wall_clock_ns && profile.summary.samples != 0) {
    pb.set_time_nanos(
        static_cast<std::int64_t>(*profile.summary.wall_clock_ns + profile.summary.first_time));
  }
  if (profile.summary.last_time > profile.summary.first_time) {
    pb.set_duration_nanos(
        static_cast<std::int64_t>(profile.summary.last_time - profile.summary.first_time));
  }
  pb.add_comment(strings.index(version_banner));
  if (!profile.summary.command_line.empty()) {
    pb.add_comment(strings.index("command: " + profile.summary.command_line));
  }
  if (!profile.summary.hostname.empty()) {
    pb.add_comment(strings.index("host: " + profile.summary.hostname));
  }
  // What the profile warns of (lost records that may bias its shares, undecodable samples):
  // pprof's comments are where `go tool pprof -comments` shows such notes.
  for (const auto& warning : profile.summary.warnings) {
    pb.add_comment(strings.index("warning: " + warning));
  }
  // Where symbols came from is information: a note, never a warning.
  for (const auto& note : profile.summary.notes) pb.add_comment(strings.index("note: " + note));
}

// The mapping ranges and which one each frame falls in.
struct MappingRanges {
  std::vector<MappingRange> ranges;
  std::vector<std::uint32_t> frame_mapping;   // Profile frame -> range (later: pprof id - 1)
  std::vector<std::uint32_t> recorded_range;  // Profile mapping -> range
};

// The recorded range of each frame, else its (DSO, load bias).
MappingRanges collect_mapping_ranges(const Profile& profile) {
  MappingRanges result;
  auto& ranges = result.ranges;
  result.frame_mapping.assign(profile.frames.size(), no_index);
  result.recorded_range.resize(profile.mappings.size());
  std::unordered_map<MappingKey, std::uint32_t, MappingKeyHash> mapping_of;
  auto range_of = [&](const MappingKey& key, bool recorded) {
    auto [it, added] = mapping_of.try_emplace(key, static_cast<std::uint32_t>(ranges.size()));
    if (added) {
      MappingRange range;
      range.dso = key.dso;
      range.recorded = recorded;
      if (recorded) {
        range.start = key.start;
        range.limit = key.limit;
        range.offset = key.offset;
      } else {
        range.bias = key.start;
      }
      ranges.push_back(range);
    }
    return it->second;
  };
  for (std::size_t m = 0; m < profile.mappings.size(); ++m) {
    const ProfileMapping& mapping = profile.mappings[m];
    result.recorded_range[m] =
        range_of({mapping.dso, mapping.start, mapping.end, mapping.pgoff}, true);
  }
  for (std::size_t f = 0; f < profile.frames.size(); ++f) {
    const ProfileFrame& frame = profile.frames[f];
    if (frame.mapping < result.recorded_range.size()) {
      result.frame_mapping[f] = result.recorded_range[frame.mapping];
      continue;
    }
    std::uint32_t dso = profile.functions[frame.function].dso;
    if (dso == no_index) continue;
    std::uint32_t index = range_of({dso, frame.address - frame.dso_address, 0, 0}, false);
    MappingRange& range = ranges[index];
    range.low = std::min(range.low, frame.address);
    range.high = std::max(range.high, frame.address);
    result.frame_mapping[f] = index;
  }
  for (auto& range : ranges) {
    if (range.recorded) continue;
    range.start = range.low;
    range.limit = range.high + 1;
    range.offset = range.low - range.bias;
  }
  return result;
}

// The range of the main binary: the executable of the process with the most samples (the file
// its command name was taken from at exec: comm is the first 15 bytes of its file name), the
// range that process mapped it at; no_index when the executable was never sampled or the
// process renamed itself.
std::uint32_t executable_range(const Profile& profile, const MappingRanges& mappings) {
  const auto& ranges = mappings.ranges;
  std::unordered_map<std::uint32_t, std::uint64_t> pid_samples;
  export_detail::for_each_sample_group(profile, [&](const ProfileSampleGroup& group) {
    pid_samples[profile.threads[group.thread].pid] += group.samples;
  });
  std::uint32_t main_pid = no_index;
  std::uint64_t most = 0;
  for (auto [pid, count] : pid_samples) {
    if (count > most || (count == most && pid < main_pid)) {
      main_pid = pid;
      most = count;
    }
  }
  std::string_view comm;
  for (const auto& thread : profile.threads) {
    if (thread.pid != main_pid) continue;
    if (comm.empty() || thread.tid == thread.pid) comm = thread.comm;
  }
  auto names_comm = [&](std::uint32_t dso) {
    std::string_view path = profile.dsos[dso].path;
    if (profile.dsos[dso].kernel || comm.empty() || !path.starts_with('/')) return false;
    std::string_view name = detail::file_name_of(path);
    return name.substr(0, 15) == comm;
  };
  std::uint32_t executable = no_index;
  for (std::size_t m = 0; m < profile.mappings.size(); ++m) {
    const ProfileMapping& mapping = profile.mappings[m];
    if (mapping.pid != main_pid || mapping.dso == no_index || !names_comm(mapping.dso)) continue;
    std::uint32_t range = mappings.recorded_range[m];
    if (executable == no_index || ranges[range].offset < ranges[executable].offset) {
      executable = range;
    }
  }
  for (std::uint32_t r = 0; r < ranges.size() && executable == no_index; ++r) {
    if (!ranges[r].recorded && names_comm(ranges[r].dso)) executable = r;
  }
  return executable;
}

// pprof takes mapping[0] for the main binary: the executable (executable_range), failing that
// the user mapping where the most samples' stacks start (the program's _start or a thread's start
// routine). Then the other user mappings, then the kernel's. Renumbers frame_mapping to the
// pprof ids (minus one) and adds the mappings to `pb`.
void add_mappings(const Profile& profile, MappingRanges& mappings, perftools::profiles::Profile& pb,
                  StringTable& strings) {
  const auto& ranges = mappings.ranges;
  std::vector<bool> dso_has_functions(profile.dsos.size(), false),
      dso_has_lines(profile.dsos.size(), false), dso_has_inline(profile.dsos.size(), false);
  for (const auto& frame : profile.frames) {
    std::uint32_t dso = profile.functions[frame.function].dso;
    if (dso == no_index) continue;
    if (profile.functions[frame.function].resolved) dso_has_functions[dso] = true;
    if (frame.line != 0) dso_has_lines[dso] = true;
    if (frame.inlined) dso_has_inline[dso] = true;
  }
  std::uint32_t executable = executable_range(profile, mappings);
  std::vector<std::uint64_t> outermost_samples(ranges.size(), 0);
  export_detail::for_each_sample_group(profile, [&](const ProfileSampleGroup& group) {
    std::uint32_t outermost = no_index;
    for (std::uint32_t s = group.stack; s != no_index; s = profile.stacks[s].parent) {
      std::uint32_t f = profile.stacks[s].frame;
      if (!profile.frames[f].kernel && mappings.frame_mapping[f] != no_index) {
        outermost = mappings.frame_mapping[f];
      }
    }
    if (outermost != no_index) outermost_samples[outermost] += group.samples;
  });
  std::vector<std::uint32_t> mapping_order(ranges.size());
  for (std::uint32_t m = 0; m < ranges.size(); ++m) mapping_order[m] = m;
  auto is_kernel = [&](std::uint32_t m) { return profile.dsos[ranges[m].dso].kernel; };
  std::stable_sort(mapping_order.begin(), mapping_order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return is_kernel(a) < is_kernel(b); });
  auto main_mapping =
      executable != no_index
          ? std::find(mapping_order.begin(), mapping_order.end(), executable)
          : std::max_element(mapping_order.begin(), mapping_order.end(), [&](auto a, auto b) {
              return outermost_samples[a] < outermost_samples[b];
            });
  if (main_mapping != mapping_order.end() &&
      (executable != no_index || outermost_samples[*main_mapping] != 0)) {
    std::rotate(mapping_order.begin(), main_mapping, main_mapping + 1);
  }
  std::vector<std::uint32_t> mapping_id(ranges.size());
  for (std::uint32_t position = 0; position < mapping_order.size(); ++position) {
    mapping_id[mapping_order[position]] = position + 1;
  }
  for (auto& m : mappings.frame_mapping) {
    if (m != no_index) m = mapping_id[m] - 1;
  }
  for (std::size_t position = 0; position < mapping_order.size(); ++position) {
    const MappingRange& range = ranges[mapping_order[position]];
    const ProfileDso& dso = profile.dsos[range.dso];
    auto* mapping = pb.add_mapping();
    mapping->set_id(position + 1);
    mapping->set_memory_start(range.start);
    mapping->set_memory_limit(range.limit);
    mapping->set_file_offset(range.offset);
    mapping->set_filename(strings.index(dso.path));
    if (!dso.build_id.empty()) mapping->set_build_id(strings.index(dso.build_id));
    mapping->set_has_functions(dso_has_functions[range.dso]);
    mapping->set_has_filenames(dso_has_lines[range.dso]);
    mapping->set_has_line_numbers(dso_has_lines[range.dso]);
    mapping->set_has_inline_frames(dso_has_inline[range.dso]);
  }
}

// Functions: one per Profile function, its source file the first one a frame names.
void add_functions(const Profile& profile, perftools::profiles::Profile& pb, StringTable& strings) {
  std::vector<std::int64_t> function_file(profile.functions.size(), 0);
  for (const auto& frame : profile.frames) {
    if (!frame.source_file.empty() && function_file[frame.function] == 0) {
      function_file[frame.function] = strings.index(frame.source_file);
    }
  }
  for (std::size_t f = 0; f < profile.functions.size(); ++f) {
    auto* function = pb.add_function();
    function->set_id(f + 1);
    std::int64_t name = strings.index(profile.functions[f].name);
    function->set_name(name);
    function->set_system_name(name);
    function->set_filename(function_file[f]);
  }
}

// Samples aggregated per (stack, thread, state): the count, then each event's period sum.
struct SampleTable {
  std::size_t columns = 0;
  std::vector<std::uint64_t> keys;   // stack << 32 | thread
  std::vector<ThreadState> states;   // one per key: off-CPU samples' state label
  std::vector<std::int64_t> values;  // `columns` per key
};

struct SampleKey {
  std::uint64_t stack_thread;
  ThreadState state;
  bool operator==(const SampleKey&) const = default;
};
struct SampleKeyHash {
  std::size_t operator()(const SampleKey& key) const noexcept {
    return std::hash<std::uint64_t>{}(key.stack_thread * 0x9e3779b97f4a7c15ull ^
                                      static_cast<std::uint8_t>(key.state));
  }
};

SampleTable aggregate_samples(const Profile& profile) {
  SampleTable table;
  table.columns = 1 + profile.events.size();
  std::unordered_map<SampleKey, std::uint32_t, SampleKeyHash> entry_of;
  export_detail::for_each_sample_group(profile, [&](const ProfileSampleGroup& group) {
    std::uint64_t key = (std::uint64_t{group.stack} << 32) | group.thread;
    auto [it, added] = entry_of.try_emplace(SampleKey{key, group.state},
                                            static_cast<std::uint32_t>(table.keys.size()));
    if (added) {
      table.keys.push_back(key);
      table.states.push_back(group.state);
      table.values.resize(table.values.size() + table.columns, 0);
    }
    // pprof's values are int64: sums of a damaged file's periods stop at its maximum.
    auto add = [](std::int64_t& total, std::uint64_t value) {
      auto room = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() - total);
      total = value >= room ? std::numeric_limits<std::int64_t>::max()
                            : total + static_cast<std::int64_t>(value);
    };
    std::int64_t* row = &table.values[it->second * table.columns];
    add(row[0], group.samples);
    if (group.event < profile.events.size()) add(row[1 + group.event], group.period);
  });
  return table;
}

// The samples with their locations: a location is a real frame with the inlined calls above it
// (leaf-first order puts them just before it), keyed by that run of frames; labels name the
// thread.
void add_samples(const Profile& profile, const SampleTable& table,
                 const std::vector<std::uint32_t>& frame_mapping, perftools::profiles::Profile& pb,
                 StringTable& strings) {
  std::unordered_map<std::string, std::uint64_t> location_of;
  std::string run_key;
  std::vector<std::uint32_t> run;
  std::vector<std::uint64_t> stack_locations;
  auto close_run = [&](std::uint32_t owner) {
    run_key.assign(reinterpret_cast<const char*>(run.data()), run.size() * sizeof(run[0]));
    auto [it, added] = location_of.try_emplace(run_key, pb.location_size() + 1);
    if (added) {
      auto* location = pb.add_location();
      location->set_id(it->second);
      const ProfileFrame& frame = profile.frames[owner];
      location->set_address(frame.address);
      if (frame_mapping[owner] != no_index) location->set_mapping_id(frame_mapping[owner] + 1);
      for (std::uint32_t f : run) {
        auto* line = location->add_line();
        line->set_function_id(profile.frames[f].function + 1);
        line->set_line(profile.frames[f].line);
      }
    }
    stack_locations.push_back(it->second);
    run.clear();
  };

  std::int64_t comm_key = strings.index("comm"), pid_key = strings.index("pid"),
               tid_key = strings.index("tid");
  for (std::size_t e = 0; e < table.keys.size(); ++e) {
    auto stack = static_cast<std::uint32_t>(table.keys[e] >> 32);
    auto thread_index = static_cast<std::uint32_t>(table.keys[e]);
    stack_locations.clear();
    for (std::uint32_t s = stack; s != no_index; s = profile.stacks[s].parent) {
      std::uint32_t f = profile.stacks[s].frame;
      run.push_back(f);
      if (!profile.frames[f].inlined) close_run(f);
    }
    if (!run.empty()) close_run(run.back());

    auto* sample = pb.add_sample();
    for (auto id : stack_locations) sample->add_location_id(id);
    for (std::size_t c = 0; c < table.columns; ++c) {
      sample->add_value(table.values[e * table.columns + c]);
    }
    if (thread_index < profile.threads.size()) {
      const ProfileThread& thread = profile.threads[thread_index];
      auto* comm = sample->add_label();
      comm->set_key(comm_key);
      comm->set_str(strings.index(thread.comm));
      auto* pid = sample->add_label();
      pid->set_key(pid_key);
      pid->set_num(thread.pid);
      auto* tid = sample->add_label();
      tid->set_key(tid_key);
      tid->set_num(thread.tid);
    }
    if (table.states[e] != ThreadState::on_cpu) {
      auto* state = sample->add_label();
      state->set_key(strings.index("state"));
      state->set_str(strings.index(thread_state_name(table.states[e])));
    }
  }
}

}  // namespace

void write_pprof(const Profile& profile, std::ostream& out) {
  perftools::profiles::Profile pb;
  StringTable strings(pb);
  add_header(profile, pb, strings);
  MappingRanges mappings = collect_mapping_ranges(profile);
  add_mappings(profile, mappings, pb, strings);
  add_functions(profile, pb, strings);
  add_samples(profile, aggregate_samples(profile), mappings.frame_mapping, pb, strings);
  std::string bytes;
  if (!pb.SerializeToString(&bytes)) {
    throw std::runtime_error("protobuf could not serialize the pprof profile");
  }
  gzip_to(bytes, out);
}

}  // namespace perfscope
