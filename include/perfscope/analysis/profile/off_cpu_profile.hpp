// What a Profile says about time off the CPU: whether it has off-CPU samples, the wall-clock view
// (on-CPU clock samples and off-CPU intervals as one event, shares of wall time), and each
// thread's time split into on-CPU and off-CPU by state.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/analysis/profile/profile.hpp"

namespace perfscope {

// The unit of an event's periods is nanoseconds: the software clocks (cpu-clock, task-clock,
// with modifiers), off-CPU intervals and the merged wall time.
bool event_period_is_ns(std::string_view event_name) noexcept;

// True when the profile holds off-CPU samples (of an "offcpu-time" or a "wall-time" event).
bool profile_has_off_cpu(const Profile& profile) noexcept;

// The wall-clock view: the samples of the clock events (on-CPU time) and of the off-CPU event
// become samples of one event, "wall-time", whose period sums to each thread's on-CPU plus
// blocked time. Other events keep their samples. Throws std::invalid_argument, saying what to
// record instead, when there is no off-CPU event or no clock event to merge it with.
void merge_wall_time(Profile& profile);

struct ThreadTime {
  std::uint32_t pid = 0, tid = 0;
  std::string comm;             // its last
  std::uint64_t on_cpu_ns = 0;  // sum of the clock events' periods (0 without one)
  std::uint64_t on_cpu_samples = 0;
  std::array<std::uint64_t, 8> off_cpu_ns{};  // by ThreadState
  std::uint64_t off_cpu_intervals = 0;
  std::uint64_t off_cpu_total() const noexcept;
  std::uint64_t total() const noexcept { return on_cpu_ns + off_cpu_total(); }
};

// Per thread, largest total first.
std::vector<ThreadTime> thread_times(const Profile& profile);

// The "Per-thread time" section `report` prints after its tables: each thread's on-CPU and
// off-CPU milliseconds, the off-CPU part by state, and their sum (≈ the thread's wall-clock
// lifetime when every switch was recorded, as record --wall does). Empty without off-CPU samples.
std::string render_thread_times(const Profile& profile);

}  // namespace perfscope
