#include "perfscope/core/event_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace perfscope {

namespace {

using abi::EventType;
using HW = abi::HardwareEvent;
using SW = abi::SoftwareEvent;

constexpr std::uint64_t hw(HW e) { return static_cast<std::uint64_t>(e); }
constexpr std::uint64_t sw(SW e) { return static_cast<std::uint64_t>(e); }

constexpr std::array hardware_names{
    GenericEventName{"cycles", "cpu-cycles", EventType::hardware, hw(HW::cpu_cycles)},
    GenericEventName{"instructions", "", EventType::hardware, hw(HW::instructions)},
    GenericEventName{"cache-references", "", EventType::hardware, hw(HW::cache_references)},
    GenericEventName{"cache-misses", "", EventType::hardware, hw(HW::cache_misses)},
    GenericEventName{"branches", "branch-instructions", EventType::hardware,
                     hw(HW::branch_instructions)},
    GenericEventName{"branch-misses", "", EventType::hardware, hw(HW::branch_misses)},
    GenericEventName{"bus-cycles", "", EventType::hardware, hw(HW::bus_cycles)},
    GenericEventName{"stalled-cycles-frontend", "idle-cycles-frontend", EventType::hardware,
                     hw(HW::stalled_cycles_frontend)},
    GenericEventName{"stalled-cycles-backend", "idle-cycles-backend", EventType::hardware,
                     hw(HW::stalled_cycles_backend)},
    GenericEventName{"ref-cycles", "", EventType::hardware, hw(HW::ref_cpu_cycles)},
};

constexpr std::array software_names{
    GenericEventName{"cpu-clock", "", EventType::software, sw(SW::cpu_clock)},
    GenericEventName{"task-clock", "", EventType::software, sw(SW::task_clock)},
    GenericEventName{"page-faults", "faults", EventType::software, sw(SW::page_faults)},
    GenericEventName{"context-switches", "cs", EventType::software, sw(SW::context_switches)},
    GenericEventName{"cpu-migrations", "migrations", EventType::software, sw(SW::cpu_migrations)},
    GenericEventName{"minor-faults", "", EventType::software, sw(SW::page_faults_min)},
    GenericEventName{"major-faults", "", EventType::software, sw(SW::page_faults_maj)},
    GenericEventName{"alignment-faults", "", EventType::software, sw(SW::alignment_faults)},
    GenericEventName{"emulation-faults", "", EventType::software, sw(SW::emulation_faults)},
    GenericEventName{"dummy", "", EventType::software, sw(SW::dummy)},
    GenericEventName{"bpf-output", "", EventType::software, sw(SW::bpf_output)},
    GenericEventName{"cgroup-switches", "", EventType::software, sw(SW::cgroup_switches)},
};

struct Spelling {
  std::string_view text;
  std::uint64_t value;
};

// perf's tables (tools/perf/util/evsel.c: evsel__hw_cache and friends), canonical first.
constexpr std::array cache_spellings{
    Spelling{"L1-dcache", 0}, Spelling{"l1-d", 0},
    Spelling{"l1d", 0},       Spelling{"L1-data", 0},
    Spelling{"L1-icache", 1}, Spelling{"l1-i", 1},
    Spelling{"l1i", 1},       Spelling{"L1-instruction", 1},
    Spelling{"LLC", 2},       Spelling{"L2", 2},
    Spelling{"dTLB", 3},      Spelling{"d-tlb", 3},
    Spelling{"Data-TLB", 3},  Spelling{"iTLB", 4},
    Spelling{"i-tlb", 4},     Spelling{"Instruction-TLB", 4},
    Spelling{"branch", 5},    Spelling{"branches", 5},
    Spelling{"bpu", 5},       Spelling{"btb", 5},
    Spelling{"bpc", 5},       Spelling{"node", 6},
};
constexpr std::array op_spellings{
    Spelling{"load", 0},
    Spelling{"loads", 0},
    Spelling{"read", 0},
    Spelling{"store", 1},
    Spelling{"stores", 1},
    Spelling{"write", 1},
    Spelling{"prefetch", 2},
    Spelling{"prefetches", 2},
    Spelling{"speculative-read", 2},
    Spelling{"speculative-load", 2},
};
constexpr std::array result_spellings{
    Spelling{"refs", 0},   Spelling{"Reference", 0}, Spelling{"ops", 0},
    Spelling{"access", 0}, Spelling{"misses", 1},    Spelling{"miss", 1},
};
constexpr std::array<std::string_view, 7> canonical_cache{"L1-dcache", "L1-icache", "LLC", "dTLB",
                                                          "iTLB",      "branch",    "node"};
constexpr std::array<std::string_view, 3> canonical_op_access{"loads", "stores", "prefetches"};
constexpr std::array<std::string_view, 3> canonical_op_miss{"load-misses", "store-misses",
                                                            "prefetch-misses"};

template <std::size_t N>
std::optional<std::pair<std::uint64_t, std::string_view>> match_prefix(
    std::string_view text, const std::array<Spelling, N>& spellings) {
  // Longest spelling first so that "branches" wins over "branch".
  std::optional<std::pair<std::uint64_t, std::string_view>> best;
  std::size_t best_length = 0;
  for (const auto& spelling : spellings) {
    if (text.size() >= spelling.text.size() &&
        text.substr(0, spelling.text.size()) == spelling.text &&
        (text.size() == spelling.text.size() || text[spelling.text.size()] == '-') &&
        spelling.text.size() > best_length) {
      best_length = spelling.text.size();
      best = std::pair{spelling.value, text.substr(spelling.text.size())};
    }
  }
  return best;
}

std::optional<EventAttr> lookup_cache_event(std::string_view name) {
  auto cache = match_prefix(name, cache_spellings);
  if (!cache) return std::nullopt;
  std::string_view rest = cache->second;
  if (rest.empty() || rest[0] != '-') return std::nullopt;
  rest.remove_prefix(1);
  auto op = match_prefix(rest, op_spellings);
  if (!op) return std::nullopt;
  std::uint64_t result = 0;
  rest = op->second;
  if (!rest.empty()) {
    rest.remove_prefix(1);  // the '-'
    auto found = std::find_if(result_spellings.begin(), result_spellings.end(),
                              [&](const Spelling& s) { return s.text == rest; });
    if (found == result_spellings.end()) return std::nullopt;
    result = found->value;
  }
  return EventAttr::hw_cache(static_cast<abi::CacheId>(cache->first),
                             static_cast<abi::CacheOp>(op->first),
                             static_cast<abi::CacheResult>(result));
}

}  // namespace

