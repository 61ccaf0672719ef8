#include <fmt/format.h>

#include "core/event_spec_parser.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/event_names.hpp"

// Specs written back in the grammar's canonical spelling (canonical_event_string): what parses to
// the same attr, as perf would print it.

namespace perfscope {

namespace flag = abi::attr_flag;
namespace sf = abi::sample_format;

namespace {

using event_grammar::core_generic_event;
using event_grammar::join;

std::string modifier_suffix(const EventSpec& spec) {
  const auto& attr = spec.attr;
  std::string letters;
  bool exclude_user = attr.has(flag::exclude_user), exclude_kernel = attr.has(flag::exclude_kernel),
       exclude_hv = attr.has(flag::exclude_hv);
  if ((exclude_user || exclude_kernel || exclude_hv) &&
      !(exclude_user && exclude_kernel && exclude_hv)) {
    if (!exclude_user) letters += 'u';
    if (!exclude_kernel) letters += 'k';
    if (!exclude_hv) letters += 'h';
  }
  bool exclude_guest = attr.has(flag::exclude_guest), exclude_host = attr.has(flag::exclude_host);
  if (exclude_host && !exclude_guest) letters += 'G';
  if (exclude_guest && !exclude_host) letters += 'H';
  if (attr.has(flag::exclude_idle)) letters += 'I';
  letters.append(attr.precise_ip(), 'p');
  if (attr.has(flag::pinned)) letters += 'D';
  if (attr.has(flag::exclusive)) letters += 'e';
  if (attr.raw().sample_type & sf::read) letters += 'S';
  if (spec.weak_group) letters += 'W';
  return letters.empty() ? std::string() : ":" + letters;
}

std::string sampling_terms(const EventSpec& spec) {
  const auto& raw = spec.attr.raw();
  std::vector<std::string> terms;
  if (raw.sample_period_or_freq != 0 || spec.attr.has(flag::freq)) {
    terms.push_back(fmt::format("{}={}", spec.attr.has(flag::freq) ? "freq" : "period",
                                raw.sample_period_or_freq));
  }
  if (!spec.call_graph.empty()) terms.push_back("call-graph=" + spec.call_graph);
  if (spec.call_graph == "dwarf" && spec.stack_size != 8192) {
    terms.push_back(fmt::format("stack-size={}", spec.stack_size));
  }
  return join(terms, ",");
}

std::string pmu_terms(const EventSpec& spec, const Pmu* pmu) {
  const auto& raw = spec.attr.raw();
  std::vector<std::string> terms;
  for (unsigned word = 0; word < 4; ++word) {
    std::uint64_t covered = 0;
    if (pmu) {
      for (const auto& field : pmu->format) {
        if (field.word == word) covered |= field.mask();
      }
    }
    std::uint64_t value = attr_config_word(raw, word);
    if (value & ~covered) {
      terms.push_back(word == 0 ? fmt::format("config={:#x}", value)
                                : fmt::format("config{}={:#x}", word, value));
    }
  }
  if (pmu) {
    for (const auto& field : pmu->format) {
      std::uint64_t value = field.extract(raw);
      if (value != 0) terms.push_back(fmt::format("{}={:#x}", field.name, value));
    }
  }
  if (std::string sampling = sampling_terms(spec); !sampling.empty()) terms.push_back(sampling);
  return join(terms, ",");
}

}  // namespace

std::string canonical_event_string(const EventSpec& spec, const PmuRegistry* pmus) {
  const PmuRegistry& registry = pmus ? *pmus : PmuRegistry::system();
  const auto& raw = spec.attr.raw();
  std::string base;
  auto type = static_cast<abi::EventType>(raw.type);
  if (type == abi::EventType::hardware || type == abi::EventType::hw_cache) {
    std::string generic = generic_event_name(raw);
    auto extended = static_cast<std::uint32_t>(raw.config >> abi::pmu_type_shift);
    if (extended != 0) {
      const Pmu* pmu = registry.find_by_type(extended);
      base = fmt::format("{}/{}/", pmu ? pmu->name : fmt::format("{}", extended), generic);
    } else {
      base = generic;
    }
  } else if (type == abi::EventType::software || type == abi::EventType::breakpoint) {
    base = generic_event_name(raw);
  } else if (type == abi::EventType::tracepoint) {
    base = spec.name;
  } else if (spec.probe_target && (spec.pmu == "uprobe" || spec.pmu == "kprobe")) {
    const Pmu* pmu = registry.find(spec.pmu);
    const PmuFormatField* retprobe = pmu ? pmu->find_term("retprobe") : nullptr;
    bool is_return = retprobe && retprobe->extract(raw) != 0;
    if (spec.pmu == "uprobe") {
      base = fmt::format("{}:{}:{:#x}", is_return ? "uretprobe" : "uprobe", *spec.probe_target,
                         raw.config2);
    } else if (spec.probe_target->empty()) {
      base = fmt::format("{}:{:#x}", is_return ? "kretprobe" : "kprobe", raw.config2);
    } else {
      base = fmt::format("{}:{}", is_return ? "kretprobe" : "kprobe", *spec.probe_target);
      if (raw.config2 != 0) base += fmt::format("+{:#x}", raw.config2);
    }
  } else if (type == abi::EventType::raw && spec.pmu.empty()) {
    base = generic_event_name(raw);
  } else {
    const Pmu* pmu = spec.pmu.empty() ? registry.find_by_type(raw.type) : registry.find(spec.pmu);
    std::string terms;
    if (pmu) {
      // Written as the PMU's named event when one encodes exactly these words, so that its
      // scale and unit come back with it.
      for (const auto& alias : pmu->aliases) {
        if (core_generic_event(*pmu, alias.name)) continue;  // parses as the generic event
        EventParseOptions options;
        options.pmus = &registry;
        try {
          auto named = parse_event_list(fmt::format("{}/{}/", pmu->name, alias.name), options);
          const auto& words = named.at(0).events.at(0).attr.raw();
          if (words.config == raw.config && words.config1 == raw.config1 &&
              words.config2 == raw.config2 && words.config3 == raw.config3) {
            terms = alias.name;
            if (std::string sampling = sampling_terms(spec); !sampling.empty()) {
              terms += "," + sampling;
            }
            break;
          }
        } catch (const EventSpecError&) {
          // An alias that needs a parameter (umask=?) encodes nothing by itself.
        }
      }
    }
    if (terms.empty()) terms = pmu_terms(spec, pmu);
    base = fmt::format("{}/{}/", pmu ? pmu->name : fmt::format("{}", raw.type), terms);
    return base + modifier_suffix(spec);
  }
  std::string terms = sampling_terms(spec);
  bool generic = type == abi::EventType::hardware || type == abi::EventType::hw_cache ||
                 type == abi::EventType::software;
  if (generic && !terms.empty()) {
    // Sampling settings of a generic event are written as its terms: cycles/period=1000/.
    if (base.ends_with('/')) {
      base.insert(base.size() - 1, "," + terms);
    } else {
      base = fmt::format("{}/{}/", base, terms);
    }
  }
  return base + modifier_suffix(spec);
}

}  // namespace perfscope
