// The Gecko profile format that the Firefox Profiler imports (profiler.firefox.com, "Load a
// profile from file"), at format version 27: the frame table without the "optimizations"
// column that version removed, and the markers table with start/end/phase columns. One Gecko
// thread per thread and event, each with its own string, frame and stack tables. Frames are
// already symbolized ("name (in libfoo.so)", the Profiler's C++ location form, which gives the
// function a library resource), so meta.presymbolicated keeps the Profiler from asking a
// symbol server. Categories tell user, kernel and unresolved frames apart.
#include <cmath>
#include <unordered_map>
#include <vector>

#include "export_text.hpp"
#include "perfscope/analysis/profile_exporters.hpp"

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

std::string location_string(const Profile& profile, const ProfileFrame& frame) {
  const ProfileFunction& function = profile.functions[frame.function];
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
  explicit ThreadTables(const Profile& profile)
      : profile_(profile),
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
    frame_locations_.back() = string(location_string(profile_, profile_.frames[global]));
    return frame_of_[global];
  }

  const Profile& profile_;
  std::vector<std::uint32_t> frame_of_, stack_of_;
  std::vector<std::uint32_t> frames_;  // global frame of each thread frame
  std::vector<std::uint32_t> frame_locations_;
  std::vector<StackEntry> stacks_;
  std::vector<std::uint32_t> pending_;
  std::vector<std::string> strings_;
  std::unordered_map<std::string, std::uint32_t> string_index_;
};

void write_meta(const Profile& profile, export_detail::TextSink& sink) {
  const auto& summary = profile.summary;
  sink.format("{{\"meta\":{{\"version\":{},\"interval\":{},\"startTime\":{},",
              gecko_profile_version, sampling_interval_ms(profile),
              static_cast<double>(summary.first_time) / 1e6);
  sink.append(
      "\"shutdownTime\":null,\"processType\":0,\"product\":\"perfscope\",\"stackwalk\":1,"
      "\"debug\":0,\"presymbolicated\":true,\"toolkit\":\"\",\"misc\":");
  sink.json_string(summary.command_line);
  sink.append(",\"abi\":");
  sink.json_string(summary.arch);
  sink.append(",\"oscpu\":");
  sink.json_string(summary.os_release);
  sink.append(",\"platform\":\"Linux\",\"CPUName\":");
  sink.json_string(summary.cpu_description);
  sink.append(
      ",\"categories\":["
      "{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
      "{\"name\":\"User\",\"color\":\"yellow\",\"subcategories\":[\"Other\"]},"
      "{\"name\":\"Kernel\",\"color\":\"orange\",\"subcategories\":[\"Other\"]},"
      "{\"name\":\"Unresolved\",\"color\":\"lightblue\",\"subcategories\":[\"Other\"]}],"
      "\"markerSchema\":[],"
      "\"sampleUnits\":{\"time\":\"ms\",\"eventDelay\":\"ms\",\"threadCPUDelta\":\"ns\"}},"
      "\"libs\":[],\"pausedRanges\":[],\"processes\":[],\"threads\":[");
}

}  // namespace

void write_gecko(const Profile& profile, std::ostream& out) {
  using export_detail::TextSink;
  TextSink sink(out);
  write_meta(profile, sink);

  // Samples of each (thread, event), in time order.
  std::size_t event_count = std::max<std::size_t>(profile.events.size(), 1);
  bool several_events = export_detail::events_with_samples(profile) > 1;
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

  double interval = sampling_interval_ms(profile);
  std::uint64_t first_time = profile.summary.first_time;
  ThreadTables tables(profile);
  std::vector<std::uint32_t> sample_stacks;
  bool first_thread = true;
  for (std::size_t group = 0; group < group_count; ++group) {
    std::uint32_t begin = group_start[group], end = group_start[group + 1];
    if (begin == end) continue;
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
    sink.append(first_thread ? "{" : ",{");
    first_thread = false;
    sink.append("\"name\":");
    sink.json_string(name);
    sink.append(",\"processName\":");
    sink.json_string(thread.comm);
    sink.format(
        ",\"processType\":\"default\",\"pid\":{},\"tid\":{},\"registerTime\":0,"
        "\"unregisterTime\":null,",
        thread.pid, thread.tid);

    sink.append("\"samples\":{\"schema\":{\"stack\":0,\"time\":1,\"eventDelay\":2},\"data\":[");
    for (std::uint32_t i = begin; i < end; ++i) {
      const ProfileSample& sample = profile.samples[order[i]];
      // Without timestamps the samples are spread one interval apart.
      double time = sample.time >= first_time && sample.time != 0
                        ? static_cast<double>(sample.time - first_time) / 1e6
                        : static_cast<double>(i - begin) * interval;
      std::uint32_t stack = sample_stacks[i - begin];
      if (i != begin) sink.put(',');
      if (stack == no_index) {
        sink.format("[null,{},0]", time);
      } else {
        sink.format("[{},{},0]", stack, time);
      }
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
    sink.append("]}");
  }
  sink.append("]}\n");
  sink.finish();
}

}  // namespace perfscope