std::span<const GenericEventName> hardware_event_names() noexcept { return hardware_names; }
std::span<const GenericEventName> software_event_names() noexcept { return software_names; }

std::vector<std::string> hw_cache_event_names() {
  std::vector<std::string> names;
  for (std::size_t id = 0; id < canonical_cache.size(); ++id) {
    for (std::size_t op = 0; op < canonical_op_access.size(); ++op) {
      names.push_back(fmt::format("{}-{}", canonical_cache[id], canonical_op_access[op]));
      names.push_back(fmt::format("{}-{}", canonical_cache[id], canonical_op_miss[op]));
    }
  }
  return names;
}

std::optional<EventAttr> lookup_generic_event(std::string_view name) {
  for (auto table : {hardware_event_names(), software_event_names()}) {
    for (const auto& entry : table) {
      if (name == entry.name || (!entry.alias.empty() && name == entry.alias)) {
        return EventAttr{}
            .set_type(static_cast<std::uint32_t>(entry.type))
            .set_config(entry.config);
      }
    }
  }
  return lookup_cache_event(name);
}

std::string generic_event_name(const abi::PerfEventAttr& attr) {
  auto type = static_cast<EventType>(attr.type);
  std::uint64_t config = attr.config & abi::hw_event_mask;
  auto find = [&](std::span<const GenericEventName> table) -> std::string {
    for (const auto& entry : table) {
      if (entry.config == config) return std::string(entry.name);
    }
    return {};
  };
  switch (type) {
    case EventType::hardware: return find(hardware_event_names());
    case EventType::software: return find(software_event_names());
    case EventType::hw_cache: {
      std::uint64_t id = config & 0xff, op = (config >> 8) & 0xff, result = (config >> 16) & 0xff;
      if (id >= canonical_cache.size() || op >= 3 || result >= 2) return {};
      return fmt::format("{}-{}", canonical_cache[id],
                         result ? canonical_op_miss[op] : canonical_op_access[op]);
    }
    case EventType::raw: return fmt::format("r{:x}", attr.config);
    case EventType::breakpoint: {
      std::string access;
      if (attr.bp_type & abi::breakpoint_type::read) access += 'r';
      if (attr.bp_type & abi::breakpoint_type::write) access += 'w';
      if (attr.bp_type & abi::breakpoint_type::execute) access += 'x';
      return fmt::format("mem:{:#x}/{}:{}", attr.config1, attr.config2, access);
    }
    default: return {};
  }
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace perfscope
