#include "perfscope/core/reading.hpp"

#include "perfscope/abi/perf_event_attr.hpp"

namespace perfscope {

namespace rf = abi::read_format;

std::size_t read_size_bytes(std::uint64_t read_format, std::size_t members) noexcept {
  std::size_t per_value = 1 + ((read_format & rf::id) ? 1 : 0) + ((read_format & rf::lost) ? 1 : 0);
  std::size_t header = ((read_format & rf::total_time_enabled) ? 1 : 0) +
                       ((read_format & rf::total_time_running) ? 1 : 0);
  if (read_format & rf::group) return (1 + header + per_value * members) * sizeof(std::uint64_t);
  return (header + per_value) * sizeof(std::uint64_t);
}

std::size_t decode_read(std::span<const std::uint64_t> words, std::uint64_t read_format,
                        std::span<Reading> out) noexcept {
  std::size_t at = 0;
  auto next = [&](std::uint64_t& value) {
    if (at >= words.size()) return false;
    value = words[at++];
    return true;
  };
  auto member = [&](Reading& reading) {
    if (!next(reading.value)) return false;
    if ((read_format & rf::id) && !next(reading.id)) return false;
    if ((read_format & rf::lost) && !next(reading.lost)) return false;
    return true;
  };
  if (read_format & rf::group) {
    std::uint64_t count = 0, enabled = 0, running = 0;
    if (!next(count)) return 0;
    if ((read_format & rf::total_time_enabled) && !next(enabled)) return 0;
    if ((read_format & rf::total_time_running) && !next(running)) return 0;
    if (count > out.size()) return 0;
    for (std::size_t i = 0; i < count; ++i) {
      out[i] = Reading{};
      out[i].enabled = enabled;
      out[i].running = running;
      if (!member(out[i])) return 0;
    }
    return static_cast<std::size_t>(count);
  }
  if (out.empty()) return 0;
  Reading reading{};
  if (!next(reading.value)) return 0;
  if ((read_format & rf::total_time_enabled) && !next(reading.enabled)) return 0;
  if ((read_format & rf::total_time_running) && !next(reading.running)) return 0;
  if ((read_format & rf::id) && !next(reading.id)) return 0;
  if ((read_format & rf::lost) && !next(reading.lost)) return 0;
  out[0] = reading;
  return 1;
}

ScaledCount scale_delta(const Reading& delta, const Reading& cumulative) noexcept {
  if (delta.enabled == 0 && delta.running == 0 && cumulative.running != 0) {
    ScaledCount idle;
    idle.value = static_cast<double>(delta.value);
    idle.fraction_running = 1.0;
    idle.status = CountStatus::counted;
    return idle;
  }
  return scale(delta);
}

}  // namespace perfscope
