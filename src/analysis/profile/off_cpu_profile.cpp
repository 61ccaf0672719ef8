#include "perfscope/analysis/profile/off_cpu_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

namespace perfscope {

bool event_period_is_ns(std::string_view name) noexcept {
  return name == "cpu-clock" || name == "task-clock" || name.starts_with("cpu-clock:") ||
         name.starts_with("task-clock:") || name == off_cpu_event_name ||
         name == wall_time_event_name;
}

bool profile_has_off_cpu(const Profile& profile) noexcept {
  return std::any_of(profile.events.begin(), profile.events.end(), [](const ProfileEvent& event) {
    return (event.off_cpu || event.name == wall_time_event_name) && event.samples != 0;
  });
}

void merge_wall_time(Profile& profile) {
  std::vector<bool> merged(profile.events.size(), false);
  bool off_cpu = false, on_cpu_clock = false;
  std::string other_on_cpu;
  for (std::size_t i = 0; i < profile.events.size(); ++i) {
    const ProfileEvent& event = profile.events[i];
    if (event.samples == 0) continue;
    if (event.off_cpu) {
      merged[i] = off_cpu = true;
    } else if (event_period_is_ns(event.name) && event.name != wall_time_event_name) {
      merged[i] = on_cpu_clock = true;
    } else if (other_on_cpu.empty()) {
      other_on_cpu = event.name;
    }
  }
  if (!off_cpu) {
    throw std::invalid_argument(
        "--wall: the recording has no off-CPU samples (offcpu-time); record them with "
        "`perfscope record --wall` (or --off-cpu -e cpu-clock)");
  }
  if (!on_cpu_clock && !other_on_cpu.empty()) {
    throw std::invalid_argument(fmt::format(
        "--wall: the on-CPU samples are of '{}', whose periods are not time and cannot add up "
        "with blocked nanoseconds; record with `perfscope record --wall` (cpu-clock samples)",
        other_on_cpu));
  }
  ProfileEvent wall;
  wall.name = std::string(wall_time_event_name);
  for (std::size_t i = 0; i < profile.events.size(); ++i) {
    if (!merged[i]) continue;
    ProfileEvent& event = profile.events[i];
    wall.samples += event.samples;
    wall.period += event.period;
    wall.period_read += event.period_read;
    wall.samples_read += event.samples_read;
    wall.has_callchains |= event.has_callchains;
    event.samples = event.period = event.period_read = event.samples_read = 0;
  }
  auto index = static_cast<std::uint32_t>(profile.events.size());
  profile.events.push_back(std::move(wall));
  for (ProfileSample& sample : profile.samples) {
    if (sample.event < merged.size() && merged[sample.event]) sample.event = index;
  }
  for (ProfileSampleGroup& group : profile.sample_groups) {
    if (group.event < merged.size() && merged[group.event]) group.event = index;
  }
}

std::uint64_t ThreadTime::off_cpu_total() const noexcept {
  return std::accumulate(off_cpu_ns.begin(), off_cpu_ns.end(), std::uint64_t{0});
}

std::vector<ThreadTime> thread_times(const Profile& profile) {
  // What each event's samples are: on-CPU time, off-CPU time, or neither (counts of cycles).
  enum class Kind { none, on_cpu, off_cpu, wall };
  std::vector<Kind> kinds;
  for (const ProfileEvent& event : profile.events) {
    kinds.push_back(event.off_cpu                        ? Kind::off_cpu
                    : event.name == wall_time_event_name ? Kind::wall
                    : event_period_is_ns(event.name)     ? Kind::on_cpu
                                                         : Kind::none);
  }
  std::vector<ThreadTime> times;
  std::unordered_map<std::uint32_t, std::size_t> by_tid;
  auto add = [&](std::uint32_t thread, std::uint32_t event, ThreadState state,
                 std::uint64_t samples, std::uint64_t period) {
    if (event >= kinds.size() || kinds[event] == Kind::none || thread >= profile.threads.size()) {
      return;
    }
    const ProfileThread& t = profile.threads[thread];
    auto [found, added] = by_tid.try_emplace(t.tid, times.size());
    if (added) times.push_back(ThreadTime{t.pid, t.tid, t.comm});
    ThreadTime& time = times[found->second];
    time.comm = t.comm;
    if (state == ThreadState::on_cpu) {
      time.on_cpu_ns += period;
      time.on_cpu_samples += samples;
    } else {
      time.off_cpu_ns[static_cast<std::size_t>(state) % time.off_cpu_ns.size()] += period;
      time.off_cpu_intervals += samples;
    }
  };
  for (const ProfileSample& sample : profile.samples) {
    add(sample.thread, sample.event, sample.state, 1, sample.period);
  }
  for (const ProfileSampleGroup& group : profile.sample_groups) {
    add(group.thread, group.event, group.state, group.samples, group.period);
  }
  std::sort(times.begin(), times.end(), [](const ThreadTime& a, const ThreadTime& b) {
    if (a.total() != b.total()) return a.total() > b.total();
    return a.tid < b.tid;
  });
  return times;
}

std::string render_thread_times(const Profile& profile) {
  if (!profile_has_off_cpu(profile)) return {};
  std::vector<ThreadTime> times = thread_times(profile);
  bool on_cpu_clock = std::any_of(times.begin(), times.end(),
                                  [](const ThreadTime& t) { return t.on_cpu_samples != 0; });
  // The state columns the recording has.
  std::vector<ThreadState> states;
  for (std::size_t s = 1; s < 8; ++s) {
    for (const ThreadTime& time : times) {
      if (time.off_cpu_ns[s] != 0) {
        states.push_back(static_cast<ThreadState>(s));
        break;
      }
    }
  }
  auto ms = [](std::uint64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6); };
  fmt::memory_buffer out;
  auto put = [&](std::string_view text) { out.append(text); };
  put("#\n# Per-thread time (ms): on-CPU from the clock samples, off-CPU from the recorded\n");
  put("# blocking intervals by state; Total is their sum, the thread's wall-clock time when "
      "every\n");
  put("# switch was recorded (record --wall).\n#\n");
  std::size_t comm_width = 7;
  for (const ThreadTime& time : times) comm_width = std::max(comm_width, time.comm.size());
  fmt::format_to(std::back_inserter(out), "# {:>15}  {:<{}}  {:>12}  {:>12}", "Pid/Tid", "Command",
                 comm_width, on_cpu_clock ? "On-CPU" : "On-CPU(n/a)", "Off-CPU");
  for (ThreadState state : states) {
    fmt::format_to(std::back_inserter(out), "  {:>15}", thread_state_name(state));
  }
  fmt::format_to(std::back_inserter(out), "  {:>12}  {:>8}  {:>9}\n", "Total", "Off-CPU%",
                 "Intervals");
  for (const ThreadTime& time : times) {
    std::uint64_t total = time.total();
    double off_share =
        total == 0 ? 0.0
                   : 100.0 * static_cast<double>(time.off_cpu_total()) / static_cast<double>(total);
    fmt::format_to(std::back_inserter(out), "  {:>15}  {:<{}}  {:>12}  {:>12}",
                   fmt::format("{}/{}", time.pid, time.tid), time.comm, comm_width,
                   on_cpu_clock ? ms(time.on_cpu_ns) : std::string("-"), ms(time.off_cpu_total()));
    for (ThreadState state : states) {
      fmt::format_to(std::back_inserter(out), "  {:>15}",
                     ms(time.off_cpu_ns[static_cast<std::size_t>(state)]));
    }
    fmt::format_to(std::back_inserter(out), "  {:>12}  {:>7.2f}%  {:>9}\n", ms(total), off_share,
                   time.off_cpu_intervals);
  }
  return fmt::to_string(out);
}

}  // namespace perfscope
