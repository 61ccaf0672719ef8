#include "perfscope/engine/derived_metrics.hpp"

#include <algorithm>
#include <string_view>

#include "perfscope/core/event_names.hpp"

namespace perfscope {

namespace {

// "u" of "cycles:u": a ratio pairs only events counted in the same modes (instructions:u over
// cycles:k, or over cycles of user and kernel, would be meaningless).
std::string_view modifiers_of(std::string_view name) {
  auto colon = name.find(':');
  return colon == std::string_view::npos ? std::string_view{} : name.substr(colon + 1);
}

const EventCount* find_counted(std::span<const EventCount> counts, std::string_view a,
                               std::string_view b = {}) {
  for (const auto& count : counts) {
    auto name = event_name_without_modifiers(count.name);
    if ((name == a || (!b.empty() && name == b)) && count.supported &&
        count.scaled.status != CountStatus::not_counted) {
      return &count;
    }
  }
  return nullptr;
}

const EventCount* find_counted_alike(std::span<const EventCount> counts, std::string_view modifiers,
                                     std::string_view a, std::string_view b = {}) {
  for (const auto& count : counts) {
    auto name = event_name_without_modifiers(count.name);
    if ((name == a || (!b.empty() && name == b)) && modifiers_of(count.name) == modifiers &&
        count.supported && count.scaled.status != CountStatus::not_counted) {
      return &count;
    }
  }
  return nullptr;
}

}  // namespace

bool is_time_event(const EventCount& count) {
  auto name = event_name_without_modifiers(count.name);
  return name == "task-clock" || name == "cpu-clock";
}

std::optional<DerivedMetric> derived_metric(std::span<const EventCount> counts, std::size_t index,
                                            double elapsed_ns) {
  const EventCount& count = counts[index];
  if (!count.supported || count.scaled.status == CountStatus::not_counted) return std::nullopt;
  auto name = event_name_without_modifiers(count.name);
  auto modifiers = modifiers_of(count.name);
  double value = count.scaled.value;
  const EventCount* clock = find_counted(counts, "task-clock");
  double clock_seconds = clock ? clock->scaled.value / 1e9 : 0;

  if (name == "task-clock") {
    if (elapsed_ns <= 0) return std::nullopt;
    return DerivedMetric{value / elapsed_ns, "CPUs utilized"};
  }
  if (name == "instructions") {
    if (const auto* cycles = find_counted_alike(counts, modifiers, "cycles", "cpu-cycles");
        cycles && cycles->scaled.value > 0) {
      return DerivedMetric{value / cycles->scaled.value, "insn per cycle"};
    }
    return std::nullopt;
  }
  if (name == "branch-misses") {
    if (const auto* branches =
            find_counted_alike(counts, modifiers, "branches", "branch-instructions");
        branches && branches->scaled.value > 0) {
      return DerivedMetric{100.0 * value / branches->scaled.value, "% of all branches"};
    }
    return std::nullopt;
  }
  if (name == "cache-misses") {
    if (const auto* references = find_counted_alike(counts, modifiers, "cache-references");
        references && references->scaled.value > 0) {
      return DerivedMetric{100.0 * value / references->scaled.value, "% of all cache refs"};
    }
    return std::nullopt;
  }
  if (name == "cycles" || name == "cpu-cycles") {
    if (clock_seconds > 0) return DerivedMetric{value / clock_seconds / 1e9, "GHz"};
    return std::nullopt;
  }
  if (is_time_event(count)) return std::nullopt;
  if (clock_seconds > 0) {
    double rate = value / clock_seconds;
    if (rate >= 1e9) return DerivedMetric{rate / 1e9, "G/sec"};
    if (rate >= 1e6) return DerivedMetric{rate / 1e6, "M/sec"};
    if (rate >= 1e3) return DerivedMetric{rate / 1e3, "K/sec"};
    return DerivedMetric{rate, "/sec"};
  }
  return std::nullopt;
}

}  // namespace perfscope
