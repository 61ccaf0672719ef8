// speedscope's file format: frames shared by all profiles, one "sampled" profile per thread and
// event whose samples list frame indices from the outermost caller to the leaf. Weights are
// sample periods: nanoseconds for the software clocks, event counts ("none") otherwise.
// Streamed: the only memory beyond the Profile is an index of samples by profile and a table
// of frame numbers. A profile of sample groups (built without keep_samples) has no times: each
// group is one sample of its summed period, in the order the groups were first seen.
#include <numeric>
#include <unordered_map>
#include <vector>

#include "analysis/exporters/exporter_common.hpp"
#include "perfscope/analysis/exporters/profile_exporters.hpp"
#include "perfscope/version.hpp"

namespace perfscope {

namespace {

// speedscope keys frames by index; frames of one function and source line are one frame to it
// (otherwise every sampled address would be a separate function in its sandwich view).
struct FrameKey {
  std::uint32_t function;
  std::uint32_t line;
  std::string_view file;
  bool kernel;
  bool operator==(const FrameKey&) const = default;
};
struct FrameKeyHash {
  std::size_t operator()(const FrameKey& key) const noexcept {
    std::size_t h = std::hash<std::string_view>{}(key.file);
    h ^= (std::uint64_t{key.function} << 33 | std::uint64_t{key.line} << 1 | key.kernel) *
         0x9e3779b97f4a7c15ull;
    return h;
  }
};

}  // namespace

void write_speedscope(const Profile& profile, std::ostream& out) {
  using export_detail::TextSink;
  TextSink sink(out);

  std::vector<std::uint32_t> frame_index(profile.frames.size());
  std::unordered_map<FrameKey, std::uint32_t, FrameKeyHash> frame_keys;
  std::vector<std::uint32_t> shared_frames;  // the Profile frame each speedscope frame shows
  for (std::uint32_t f = 0; f < profile.frames.size(); ++f) {
    const ProfileFrame& frame = profile.frames[f];
    FrameKey key{frame.function, frame.line, frame.source_file, frame.kernel};
    auto [it, added] =
        frame_keys.try_emplace(key, static_cast<std::uint32_t>(shared_frames.size()));
    if (added) shared_frames.push_back(f);
    frame_index[f] = it->second;
  }

  // speedscope opens the profile named by activeProfileIndex: the busiest thread and event
  // rather than the first one, often the shell that started the workload with a few samples.
  std::size_t event_count = std::max<std::size_t>(profile.events.size(), 1);
  std::size_t group_count = profile.threads.size() * event_count;
  std::vector<std::uint64_t> group_samples(group_count, 0);
  std::vector<bool> group_written(group_count, false);
  export_detail::for_each_sample_group(profile, [&](const ProfileSampleGroup& group) {
    group_samples[group.thread * event_count + group.event] += group.samples;
    group_written[group.thread * event_count + group.event] = true;
  });
  std::size_t active_profile = 0;
  for (std::size_t group = 0, written = 0, busiest = 0; group < group_count; ++group) {
    if (!group_written[group]) continue;
    if (group_samples[group] > busiest) {
      busiest = group_samples[group];
      active_profile = written;
    }
    ++written;
  }

  sink.append(
      "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
      "\"exporter\":\"perfscope " PERFSCOPE_VERSION_STRING "\",\"name\":");
  sink.json_string(profile.summary.command_line.empty() ? std::string_view("perfscope profile")
                                                        : profile.summary.command_line);
  // Not in speedscope's schema (which allows more properties), so only when there are any: the
  // files the samples needed that were not found or were of another build.
  if (!profile.summary.missing_files.empty()) {
    sink.append(",\"missingFiles\":");
    export_detail::write_missing_files_json(profile, sink);
  }
  sink.format(",\"activeProfileIndex\":{},\"shared\":{{\"frames\":[", active_profile);
  for (std::size_t i = 0; i < shared_frames.size(); ++i) {
    const ProfileFrame& frame = profile.frames[shared_frames[i]];
    const ProfileFunction& function = profile.functions[frame.function];
    sink.append(i == 0 ? "{\"name\":" : ",{\"name\":");
    sink.json_string(export_detail::readable_frame_name(profile, frame));
    // The source file when known, else the DSO: speedscope shows it beside the name.
    if (!frame.source_file.empty()) {
      sink.append(",\"file\":");
      sink.json_string(frame.source_file);
      if (frame.line != 0) sink.format(",\"line\":{}", frame.line);
    } else if (function.dso != no_index) {
      sink.append(",\"file\":");
      sink.json_string(profile.dsos[function.dso].path);
    }
    sink.put('}');
  }
  sink.append("]},\"profiles\":[");

  // Samples (or, in a profile built without keep_samples, the sample groups) grouped by
  // (thread, event) with a counting sort, keeping time order inside a group: 4 bytes an item,
  // its index in samples followed by sample_groups.
  const std::size_t sample_count = profile.samples.size();
  auto stack_of = [&](std::uint32_t item) {
    return item < sample_count ? profile.samples[item].stack
                               : profile.sample_groups[item - sample_count].stack;
  };
  auto weight_of = [&](std::uint32_t item) {
    return item < sample_count ? profile.samples[item].period
                               : profile.sample_groups[item - sample_count].period;
  };
  std::vector<std::uint32_t> group_start(group_count + 1, 0);
  export_detail::for_each_sample_group(profile, [&](const ProfileSampleGroup& group) {
    ++group_start[group.thread * event_count + group.event + 1];
  });
  std::partial_sum(group_start.begin(), group_start.end(), group_start.begin());
  std::vector<std::uint32_t> ordered(group_start.back());
  {
    std::vector<std::uint32_t> next(group_start.begin(), group_start.end() - 1);
    std::uint32_t item = 0;
    export_detail::for_each_sample_group(profile, [&](const ProfileSampleGroup& group) {
      ordered[next[group.thread * event_count + group.event]++] = item++;
    });
  }

  std::vector<std::uint32_t> chain;
  bool first_profile = true;
  for (std::size_t group = 0; group < group_count; ++group) {
    std::uint32_t begin = group_start[group], end = group_start[group + 1];
    if (begin == end) continue;
    const ProfileThread& thread = profile.threads[group / event_count];
    std::size_t event = group % event_count;
    std::string_view event_name =
        event < profile.events.size() ? std::string_view(profile.events[event].name) : "samples";

    sink.append(first_profile ? "{" : ",{");
    first_profile = false;
    sink.append("\"type\":\"sampled\",\"name\":");
    sink.json_string(fmt::format("{} {}/{} {}", thread.comm, thread.pid, thread.tid, event_name));
    sink.format(",\"unit\":\"{}\",\"startValue\":0,",
                export_detail::is_clock_event(event_name) ? "nanoseconds" : "none");

    // Consecutive samples of one stack become one sample with their summed weight, as
    // speedscope itself merges them.
    std::uint64_t total = 0;
    sink.append("\"samples\":[");
    bool first_sample = true;
    for (std::uint32_t i = begin; i < end;) {
      std::uint32_t stack = stack_of(ordered[i]);
      std::uint32_t j = i;
      while (j < end && stack_of(ordered[j]) == stack) ++j;
      chain.clear();
      for (std::uint32_t s = stack; s != no_index; s = profile.stacks[s].parent) {
        chain.push_back(frame_index[profile.stacks[s].frame]);
      }
      sink.append(first_sample ? "[" : ",[");
      first_sample = false;
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        if (it != chain.rbegin()) sink.put(',');
        sink.format("{}", *it);
      }
      sink.put(']');
      i = j;
    }
    sink.append("],\"weights\":[");
    first_sample = true;
    for (std::uint32_t i = begin; i < end;) {
      std::uint32_t stack = stack_of(ordered[i]);
      std::uint64_t weight = 0;
      for (; i < end && stack_of(ordered[i]) == stack; ++i) weight += weight_of(ordered[i]);
      total += weight;
      if (!first_sample) sink.put(',');
      first_sample = false;
      sink.format("{}", weight);
    }
    sink.format("],\"endValue\":{}}}", total);
  }
  // speedscope hangs (the tab stops answering) on a file without profiles: a recording without
  // samples is one empty profile.
  if (first_profile) {
    sink.append(
        "{\"type\":\"sampled\",\"name\":\"no samples\",\"unit\":\"none\",\"startValue\":0,"
        "\"endValue\":0,\"samples\":[],\"weights\":[]}");
  }
  sink.append("]}\n");
  sink.finish();
}

}  // namespace perfscope
