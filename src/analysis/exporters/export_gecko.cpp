// The Gecko profile format that the Firefox Profiler imports (profiler.firefox.com, "Load a
// profile from file"), at format version 27: the frame table without the "optimizations"
// column that version removed, and the markers table with start/end/phase columns (the
// Profiler upgrades 27 through its later versions, none of which changes what is written here).
// Each process is a Gecko process profile (the first sampled one at the top, the others in
// `processes`) with its libraries: the recorded mappings its frames were found in, with the
// Breakpad id the Profiler's symbolication keys on. One Gecko thread per thread and event, each
// with its own string, frame and stack tables. Frames are already symbolized ("name (in
// libfoo.so)", the Profiler's C++ location form, which gives the function a library resource),
// so meta.presymbolicated keeps the Profiler from asking a symbol server; an unresolved address
// inside a library is written as the address itself ("0x7f...", the Gecko form of a native
// frame), which the Profiler places in that library at its library-relative address. Categories
// tell user, kernel and unresolved frames apart. Sample times are milliseconds after
// meta.startTime, the wall-clock time of the first sample when the recording says (CLOCK_DATA),
// else 0: unknown. meta.missingFiles lists the files the samples needed that were not found or
// were of another build (their frames stay addresses): the Profiler keeps unknown meta fields.
// With off-CPU samples (record --off-cpu) the time events' samples carry threadCPUDelta (their
// CPU nanoseconds, 0 for off-CPU ones) and a weight in milliseconds.
#include <time.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "analysis/exporters/exporter_common.hpp"
#include "perfscope/analysis/exporters/profile_exporters.hpp"

namespace perfscope {

namespace {

constexpr int gecko_profile_version = 27;

// Indices into meta.categories (0 is "Other", which the Profiler uses for what it adds).
constexpr int category_user = 1;
constexpr int category_kernel = 2;
constexpr int category_unknown = 3;

int frame_category(const Profile& profile, const ProfileFrame& frame) {
  if (frame.kernel) return category_kernel;
  return profile.functions[frame.function].resolved ? category_user : category_unknown;
}

// `listed`: per Profile mapping, whether the process's libs list it.
std::string location_string(const Profile& profile, const ProfileFrame& frame,
                            const std::vector<bool>& listed) {
  const ProfileFunction& function = profile.functions[frame.function];
  if (!function.resolved && frame.mapping < listed.size() && listed[frame.mapping]) {
    return fmt::format("{:#x}", frame.address);
  }
  std::string location = export_detail::readable_frame_name(profile, frame);
  if (function.dso != no_index) {
    std::string_view library = export_detail::file_name_of(profile.dsos[function.dso].path);
    // The Profiler reads "name (in library)"; a ')' in the library name would end it early.
    if (library.find(')') == std::string_view::npos) {
      location += " (in ";
      location += library;
      location += ')';
    }
  }
  return location;
}

// The sampling interval in milliseconds: the clock period for the software clocks, else the
// mean time between samples.
double sampling_interval_ms(const Profile& profile) {
  if (!profile.events.empty() && profile.events[0].samples != 0 &&
      export_detail::is_clock_event(profile.events[0].name)) {
    return static_cast<double>(profile.events[0].period) /
           static_cast<double>(profile.events[0].samples) / 1e6;
  }
  const auto& summary = profile.summary;
  if (summary.samples > 1 && summary.last_time > summary.first_time) {
    return static_cast<double>(summary.last_time - summary.first_time) / 1e6 /
           static_cast<double>(summary.samples - 1);
  }
  return 1.0;
}

// One Gecko thread's tables, built from the global ones for the samples it holds.
class ThreadTables {
 public:
  ThreadTables(const Profile& profile, const std::vector<bool>& listed_mappings)
      : profile_(profile),
        listed_mappings_(listed_mappings),
        frame_of_(profile.frames.size(), no_index),
        stack_of_(profile.stacks.size(), no_index) {}

  void reset() {
    for (auto f : frames_) frame_of_[f] = no_index;
    for (const auto& entry : stacks_) stack_of_[entry.global] = no_index;
    frames_.clear();
    stacks_.clear();
    strings_.clear();
    string_index_.clear();
  }

