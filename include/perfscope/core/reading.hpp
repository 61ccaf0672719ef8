// What read(2) on a perf fd returns, decoded according to read_format, and the scaling of a
// multiplexed count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "perfscope/export.hpp"

namespace perfscope {

struct Reading {
  std::uint64_t value = 0;
  std::uint64_t enabled = 0;  // ns the event was enabled (TOTAL_TIME_ENABLED)
  std::uint64_t running = 0;  // ns it was on the PMU (TOTAL_TIME_RUNNING)
  std::uint64_t id = 0;       // PERF_FORMAT_ID
  std::uint64_t lost = 0;     // PERF_FORMAT_LOST

  Reading& operator+=(const Reading& other) noexcept {
    value += other.value;
    enabled += other.enabled;
    running += other.running;
    lost += other.lost;
    return *this;
  }
  // Difference of two cumulative readings of the same event (interval mode).
  Reading since(const Reading& earlier) const noexcept {
    return {value - earlier.value, enabled - earlier.enabled, running - earlier.running, id,
            lost - earlier.lost};
  }
};

// Bytes one read(2) returns for this read_format and number of group members (1 for a single
// event; ignored without PERF_FORMAT_GROUP).
PERFSCOPE_EXPORT std::size_t read_size_bytes(std::uint64_t read_format,
                                             std::size_t members) noexcept;

// Decodes `words` (as read from the fd) into `out`, one Reading per member. Returns the number of
// members decoded, or 0 when the buffer is too short or holds more members than `out` can take.
PERFSCOPE_EXPORT std::size_t decode_read(std::span<const std::uint64_t> words,
                                         std::uint64_t read_format,
                                         std::span<Reading> out) noexcept;

enum class CountStatus {
  counted,      // ran the whole time it was enabled
  multiplexed,  // ran part of the time: the value is scaled
  not_counted,  // enabled but never ran (or never enabled)
};

struct ScaledCount {
  double value = 0;             // raw value * enabled / running
  double fraction_running = 0;  // running / enabled, 0..1
  CountStatus status = CountStatus::not_counted;
};

// Inline: CountingSession::read() scales every count right after its read(2), where an
// out-of-line call measurably adds to the cost of a read (bench/group_read_benchmark).
inline ScaledCount scale(const Reading& reading) noexcept {
  ScaledCount result;
  if (reading.running == 0) {
    // Never on the PMU. A zero-time software event that was enabled for no time at all (enabled
    // == 0) is equally unknown: nothing was measured.
    result.status = CountStatus::not_counted;
    return result;
  }
  if (reading.enabled == 0 || reading.running >= reading.enabled) {
    result.value = static_cast<double>(reading.value);
    result.fraction_running = 1.0;
    result.status = CountStatus::counted;
    return result;
  }
  result.fraction_running =
      static_cast<double>(reading.running) / static_cast<double>(reading.enabled);
  result.value = static_cast<double>(reading.value) / result.fraction_running;
  result.status = CountStatus::multiplexed;
  return result;
}

// perf stat --no-scale: the status and share of `scaled`, with the value as the PMU counted it
// while the event was on it (no extrapolation to the time it was off).
inline ScaledCount as_measured(const Reading& reading, ScaledCount scaled) noexcept {
  if (scaled.status == CountStatus::multiplexed) scaled.value = static_cast<double>(reading.value);
  return scaled;
}

// Scales the change between two readings of one event (interval mode). A per-task event whose
// task did not run in the interval has no enabled time: that is an exact zero, not "not
// counted", as long as the event has run at some point (`cumulative`).
PERFSCOPE_EXPORT ScaledCount scale_delta(const Reading& delta, const Reading& cumulative) noexcept;

}  // namespace perfscope
