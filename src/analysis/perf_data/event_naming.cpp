#include "perfscope/analysis/perf_data/event_naming.hpp"

#include <fmt/format.h>

#include "perfscope/core/event_names.hpp"

namespace perfscope {

namespace {

namespace flag = abi::attr_flag;

// evsel__add_modifiers: ":u", ":k", ":ppp", and ":H"/":G" unless excluding the guest is what the
// other modifiers imply.
std::string modifiers(const abi::PerfEventAttr& attr) {
  std::string out;
  auto excluded = [&](std::uint64_t bit) { return (attr.flags & bit) != 0; };
  bool exclude_guest_default = false;
  if (excluded(flag::exclude_kernel) || excluded(flag::exclude_user) ||
      excluded(flag::exclude_hv)) {
    if (!excluded(flag::exclude_kernel)) out += 'k';
    if (!excluded(flag::exclude_user)) out += 'u';
    if (!excluded(flag::exclude_hv)) out += 'h';
    exclude_guest_default = true;
  }
  auto precise =
      static_cast<std::size_t>((attr.flags & flag::precise_ip_mask) >> flag::precise_ip_shift);
  if (precise != 0) {
    out.append(precise, 'p');
    exclude_guest_default = true;
  }
  if (excluded(flag::exclude_host) || excluded(flag::exclude_guest) == exclude_guest_default) {
    if (!excluded(flag::exclude_host)) out += 'H';
    if (!excluded(flag::exclude_guest)) out += 'G';
  }
  return out.empty() ? out : ":" + out;
}

}  // namespace

std::string derived_event_name(const abi::PerfEventAttr& attr,
                               std::span<const TracingDataEvent> tracepoints) {
  using abi::EventType;
  switch (static_cast<EventType>(attr.type)) {
    case EventType::tracepoint:
      for (const auto& event : tracepoints) {
        if (event.id == attr.config) return event.name;
      }
      return "unknown tracepoint";
    case EventType::hardware:
    case EventType::software:
    case EventType::hw_cache: {
      std::string name = generic_event_name(attr);
      if (name.empty()) {
        name = attr.type == static_cast<std::uint32_t>(EventType::hardware) ? "unknown-hardware"
               : attr.type == static_cast<std::uint32_t>(EventType::software)
                   ? "unknown-software"
                   : "unknown-ext-hardware-cache-type";
      }
      return name + modifiers(attr);
    }
    case EventType::raw: return fmt::format("raw {:#x}", attr.config) + modifiers(attr);
    case EventType::breakpoint: {
      std::string name = fmt::format("mem:{:#x}:", attr.config1);
      if (attr.bp_type & abi::breakpoint_type::read) name += 'r';
      if (attr.bp_type & abi::breakpoint_type::write) name += 'w';
      if (attr.bp_type & abi::breakpoint_type::execute) name += 'x';
      return name + modifiers(attr);
    }
  }
  return fmt::format("unknown attr type: {}", attr.type);
}

}  // namespace perfscope