  // The thread's stack index for a global stack (no_index stays no_index).
  std::uint32_t stack(std::uint32_t global) {
    if (global == no_index || stack_of_[global] != no_index) {
      return global == no_index ? no_index : stack_of_[global];
    }
    // Create the missing callers first, outermost first, so that a prefix always has a smaller
    // index than the stacks that name it.
    pending_.clear();
    for (std::uint32_t s = global; s != no_index && stack_of_[s] == no_index;
         s = profile_.stacks[s].parent) {
      pending_.push_back(s);
    }
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
      std::uint32_t parent = profile_.stacks[*it].parent;
      StackEntry entry{*it, parent == no_index ? no_index : stack_of_[parent],
                       frame(profile_.stacks[*it].frame)};
      stack_of_[*it] = static_cast<std::uint32_t>(stacks_.size());
      stacks_.push_back(entry);
    }
    return stack_of_[global];
  }

  struct StackEntry {
    std::uint32_t global, prefix, frame;
  };
  const std::vector<StackEntry>& stacks() const { return stacks_; }
  const std::vector<std::uint32_t>& frames() const { return frames_; }
  const std::vector<std::uint32_t>& frame_locations() const { return frame_locations_; }
  const std::vector<std::string>& strings() const { return strings_; }

  std::uint32_t string(std::string text) {
    auto [it, added] = string_index_.try_emplace(text, static_cast<std::uint32_t>(strings_.size()));
    if (added) strings_.push_back(std::move(text));
    return it->second;
  }

 private:
  std::uint32_t frame(std::uint32_t global) {
    if (frame_of_[global] != no_index) return frame_of_[global];
    frame_of_[global] = static_cast<std::uint32_t>(frames_.size());
    frames_.push_back(global);
    frame_locations_.resize(frames_.size());
    frame_locations_.back() =
        string(location_string(profile_, profile_.frames[global], listed_mappings_));
    return frame_of_[global];
  }

