#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "core/event_spec_parser.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/abi/user_registers.hpp"
#include "perfscope/core/event_names.hpp"
#include "perfscope/sys/kernel_files.hpp"

// What the names and terms of an event list mean: PMU terms and aliases, call-graph modes,
// generic events (one copy per core PMU on hybrid systems), vendor names, tracepoints and their
// globs, breakpoints, uprobes and kprobes.

namespace perfscope::event_grammar {

namespace flag = abi::attr_flag;
namespace sf = abi::sample_format;

namespace {

bool has_glob(std::string_view text) { return text.find_first_of("*?[") != std::string_view::npos; }

bool glob_match(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

// Terms every PMU accepts besides its format/ terms.
constexpr std::array<std::string_view, 9> builtin_terms{"config",  "config1",    "config2",
                                                        "config3", "period",     "freq",
                                                        "name",    "call-graph", "stack-size"};

}  // namespace

const std::string& Parser::tracefs() {
  if (tracefs_root_.empty()) {
    auto root = sys::tracefs_root();
    if (!root) {
      fail(
          "tracefs is not mounted and cannot be mounted here (mount -t tracefs nodev "
          "/sys/kernel/tracing as root)",
          tracefs_at_);
    }
    tracefs_root_ = *root;
  }
  return tracefs_root_;
}

std::uint64_t Parser::number_or_fail(std::string_view term, const Part& value) {
  std::uint64_t number = 0;
  if (!parse_number(value.second, number)) {
    fail(fmt::format("term '{}' needs a number (decimal or 0x hex), not '{}'", term, value.second),
         value.first);
  }
  return number;
}

void Parser::apply_term(PmuEvent& event, std::string_view term, std::size_t term_at,
                        const std::optional<Part>& value) {
  auto& attr = event.spec.attr;
  if (term.starts_with("config") && term.size() <= 7 &&
      (term.size() == 6 || (term[6] >= '1' && term[6] <= '3'))) {
    if (!value) fail(fmt::format("term '{}' needs a value: {}=0x...", term, term), term_at);
    refuse_mixing_with_generic(event, term_at);
    unsigned word = term.size() == 6 ? 0 : static_cast<unsigned>(term[6] - '0');
    attr_config_word(attr.raw(), word) = number_or_fail(term, *value);
    event.format_used = true;
    return;
  }
  if (term == "period" || term == "freq" || term == "stack-size") {
    if (!value) fail(fmt::format("term '{}' needs a value: {}=N", term, term), term_at);
    std::uint64_t number = number_or_fail(term, *value);
    if (term == "period") {
      attr.set_sample_period(number);
    } else if (term == "freq") {
      attr.set_sample_freq(number);
    } else {
      if (number == 0 || number > 0xffff0 || number % 8 != 0) {
        fail("stack-size must be a multiple of 8 from 8 to 1048560 bytes", value->first);
      }
      event.spec.stack_size = static_cast<std::uint32_t>(number);
      if (event.spec.call_graph == "dwarf") attr.set_sample_stack_user(event.spec.stack_size);
    }
    return;
  }
  if (term == "name") {
    if (!value) fail("term 'name' needs a value: name=NAME", term_at);
    event.spec.name = std::string(value->second);
    return;
  }
  if (term == "call-graph") {
    if (!value) fail("term 'call-graph' needs a value: fp, dwarf, lbr or no", term_at);
    apply_call_graph(event.spec, *value);
    return;
  }
  if (!event.pmu) {
    fail(fmt::format("unknown term '{}'{} (a generic event takes period, freq, name, "
                     "call-graph and stack-size)",
                     term,
                     did_you_mean(term, {"period", "freq", "name", "call-graph", "stack-size"})),
         term_at);
  }
  if (const PmuFormatField* field = event.pmu->find_term(term)) {
    refuse_mixing_with_generic(event, term_at);
    std::uint64_t number = value ? number_or_fail(term, *value) : 1;
    std::string error = apply_pmu_format(*field, number, attr.raw());
    if (!error.empty()) fail(std::move(error), value ? value->first : term_at);
    event.format_used = true;
    std::erase_if(event.missing_parameters,
                  [&](const auto& missing) { return missing.first == term; });
    return;
  }
  if (!value) {
    // On a core PMU a generic name keeps its generic meaning even where sysfs has an alias of
    // that name: cpu_core/cycles/ then means what the hybrid copies of "cycles" mean.
    if (auto generic = core_generic_event(*event.pmu, term)) {
      if (event.format_used || event.generic) {
        fail(fmt::format("'{}' is a generic event; it cannot be combined with format terms or "
                         "another event in one '{}/.../'",
                         term, event.pmu->name),
             term_at);
      }
      std::uint64_t config = generic->config();
      if (pmus_.hybrid()) {
        config |= static_cast<std::uint64_t>(event.pmu->type) << abi::pmu_type_shift;
      }
      attr.set_type(generic->type()).set_config(config);
      event.generic = true;
      return;
    }
    if (const PmuAlias* alias = event.pmu->find_alias(term)) {
      refuse_mixing_with_generic(event, term_at);
      apply_alias(event, *alias, term_at);
      return;
    }
  }
  std::vector<std::string> candidates;
  for (const auto& field : event.pmu->format) candidates.push_back(field.name);
  for (const auto& alias : event.pmu->aliases) candidates.push_back(alias.name);
  for (auto builtin : builtin_terms) candidates.emplace_back(builtin);
  std::vector<std::string> terms;
  for (const auto& field : event.pmu->format) {
    terms.push_back(fmt::format("{} ({})", field.name, field.layout()));
  }
  fail(fmt::format(
           "unknown term '{}' for PMU '{}'{} (its terms: {}; also {}{})", term, event.pmu->name,
           did_you_mean(term, candidates), terms.empty() ? std::string("none") : join(terms, ", "),
           "config, config1, config2, config3, period, freq, name, call-graph",
           event.pmu->aliases.empty() ? std::string()
                                      : fmt::format("; events: {}",
                                                    [&] {
                                                      std::vector<std::string> names;
                                                      for (const auto& alias : event.pmu->aliases) {
                                                        names.push_back(alias.name);
                                                      }
                                                      return join(names, ", ");
                                                    }())),
       term_at);
}

void Parser::refuse_mixing_with_generic(const PmuEvent& event, std::size_t at) {
  if (event.generic) {
    fail(fmt::format("a generic event in '{}/.../' takes no format terms",
                     event.pmu ? event.pmu->name : event.spec.name),
         at);
  }
}

void Parser::apply_alias(PmuEvent& event, const PmuAlias& alias, std::size_t alias_at) {
  auto& attr = event.spec.attr;
  auto bad_alias = [&](const std::string& why) {
    fail(fmt::format("alias '{}' of PMU '{}' cannot be used: {} (events/{} reads '{}')", alias.name,
                     event.pmu->name, why, alias.name, alias.terms),
         alias_at);
  };
  std::string_view rest = alias.terms;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    auto equals = item.find('=');
    std::string term(item.substr(0, equals));
    std::string_view value = equals == std::string_view::npos ? "1" : item.substr(equals + 1);
    if (value == "?") {
      event.missing_parameters.emplace_back(term, alias_at);
      continue;
    }
    std::uint64_t number = 0;
    if (!parse_number(value, number)) bad_alias(fmt::format("'{}' is not a number", value));
    if (term == "config" || term == "config1" || term == "config2" || term == "config3") {
      unsigned word = term.size() == 6 ? 0 : static_cast<unsigned>(term[6] - '0');
      attr_config_word(attr.raw(), word) = number;
      continue;
    }
    if (term == "period") {
      attr.set_sample_period(number);
      continue;
    }
    const PmuFormatField* field = event.pmu->find_term(term);
    if (!field) bad_alias(fmt::format("the PMU has no term '{}'", term));
    std::string error = apply_pmu_format(*field, number, attr.raw());
    if (!error.empty()) bad_alias(error);
  }
  event.format_used = true;
  event.alias_name = alias.name;
  if (alias.scale) event.spec.scale = *alias.scale;
  event.spec.unit = alias.unit;
  event.spec.per_pkg = alias.per_pkg;
  event.spec.snapshot = alias.snapshot;
}

void Parser::apply_call_graph(EventSpec& spec, const Part& value) {
  auto& attr = spec.attr;
  std::string_view mode = value.second;
  // A later call-graph= replaces an earlier one.
  attr.set_sample_type(attr.raw().sample_type &
                       ~(sf::callchain | sf::regs_user | sf::stack_user | sf::branch_stack))
      .set_sample_regs_user(0)
      .set_sample_stack_user(0)
      .set_branch_sample_type(0)
      .set_flag(flag::exclude_callchain_user, false);
  if (mode == "fp") {
    attr.set_sample_type(attr.raw().sample_type | sf::callchain);
  } else if (mode == "dwarf") {
    std::uint64_t regs = abi::dwarf_unwind_register_mask();
    if (regs == 0) fail("call-graph=dwarf is not supported on this architecture", value.first);
    if (spec.stack_size == 0) spec.stack_size = 8192;
    attr.set_sample_type(attr.raw().sample_type | sf::callchain | sf::regs_user | sf::stack_user)
        .set_sample_regs_user(regs)
        .set_sample_stack_user(spec.stack_size);
    attr.set_flag(flag::exclude_callchain_user);
  } else if (mode == "lbr") {
    attr.set_sample_type(attr.raw().sample_type | sf::callchain | sf::branch_stack)
        .set_branch_sample_type(abi::branch_sample::user | abi::branch_sample::call_stack);
  } else if (mode != "no") {
    fail(fmt::format("call-graph must be fp, dwarf, lbr or no, not '{}'", mode), value.first);
  }
  spec.call_graph = std::string(mode);
}

std::vector<EventSpec> Parser::resolve(const std::vector<Part>& parts) {
  auto [name_at, name] = parts.front();
  if (name == "mem") return {resolve_breakpoint(parts)};
  if (name == "uprobe" || name == "uretprobe") return {resolve_uprobe(parts)};
  if (name == "kprobe" || name == "kretprobe") return {resolve_kprobe(parts)};
  if (name.find('/') != std::string_view::npos) {
    fail(fmt::format("unexpected '/' in '{}': a PMU event is written pmu/term=value,.../", name),
         name_at + name.find('/'));
  }
  if (auto generic = lookup_generic_event(name)) {
    auto specs = generic_specs(*generic, name);
    apply_parts_as_modifiers(parts, 1, specs);
    return specs;
  }
  std::uint64_t raw = 0;
  if (name.size() > 1 && name[0] == 'r' && parse_number(fmt::format("0x{}", name.substr(1)), raw)) {
    EventSpec spec;
    spec.attr = EventAttr::raw_event(raw);
    spec.name = std::string(name);
    std::vector<EventSpec> specs{std::move(spec)};
    apply_parts_as_modifiers(parts, 1, specs);
    return specs;
  }
  // libpfm4's fully qualified names have a double colon: skl::INST_RETIRED.ANY.
  if (parts.size() >= 3 && parts[1].second.empty() && vendor_) {
    std::string full = fmt::format("{}::{}", name, parts[2].second);
    if (auto specs = resolve_vendor(full, name_at)) {
      apply_parts_as_modifiers(parts, 3, *specs);
      return std::move(*specs);
    }
  }
  if (parts.size() >= 2 && !parts[1].second.empty() && tracepoint_subsystem_exists(parts[0])) {
    auto specs = resolve_tracepoints(parts[0], parts[1]);
    apply_parts_as_modifiers(parts, 2, specs);
    return specs;
  }
  if (auto specs = resolve_bare_alias(name)) {
    apply_parts_as_modifiers(parts, 1, *specs);
    return std::move(*specs);
  }
  if (auto specs = resolve_vendor(std::string(name), name_at)) {
    apply_parts_as_modifiers(parts, 1, *specs);
    return std::move(*specs);
  }
  fail(unknown_name_message(name), name_at);
}

std::vector<EventSpec> Parser::generic_specs(const EventAttr& attr, std::string_view name) {
  bool per_core_pmu = attr.type() == static_cast<std::uint32_t>(abi::EventType::hardware) ||
                      attr.type() == static_cast<std::uint32_t>(abi::EventType::hw_cache);
  // Only a hybrid system needs its core PMUs read: the common case costs one directory scan.
  auto core = per_core_pmu && pmus_.hybrid() ? pmus_.core_pmus() : std::vector<const Pmu*>{};
  std::vector<EventSpec> specs;
  if (core.size() <= 1) {
    EventSpec spec;
    spec.attr = attr;
    spec.name = std::string(name);
    specs.push_back(std::move(spec));
    return specs;
  }
  for (const Pmu* pmu : core) {
    EventSpec spec;
    spec.attr = attr;
    spec.attr.set_config(attr.config() |
                         (static_cast<std::uint64_t>(pmu->type) << abi::pmu_type_shift));
    spec.name = fmt::format("{}/{}/", pmu->name, name);
    spec.text = spec.name;
    spec.pmu = pmu->name;
    specs.push_back(std::move(spec));
  }
  return specs;
}

std::optional<std::vector<EventSpec>> Parser::resolve_bare_alias(std::string_view name) {
  std::vector<EventSpec> specs;
  for (const Pmu* pmu : pmus_.all()) {
    const PmuAlias* alias = pmu->find_alias(name);
    if (!alias) continue;
    PmuEvent event{pmu};
    event.spec.pmu = pmu->name;
    event.spec.attr.set_type(pmu->type);
    apply_alias(event, *alias, pos_ - name.size());
    if (!event.missing_parameters.empty()) continue;  // needs pmu/alias,param=N/
    event.spec.name = fmt::format("{}/{}/", pmu->name, alias->name);
    specs.push_back(std::move(event.spec));
  }
  if (specs.empty()) return std::nullopt;
  if (specs.size() > 1) {
    for (auto& spec : specs) spec.text = spec.name;  // one per PMU: tell their counts apart
  }
  return specs;
}

std::optional<std::vector<EventSpec>> Parser::resolve_vendor(const std::string& name,
                                                             std::size_t at) {
  if (!vendor_) return std::nullopt;
  VendorEventLookup lookup = vendor_->resolve(name);
  if (!lookup.error.empty()) fail(fmt::format("{}: {}", vendor_->source(), lookup.error), at);
  if (!lookup.event) return std::nullopt;
  EventSpec spec;
  spec.attr.set_type(lookup.event->type)
      .set_config(lookup.event->config)
      .set_config1(lookup.event->config1)
      .set_config2(lookup.event->config2);
  spec.name = name;
  if (const Pmu* pmu = pmus_.find_by_type(lookup.event->type);
      pmu && lookup.event->type >= abi::event_type_count) {
    spec.pmu = pmu->name;
  }
  return std::vector<EventSpec>{std::move(spec)};
}

bool Parser::tracepoint_subsystem_exists(const Part& subsystem) {
  tracefs_at_ = subsystem.first;
  std::string events = tracefs() + "/events";
  if (has_glob(subsystem.second)) {
    std::string pattern(subsystem.second);
    for (const auto& name : sys::list_directory(events)) {
      if (glob_match(pattern, name)) return true;
    }
    return false;
  }
  return sys::path_exists(fmt::format("{}/{}", events, subsystem.second));
}

std::vector<EventSpec> Parser::resolve_tracepoints(const Part& subsystem, const Part& event) {
  std::string events_dir = tracefs() + "/events";
  std::vector<std::string> subsystems;
  if (has_glob(subsystem.second)) {
    std::string pattern(subsystem.second);
    for (auto& name : sys::list_directory(events_dir)) {
      if (glob_match(pattern, name)) subsystems.push_back(std::move(name));
    }
  } else {
    subsystems.emplace_back(subsystem.second);
  }
  std::vector<EventSpec> specs;
  auto add = [&](const std::string& group, const std::string& name, std::int64_t id) {
    EventSpec spec;
    spec.attr = EventAttr::tracepoint(static_cast<std::uint64_t>(id));
    spec.name = fmt::format("{}:{}", group, name);
    spec.text = spec.name;
    specs.push_back(std::move(spec));
  };
  if (!has_glob(event.second) && subsystems.size() == 1) {
    std::string name(event.second);
    auto id = sys::read_integer_file(fmt::format("{}/{}/{}/id", events_dir, subsystems[0], name));
    if (!id) {
      int error = errno;
      if (error == EACCES) {
        fail(fmt::format("tracepoint '{}:{}' cannot be read here: {}/events is root-only "
                         "(run as root, or chmod the tracefs)",
                         subsystems[0], name, events_dir),
             subsystem.first);
      }
      std::vector<std::string> names;
      for (auto& candidate : sys::list_directory(fmt::format("{}/{}", events_dir, subsystems[0]))) {
        names.push_back(std::move(candidate));
      }
      fail(fmt::format("no tracepoint '{}:{}'{} (see {}/available_events)", subsystems[0], name,
                       did_you_mean(name, names), tracefs()),
           subsystem.first);
    }
    add(subsystems[0], name, *id);
    return specs;
  }
  // A glob: every tracepoint that matches, in directory order.
  std::string pattern(event.second);
  for (const auto& group : subsystems) {
    std::string dir = fmt::format("{}/{}", events_dir, group);
    for (const auto& name : sys::list_directory(dir)) {
      if (!glob_match(pattern, name)) continue;
      auto id = sys::read_integer_file(fmt::format("{}/{}/id", dir, name));
      if (id) add(group, name, *id);  // "enable" and "filter" are files without an id
    }
  }
  if (specs.empty()) {
    fail(fmt::format("no tracepoint matches '{}:{}' (see {}/available_events)", subsystem.second,
                     event.second, tracefs()),
         subsystem.first);
  }
  // Written text of each expanded event is its own name, so that counts are told apart.
  return specs;
}

EventSpec Parser::resolve_breakpoint(const std::vector<Part>& parts) {
  if (parts.size() < 2 || parts[1].second.empty()) {
    fail("a breakpoint needs an address: mem:ADDR[/LEN][:rwx]", parts.front().first);
  }
  auto [address_at, address_text] = parts[1];
  std::uint64_t length = sizeof(long);
  auto slash = address_text.find('/');
  std::uint64_t address = 0;
  if (!parse_number(address_text.substr(0, slash), address)) {
    fail("breakpoint address must be a number (0x... or decimal)", address_at);
  }
  if (slash != std::string_view::npos) {
    if (!parse_number(address_text.substr(slash + 1), length) || length == 0 || length > 8) {
      fail("breakpoint length must be 1 to 8 bytes", address_at + slash + 1);
    }
  }
  std::uint32_t access = abi::breakpoint_type::read_write;
  std::size_t next = 2;
  if (parts.size() > 2) {
    auto [access_at, access_text] = parts[2];
    bool is_access =
        !access_text.empty() && access_text.find_first_not_of("rwx") == std::string_view::npos;
    if (is_access) {
      access = 0;
      for (char c : access_text) {
        access |= c == 'r'   ? abi::breakpoint_type::read
                  : c == 'w' ? abi::breakpoint_type::write
                             : abi::breakpoint_type::execute;
      }
      if ((access & abi::breakpoint_type::execute) && access != abi::breakpoint_type::execute) {
        fail("an execute breakpoint (x) cannot also watch reads or writes", access_at);
      }
      next = 3;
    }
  }
  if (access == abi::breakpoint_type::execute) length = sizeof(long);
  std::vector<EventSpec> specs(1);
  specs[0].attr = EventAttr::breakpoint(address, length, access);
  specs[0].name = generic_event_name(specs[0].attr.raw());
  apply_parts_as_modifiers(parts, next, specs);
  return std::move(specs[0]);
}

const Pmu& Parser::probe_pmu(std::string_view pmu_name, const Part& at) {
  const Pmu* pmu = pmus_.find(pmu_name);
  if (!pmu) {
    fail(fmt::format("this kernel has no {} PMU ({}/{} is missing); {}s need "
                     "CONFIG_{}_EVENTS",
                     pmu_name, pmus_.root(), pmu_name, at.second,
                     pmu_name == "uprobe" ? "UPROBE" : "KPROBE"),
         at.first);
  }
  return *pmu;
}

void Parser::set_retprobe(EventSpec& spec, const Pmu& pmu, const Part& at) {
  const PmuFormatField* field = pmu.find_term("retprobe");
  if (!field) {
    fail(fmt::format("the {} PMU has no 'retprobe' term ({}/{}/format/retprobe), so return "
                     "probes cannot be placed",
                     pmu.name, pmus_.root(), pmu.name),
         at.first);
  }
  apply_pmu_format(*field, 1, spec.attr.raw());
}

EventSpec Parser::resolve_uprobe(const std::vector<Part>& parts) {
  const Part& head = parts[0];
  if (parts.size() < 3 || parts[1].second.empty() || parts[2].second.empty()) {
    fail(fmt::format("a {0} needs a file and a place in it: {0}:/path/to/binary:symbol[+offset] "
                     "or {0}:/path:0xFILE_OFFSET",
                     head.second),
         head.first);
  }
  const Pmu& pmu = probe_pmu("uprobe", head);
  auto [path_at, path] = parts[1];
  if (!sys::path_exists(std::string(path))) {
    fail(fmt::format("no such file '{}' to place a {} in", path, head.second), path_at);
  }
  auto [where_at, where] = parts[2];
  std::uint64_t offset = 0;
  if (!parse_number(where, offset)) {
    auto plus = where.find('+');
    std::string_view symbol = where.substr(0, plus);
    std::uint64_t extra = 0;
    if (plus != std::string_view::npos && !parse_number(where.substr(plus + 1), extra)) {
      fail("the offset after '+' must be a number (decimal or 0x hex)", where_at + plus + 1);
    }
    if (symbol.empty()) fail("a symbol name is missing before '+'", where_at);
    if (!symbols_) {
      fail(fmt::format("finding symbol '{}' in {} needs an ELF symbol resolver (a program links "
                       "perfscope_analysis and calls install_elf_symbol_resolver()); or give "
                       "the file offset: {}:{}:0x...",
                       symbol, path, head.second, path),
           where_at);
    }
    SymbolOffset found = symbols_->file_offset(std::string(path), symbol);
    if (!found.offset) fail(found.error, where_at);
    offset = *found.offset + extra;
  }
  EventSpec spec;
  spec.pmu = pmu.name;
  spec.attr.set_type(pmu.type);
  if (head.second == "uretprobe") set_retprobe(spec, pmu, head);
  spec.probe_target = std::make_shared<const std::string>(path);
  spec.attr.set_config1(reinterpret_cast<std::uintptr_t>(spec.probe_target->c_str()))
      .set_config2(offset);
  spec.name = fmt::format("{}:{}:{}", head.second, path, where);
  std::vector<EventSpec> specs{std::move(spec)};
  apply_parts_as_modifiers(parts, 3, specs);
  return std::move(specs[0]);
}

EventSpec Parser::resolve_kprobe(const std::vector<Part>& parts) {
  const Part& head = parts[0];
  if (parts.size() < 2 || parts[1].second.empty()) {
    fail(fmt::format("a {0} needs a place: {0}:function[+offset] or {0}:0xADDRESS", head.second),
         head.first);
  }
  const Pmu& pmu = probe_pmu("kprobe", head);
  auto [where_at, where] = parts[1];
  EventSpec spec;
  spec.pmu = pmu.name;
  spec.attr.set_type(pmu.type);
  if (head.second == "kretprobe") set_retprobe(spec, pmu, head);
  std::uint64_t address = 0;
  if (parse_number(where, address)) {
    // An address alone: config1 (the function name) stays 0.
    spec.probe_target = std::make_shared<const std::string>();
    spec.attr.set_config2(address);
  } else {
    auto plus = where.find('+');
    std::string_view function = where.substr(0, plus);
    std::uint64_t offset = 0;
    if (plus != std::string_view::npos && !parse_number(where.substr(plus + 1), offset)) {
      fail("the offset after '+' must be a number (decimal or 0x hex)", where_at + plus + 1);
    }
    if (function.empty()) fail("a function name is missing before '+'", where_at);
    // A symbol never starts with a digit: "2+4" would read as a function named "2".
    if (function.front() >= '0' && function.front() <= '9') {
      fail(fmt::format("'{}' is not a function name (they never start with a digit); an "
                       "address alone is {}:0xADDRESS, without an offset",
                       function, head.second),
           where_at);
    }
    spec.probe_target = std::make_shared<const std::string>(function);
    spec.attr.set_config1(reinterpret_cast<std::uintptr_t>(spec.probe_target->c_str()))
        .set_config2(offset);
  }
  spec.name = fmt::format("{}:{}", head.second, where);
  std::vector<EventSpec> specs{std::move(spec)};
  apply_parts_as_modifiers(parts, 2, specs);
  return std::move(specs[0]);
}

std::string Parser::unknown_name_message(std::string_view name) const {
  std::vector<std::string> candidates;
  for (auto table : {hardware_event_names(), software_event_names()}) {
    for (const auto& entry : table) {
      candidates.emplace_back(entry.name);
      if (!entry.alias.empty()) candidates.emplace_back(entry.alias);
    }
  }
  for (auto& cache : hw_cache_event_names()) candidates.push_back(std::move(cache));
  for (const Pmu* pmu : pmus_.all()) {
    for (const auto& alias : pmu->aliases) candidates.push_back(alias.name);
  }
  return fmt::format(
      "unknown event '{}'{} (known forms: generic names such as cycles or task-clock, "
      "pmu/term=value/, rNNNN, subsys:tracepoint, mem:ADDR, uprobe:/path:symbol; `perfscope "
      "list` shows them all)",
      name, did_you_mean(name, candidates));
}

}  // namespace perfscope::event_grammar
