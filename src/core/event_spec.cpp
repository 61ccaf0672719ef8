#include "perfscope/core/event_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <limits>

#include "core/event_spec_parser.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/event_names.hpp"
#include "perfscope/sys/kernel_files.hpp"

// The event grammar lives in four files: this one (errors, modifiers, helpers the others share),
// event_spec_grammar.cpp, event_spec_resolution.cpp and event_spec_printing.cpp.

namespace perfscope {

namespace flag = abi::attr_flag;
namespace sf = abi::sample_format;

EventSpecError::EventSpecError(std::string message, std::string input, std::size_t position)
    : std::invalid_argument(std::move(message)), input_(std::move(input)), position_(position) {}

std::string EventSpecError::with_caret() const {
  return fmt::format("{}\n  {}\n  {}^", what(), input_, std::string(position_, ' '));
}

long long tracepoint_id(std::string_view subsystem, std::string_view name) {
  auto root = sys::tracefs_root();
  if (!root) return -ENODEV;
  auto id = sys::read_integer_file(fmt::format("{}/events/{}/{}/id", *root, subsystem, name));
  if (!id) return errno == EACCES ? -EACCES : -ENOENT;
  return *id;
}

bool apply_modifiers(std::string_view modifiers, EventSpec& spec, std::size_t& bad) {
  bool user = false, kernel = false, hypervisor = false, guest = false, host = false;
  unsigned precise = spec.attr.precise_ip();
  auto& attr = spec.attr;
  for (std::size_t i = 0; i < modifiers.size(); ++i) {
    switch (modifiers[i]) {
      case 'u': user = true; break;
      case 'k': kernel = true; break;
      case 'h': hypervisor = true; break;
      case 'G': guest = true; break;
      case 'H': host = true; break;
      case 'I': attr.set_flag(flag::exclude_idle); break;
      case 'p':
        if (precise == 3) {
          bad = i;
          return false;
        }
        ++precise;
        break;
      case 'P': precise = 3; break;
      case 'D': attr.set_flag(flag::pinned); break;
      case 'e': attr.set_flag(flag::exclusive); break;
      case 'S': attr.set_sample_type(attr.raw().sample_type | sf::read); break;
      case 'W': spec.weak_group = true; break;
      default: bad = i; return false;
    }
  }
  if (user || kernel || hypervisor) {
    attr.set_flag(flag::exclude_user, !user)
        .set_flag(flag::exclude_kernel, !kernel)
        .set_flag(flag::exclude_hv, !hypervisor);
  }
  if (guest || host) {
    attr.set_flag(flag::exclude_guest, !guest).set_flag(flag::exclude_host, !host);
  }
  attr.set_precise_ip(precise);
  return true;
}

namespace event_grammar {

bool parse_number(std::string_view text, std::uint64_t& value) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  return ec == std::errc{} && ptr == text.data() + text.size();
}

namespace {

// The closest of `candidates` to `name`, when it is close enough to be a likely typo.
std::string nearest(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const auto& candidate : candidates) {
    std::size_t distance = edit_distance(name, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (best_distance <= std::max<std::size_t>(2, name.size() / 3)) return best;
  return {};
}

}  // namespace

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best = nearest(name, candidates);
  return best.empty() ? std::string() : fmt::format("; did you mean '{}'?", best);
}

std::string join(const std::vector<std::string>& words, std::string_view separator) {
  std::string text;
  for (const auto& word : words) {
    if (!text.empty()) text += separator;
    text += word;
  }
  return text;
}

// The generic hardware or cache event `name` means on a core PMU, if it is one.
std::optional<EventAttr> core_generic_event(const Pmu& pmu, std::string_view name) {
  if (!pmu.core) return std::nullopt;
  auto generic = lookup_generic_event(name);
  if (!generic || (generic->type() != static_cast<std::uint32_t>(abi::EventType::hardware) &&
                   generic->type() != static_cast<std::uint32_t>(abi::EventType::hw_cache))) {
    return std::nullopt;
  }
  return generic;
}

}  // namespace event_grammar

}  // namespace perfscope