  const Profile& profile_;
  const std::vector<bool>& listed_mappings_;
  std::vector<std::uint32_t> frame_of_, stack_of_;
  std::vector<std::uint32_t> frames_;  // global frame of each thread frame
  std::vector<std::uint32_t> frame_locations_;
  std::vector<StackEntry> stacks_;
  std::vector<std::uint32_t> pending_;
  std::vector<std::string> strings_;
  std::unordered_map<std::string, std::uint32_t> string_index_;
};

// The Breakpad debug id of an ELF file, as the Firefox Profiler and its symbol servers name it:
// the first 16 bytes of the build id as a GUID (its first three fields byte-swapped, as
// Breakpad's dump_syms reads them on a little-endian machine), upper-case hex, then the age 0.
// Empty for an unknown build id.
std::string breakpad_id(std::string_view build_id_hex) {
  if (build_id_hex.empty() || build_id_hex.size() % 2 != 0) return {};
  std::uint8_t bytes[16] = {};
  for (std::size_t i = 0; i < 16 && 2 * i + 1 < build_id_hex.size(); ++i) {
    unsigned value = 0;
    auto [end, error] =
        std::from_chars(build_id_hex.data() + 2 * i, build_id_hex.data() + 2 * i + 2, value, 16);
    if (error != std::errc() || end != build_id_hex.data() + 2 * i + 2) return {};
    bytes[i] = static_cast<std::uint8_t>(value);
  }
  std::reverse(bytes, bytes + 4);
  std::reverse(bytes + 4, bytes + 6);
  std::reverse(bytes + 6, bytes + 8);
  std::string id;
  for (auto byte : bytes) id += fmt::format("{:02X}", byte);
  id += '0';
  return id;
}

std::string upper_hex(std::string_view text) {
  std::string upper(text);
  for (auto& c : upper) c = static_cast<char>(c >= 'a' && c <= 'f' ? c - 'a' + 'A' : c);
  return upper;
}

// The time meta.startTime stands for, ms since the epoch, when the recording says.
double start_time_ms(const Profile& profile) {
  const auto& summary = profile.summary;
  if (!summary.wall_clock_ns) return 0;
  return static_cast<double>(*summary.wall_clock_ns + summary.first_time) / 1e6;
}

// The meta fields every process profile has (GeckoProfileShortMeta).
void write_short_meta(const Profile& profile, export_detail::TextSink& sink) {
  const auto& summary = profile.summary;
  sink.format("\"version\":{},\"startTime\":{},\"shutdownTime\":null,", gecko_profile_version,
              start_time_ms(profile));
  if (summary.clockid == CLOCK_MONOTONIC) {
    sink.format("\"startTimeAsClockMonotonicNanosecondsSinceBoot\":{},", summary.first_time);
  }
  sink.append(
      "\"categories\":["
      "{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
      "{\"name\":\"User\",\"color\":\"yellow\",\"subcategories\":[\"Other\"]},"
      "{\"name\":\"Kernel\",\"color\":\"orange\",\"subcategories\":[\"Other\"]},"
      "{\"name\":\"Unresolved\",\"color\":\"lightblue\",\"subcategories\":[\"Other\"]}],"
      "\"markerSchema\":[]");
}

// The top-level meta (GeckoProfileFullMeta).
void write_meta(const Profile& profile, export_detail::TextSink& sink) {
  const auto& summary = profile.summary;
  sink.append("\"meta\":{");
  write_short_meta(profile, sink);
  sink.format(",\"interval\":{},", sampling_interval_ms(profile));
  sink.append(
      "\"processType\":0,\"product\":\"perfscope\",\"stackwalk\":1,\"debug\":0,"
      "\"gcpoison\":0,\"asyncstack\":0,\"presymbolicated\":true,\"toolkit\":\"\",\"misc\":");
  sink.json_string(summary.command_line);
  sink.append(",\"abi\":");
  sink.json_string(summary.arch);
  sink.append(",\"oscpu\":");
  sink.json_string(summary.os_release);
  sink.append(",\"platform\":\"Linux\",\"CPUName\":");
  sink.json_string(summary.cpu_description);
  sink.append(
      ",\"sampleUnits\":{\"time\":\"ms\",\"eventDelay\":\"ms\",\"threadCPUDelta\":\"ns\"},"
      "\"missingFiles\":");
  export_detail::write_missing_files_json(profile, sink);
  sink.put('}');
}

// The libraries of process `pid`: its recorded mappings and the kernel's, by start address.
// The Profiler looks addresses up by binary search, so a mapping overlapping an earlier one
// (a range mapped again after exec or munmap) is left out. Marks in `listed` the ones written.
void write_libs(const Profile& profile, std::uint32_t pid, std::vector<bool>& listed,
                export_detail::TextSink& sink) {
  std::vector<std::uint32_t> order;
  for (std::uint32_t m = 0; m < profile.mappings.size(); ++m) {
    const ProfileMapping& mapping = profile.mappings[m];
    listed[m] = false;
    if ((mapping.pid == pid || mapping.pid == no_index) && mapping.dso < profile.dsos.size() &&
        mapping.end > mapping.start) {
      order.push_back(m);
    }
  }
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return profile.mappings[a].start < profile.mappings[b].start;
  });
  sink.append("\"libs\":[");
  std::uint64_t covered = 0;
  bool first = true;
  for (std::uint32_t m : order) {
    const ProfileMapping& mapping = profile.mappings[m];
    if (!first && mapping.start < covered) continue;
    listed[m] = true;
    covered = mapping.end;
    const ProfileDso& dso = profile.dsos[mapping.dso];
    std::string_view name = export_detail::file_name_of(dso.path);
    sink.append(first ? "{\"name\":" : ",{\"name\":");
    first = false;
    sink.json_string(name);
    sink.append(",\"path\":");
    sink.json_string(dso.path);
    sink.append(",\"debugName\":");
    sink.json_string(name);
    sink.append(",\"debugPath\":");
    sink.json_string(dso.path);
    sink.append(",\"breakpadId\":");
    sink.json_string(breakpad_id(dso.build_id));
    if (!dso.build_id.empty()) {
      sink.append(",\"codeId\":");
      sink.json_string(upper_hex(dso.build_id));
    }
    sink.append(",\"arch\":");
    sink.json_string(profile.summary.arch);
    sink.format(",\"start\":{},\"end\":{},\"offset\":{}}}", mapping.start, mapping.end,
                mapping.pgoff);
  }
  sink.append("]");
}

}  // namespace

void write_gecko(const Profile& profile, std::ostream& out) {
  using export_detail::TextSink;
  if (profile.samples.empty() && !profile.sample_groups.empty()) {
    throw std::invalid_argument(
        "the Firefox Profiler (gecko) format places every sample in time, but this profile holds "
        "its samples folded without their times (ProfileOptions::keep_samples was false): build "
        "it with keep_samples = true, or export it as folded, json, svg, pprof or speedscope");
  }
  TextSink sink(out);

  // Samples of each (thread, event), in time order.
  std::size_t event_count = std::max<std::size_t>(profile.events.size(), 1);
  bool several_events = export_detail::events_with_samples(profile) > 1;
  bool off_cpu = export_detail::has_off_cpu_samples(profile);
  std::size_t group_count = profile.threads.size() * event_count;
  std::vector<std::uint32_t> group_start(group_count + 1, 0);
  for (const auto& sample : profile.samples) {
    ++group_start[sample.thread * event_count + sample.event + 1];
  }
  for (std::size_t g = 0; g < group_count; ++g) group_start[g + 1] += group_start[g];
  std::vector<std::uint32_t> order(profile.samples.size());
  {
    std::vector<std::uint32_t> next(group_start.begin(), group_start.end() - 1);
    for (std::uint32_t i = 0; i < profile.samples.size(); ++i) {
      const auto& sample = profile.samples[i];
      order[next[sample.thread * event_count + sample.event]++] = i;
    }
  }

  // Processes in the order their first thread appears; each one's name is its main thread's
  // command (tid == pid), else its first thread's.
  std::vector<std::uint32_t> pids;
  std::unordered_map<std::uint32_t, std::string_view> process_names;
  for (const auto& thread : profile.threads) {
    auto [it, added] = process_names.try_emplace(thread.pid, thread.comm);
    if (added) pids.push_back(thread.pid);
    if (thread.tid == thread.pid) it->second = thread.comm;
  }

  double interval = sampling_interval_ms(profile);
  std::uint64_t first_time = profile.summary.first_time;
  std::vector<bool> listed(profile.mappings.size(), false);
  ThreadTables tables(profile, listed);
  std::vector<std::uint32_t> sample_stacks;

  auto write_thread = [&](std::size_t group) {
    std::uint32_t begin = group_start[group], end = group_start[group + 1];
    const ProfileThread& thread = profile.threads[group / event_count];
    std::size_t event = group % event_count;

    tables.reset();
    sample_stacks.clear();
    for (std::uint32_t i = begin; i < end; ++i) {
      sample_stacks.push_back(tables.stack(profile.samples[order[i]].stack));
    }

    std::string name = thread.comm.empty() ? fmt::format("thread {}", thread.tid) : thread.comm;
    if (several_events && event < profile.events.size()) {
      name += fmt::format(" ({})", profile.events[event].name);
    }
    sink.append("\"name\":");
    sink.json_string(name);
    sink.append(",\"processName\":");
    sink.json_string(process_names[thread.pid]);
    sink.format(
        ",\"processType\":\"default\",\"pid\":{},\"tid\":{},\"registerTime\":0,"
        "\"unregisterTime\":null,",
        thread.pid, thread.tid);

    // With off-CPU samples each sample says whether the thread was on the CPU (threadCPUDelta:
    // the CPU nanoseconds it stands for, 0 off the CPU) and weighs its time in milliseconds; an
    // off-CPU sample is placed where its interval began (its time is the interval's end).
    bool timed = off_cpu && export_detail::is_clock_event(
                                event < profile.events.size() ? profile.events[event].name : "");
    sink.append(
        timed ? "\"samples\":{\"weightType\":\"tracing-ms\",\"schema\":{\"stack\":0,"
                "\"time\":1,\"eventDelay\":2,\"threadCPUDelta\":3,\"weight\":4},\"data\":["
              : "\"samples\":{\"schema\":{\"stack\":0,\"time\":1,\"eventDelay\":2},\"data\":[");
    for (std::uint32_t i = begin; i < end; ++i) {
      const ProfileSample& sample = profile.samples[order[i]];
      bool off = sample.state != ThreadState::on_cpu;
      std::uint64_t at =
          off && timed && sample.time > sample.period ? sample.time - sample.period : sample.time;
      // Without timestamps the samples are spread one interval apart.
      double time = at >= first_time && at != 0 ? static_cast<double>(at - first_time) / 1e6
                                                : static_cast<double>(i - begin) * interval;
      std::uint32_t stack = sample_stacks[i - begin];
      if (i != begin) sink.put(',');
      if (stack == no_index) {
        sink.format("[null,{},0", time);
      } else {
        sink.format("[{},{},0", stack, time);
      }
      if (timed) {
        sink.format(",{},{}", off ? 0 : sample.period, static_cast<double>(sample.period) / 1e6);
      }
      sink.put(']');
    }
    sink.append("]},");

    sink.append(
        "\"markers\":{\"schema\":{\"name\":0,\"startTime\":1,\"endTime\":2,\"phase\":3,"
        "\"category\":4,\"data\":5},\"data\":[]},");

    sink.append("\"stackTable\":{\"schema\":{\"prefix\":0,\"frame\":1},\"data\":[");
    bool first = true;
    for (const auto& entry : tables.stacks()) {
      sink.append(first ? "[" : ",[");
      first = false;
      if (entry.prefix == no_index) {
        sink.format("null,{}]", entry.frame);
      } else {
        sink.format("{},{}]", entry.prefix, entry.frame);
      }
    }
    sink.append("]},");

    sink.append(
        "\"frameTable\":{\"schema\":{\"location\":0,\"relevantForJS\":1,\"innerWindowID\":2,"
        "\"implementation\":3,\"line\":4,\"column\":5,\"category\":6,\"subcategory\":7},"
        "\"data\":[");
    const auto& frames = tables.frames();
    for (std::size_t f = 0; f < frames.size(); ++f) {
      const ProfileFrame& frame = profile.frames[frames[f]];
      sink.append(f == 0 ? "[" : ",[");
      sink.format("{},false,0,null,", tables.frame_locations()[f]);
      if (frame.line != 0) {
        sink.format("{}", frame.line);
      } else {
        sink.append("null");
      }
      sink.format(",null,{},0]", frame_category(profile, frame));
    }
    sink.append("]},\"stringTable\":[");
    const auto& strings = tables.strings();
    for (std::size_t s = 0; s < strings.size(); ++s) {
      if (s != 0) sink.put(',');
      sink.json_string(strings[s]);
    }
    sink.append("]");
  };

  // The parts of a process profile after its meta: libraries, threads, and empty tables.
  auto write_process = [&](std::uint32_t pid) {
    write_libs(profile, pid, listed, sink);
    sink.append(
        ",\"pausedRanges\":[],\"sources\":{\"schema\":{\"uuid\":0,\"filename\":1,"
        "\"startLine\":2,\"startColumn\":3,\"sourceMapURL\":4},\"data\":[]},\"threads\":[");
    bool first_thread = true;
    for (std::size_t group = 0; group < group_count; ++group) {
      if (group_start[group] == group_start[group + 1]) continue;
      if (profile.threads[group / event_count].pid != pid) continue;
      sink.append(first_thread ? "{" : ",{");
      first_thread = false;
      write_thread(group);
      sink.put('}');
    }
    sink.put(']');
  };

  sink.put('{');
  write_meta(profile, sink);
  sink.put(',');
  write_process(pids.empty() ? no_index : pids.front());
  sink.append(",\"processes\":[");
  for (std::size_t p = 1; p < pids.size(); ++p) {
    sink.append(p == 1 ? "{\"meta\":{" : ",{\"meta\":{");
    write_short_meta(profile, sink);
    sink.append("},");
    write_process(pids[p]);
    sink.append(",\"processes\":[]}");
  }
  sink.append("]}\n");
  sink.finish();
}

}  // namespace perfscope
