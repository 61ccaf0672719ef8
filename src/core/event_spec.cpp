#include "perfscope/core/event_spec.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <limits>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/abi/user_registers.hpp"
#include "perfscope/core/event_names.hpp"
#include "perfscope/core/event_resolvers.hpp"
#include "perfscope/core/pmu_registry.hpp"
#include "perfscope/sys/kernel_files.hpp"

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

namespace {

using Part = std::pair<std::size_t, std::string_view>;  // position in the input, text

constexpr std::string_view known_modifiers = "u k h G H I p P D e S W";

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

bool has_glob(std::string_view text) { return text.find_first_of("*?[") != std::string_view::npos; }

bool glob_match(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

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

// Terms every PMU accepts besides its format/ terms.
constexpr std::array<std::string_view, 9> builtin_terms{"config",  "config1",    "config2",
                                                        "config3", "period",     "freq",
                                                        "name",    "call-graph", "stack-size"};

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

class Parser {
 public:
  Parser(std::string_view text, const EventParseOptions& options)
      : text_(text),
        pmus_(options.pmus ? *options.pmus : PmuRegistry::system()),
        tracefs_root_(options.tracefs_root),
        symbols_(options.symbols ? options.symbols : installed_symbol_offset_resolver()),
        vendor_(options.vendor ? options.vendor : installed_vendor_event_resolver()) {}

  std::vector<EventGroupSpec> parse() {
    std::vector<EventGroupSpec> groups;
    skip_spaces();
    if (at_end()) fail("the event list is empty", 0);
    for (;;) {
      skip_spaces();
      if (peek() == '{') {
        for (auto& group : parse_group()) groups.push_back(std::move(group));
      } else {
        // Each event a single name expands to (a glob, a hybrid PMU each) counts on its own.
        for (auto& spec : parse_event()) {
          EventGroupSpec single;
          single.events.push_back(std::move(spec));
          groups.push_back(std::move(single));
        }
      }
      skip_spaces();
      if (at_end()) break;
      if (peek() != ',') fail(fmt::format("expected ',' between events, found '{}'", peek()), pos_);
      ++pos_;
      skip_spaces();
      if (at_end()) fail("the list ends with ','; an event name must follow", pos_);
    }
    return groups;
  }

 private:
  [[noreturn]] void fail(std::string message, std::size_t position) const {
    throw EventSpecError(std::move(message), std::string(text_), position);
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void skip_spaces() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  const std::string& tracefs() {
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

  std::vector<EventGroupSpec> parse_group() {
    std::size_t open = pos_++;
    std::vector<EventSpec> events;
    for (;;) {
      skip_spaces();
      if (at_end()) fail("unbalanced '{': the group is never closed with '}'", open);
      if (peek() == '}') {
        if (events.empty()) fail("empty group '{}'", open);
        break;
      }
      if (peek() == '{') fail("groups cannot be nested", pos_);
      for (auto& spec : parse_event()) events.push_back(std::move(spec));
      skip_spaces();
      if (peek() == ',') {
        std::size_t comma = pos_++;
        skip_spaces();
        if (peek() == '}') fail("the group ends with ','; an event name must follow", comma);
        continue;
      }
      if (peek() != '}') {
        if (at_end()) fail("unbalanced '{': the group is never closed with '}'", open);
        fail(fmt::format("expected ',' or '}}' in group, found '{}'", peek()), pos_);
      }
    }
    ++pos_;  // '}'
    if (peek() == ':') {
      ++pos_;
      std::size_t start = pos_;
      while (!at_end() && std::isalpha(static_cast<unsigned char>(peek()))) ++pos_;
      std::string_view modifiers = text_.substr(start, pos_ - start);
      if (modifiers.empty()) fail("':' after a group must be followed by modifiers", start);
      for (auto& event : events) {
        apply_or_fail(modifiers, start, event);
        event.text += ":" + std::string(modifiers);
      }
    }
    return split_by_core_pmu(std::move(events));
  }

  // A group can only count on one PMU: on a hybrid system the copies of a generic event for
  // cpu_core and cpu_atom go to one group each, as perf does. Events of no core PMU (software,
  // tracepoints) stay with the first.
  std::vector<EventGroupSpec> split_by_core_pmu(std::vector<EventSpec> events) const {
    std::vector<std::string> core_names;
    for (const auto& event : events) {
      if (event.pmu.empty() || !is_core_pmu(event.pmu)) continue;
      if (std::find(core_names.begin(), core_names.end(), event.pmu) == core_names.end()) {
        core_names.push_back(event.pmu);
      }
    }
    std::vector<EventGroupSpec> groups(std::max<std::size_t>(1, core_names.size()));
    for (auto& group : groups) group.braced = true;
    for (auto& event : events) {
      std::size_t index = 0;
      if (!event.pmu.empty() && core_names.size() > 1) {
        auto found = std::find(core_names.begin(), core_names.end(), event.pmu);
        if (found != core_names.end()) index = static_cast<std::size_t>(found - core_names.begin());
      }
      groups[index].events.push_back(std::move(event));
    }
    return groups;
  }

  bool is_core_pmu(const std::string& name) const {
    const Pmu* pmu = pmus_.find(name);
    return pmu && pmu->core;
  }

  static bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  }
  static bool is_token_char(char c) {
    return is_name_char(c) || c == '/' || c == '*' || c == '?' || c == '=' || c == '@' ||
           c == '+' || c == '[' || c == ']' || c == '~';
  }

  void expect_event_end() {
    if (!at_end() && peek() != ',' && peek() != '}' && peek() != ' ' && peek() != '\t') {
      fail(fmt::format("unexpected character '{}' in event name", peek()), pos_);
    }
  }

  std::vector<EventSpec> parse_event() {
    std::size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (peek() == '/' && pos_ > start) return parse_pmu_event(start);
    pos_ = start;

    // Reads name[:part]* up to ',', '}' or end. Parts are split on ':'.
    std::vector<Part> parts;
    std::size_t part_start = pos_;
    for (;;) {
      while (!at_end() && is_token_char(peek())) ++pos_;
      parts.emplace_back(part_start, text_.substr(part_start, pos_ - part_start));
      if (peek() == ':') {
        ++pos_;
        part_start = pos_;
        continue;
      }
      break;
    }
    if (parts.front().second.empty()) {
      if (at_end()) fail("an event name is missing here", pos_);
      fail(fmt::format("unexpected '{}': an event name must start here", peek()), pos_);
    }
    expect_event_end();
    std::vector<EventSpec> specs = resolve(parts);
    std::string text(text_.substr(start, pos_ - start));
    for (auto& spec : specs) {
      if (spec.text.empty()) spec.text = text;
    }
    return specs;
  }

  void apply_or_fail(std::string_view modifiers, std::size_t at, EventSpec& spec) {
    if (modifiers.empty()) fail("':' must be followed by modifiers", at);
    std::size_t bad = 0;
    if (!apply_modifiers(modifiers, spec, bad)) {
      fail(fmt::format("unknown or repeated modifier '{}' (known: {})", modifiers[bad],
                       known_modifiers),
           at + bad);
    }
  }

  void apply_parts_as_modifiers(const std::vector<Part>& parts, std::size_t first,
                                std::vector<EventSpec>& specs) {
    for (auto& spec : specs) {
      for (std::size_t i = first; i < parts.size(); ++i) {
        apply_or_fail(parts[i].second, parts[i].first, spec);
        // An expansion (glob, hybrid copy) names itself; the modifiers still show.
        if (!spec.text.empty()) spec.text += fmt::format(":{}", parts[i].second);
      }
    }
  }

  // ---- pmu/term=value,.../ ----

  struct PmuEvent {
    explicit PmuEvent(const Pmu* of) : pmu(of) {}
    const Pmu* pmu;  // null for a generic event with terms (cycles/period=1000/)
    EventSpec spec;
    bool generic = false;      // a generic hardware event on this core PMU (cpu_core/cycles/)
    bool format_used = false;  // a format or config term was applied
    std::string alias_name;    // the alias applied, if any
    std::vector<std::pair<std::string, std::size_t>> missing_parameters;  // alias '?' terms
  };

  std::vector<EventSpec> parse_pmu_event(std::size_t start) {
    std::string_view pmu_name = text_.substr(start, pos_ - start);
    std::size_t slash = pos_++;
    const Pmu* pmu = pmus_.find(pmu_name);
    PmuEvent event{pmu};
    if (pmu) {
      event.spec.pmu = pmu->name;
      event.spec.attr.set_type(pmu->type);
    } else if (auto generic = lookup_generic_event(pmu_name)) {
      // cycles/period=1000/: a generic event with sampling terms; hybrid copies share them.
      auto copies = generic_specs(*generic, pmu_name);
      event.generic = true;
      event.spec.attr = copies.front().attr;
      parse_terms(event, pmu_name, slash);
      std::string written(text_.substr(start, pos_ - start));
      std::vector<EventSpec> specs;
      for (auto& copy : copies) {
        EventSpec spec = event.spec;
        spec.attr.set_type(copy.attr.type()).set_config(copy.attr.config());
        spec.pmu = copy.pmu;
        if (spec.name.empty()) spec.name = copies.size() == 1 ? written : copy.name;
        specs.push_back(std::move(spec));
      }
      return finish_pmu_event(start, std::move(specs));
    } else {
      fail(fmt::format("unknown PMU '{}'{} (PMUs here: {}; see {})", pmu_name,
                       did_you_mean(pmu_name, pmus_.names()), join(pmus_.names(), ", "),
                       pmus_.root()),
           start);
    }
    parse_terms(event, pmu_name, slash);
    for (const auto& [name, at] : event.missing_parameters) {
      fail(fmt::format("alias '{}' of PMU '{}' needs a value for '{}' (write {}/{},{}=N/)",
                       event.alias_name, pmu->name, name, pmu->name, event.alias_name, name),
           at);
    }
    if (event.spec.name.empty()) event.spec.name = std::string(text_.substr(start, pos_ - start));
    return finish_pmu_event(start, {std::move(event.spec)});
  }

  // Reads term[=value],... up to and past the closing '/'.
  void parse_terms(PmuEvent& event, std::string_view pmu_name, std::size_t slash) {
    while (peek() != '/') {
      if (at_end()) {
        fail(fmt::format("'{}/' is never closed: PMU terms end with '/'", pmu_name), slash);
      }
      std::size_t term_at = pos_;
      while (!at_end() && is_name_char(peek())) ++pos_;
      std::string_view term = text_.substr(term_at, pos_ - term_at);
      if (term.empty()) {
        if (at_end()) {
          fail(fmt::format("'{}/' is never closed: PMU terms end with '/'", pmu_name), slash);
        }
        fail(fmt::format("unexpected '{}': a term name (such as {}) must start here", peek(),
                         !event.pmu || event.pmu->format.empty() ? "period"
                                                                 : event.pmu->format.front().name),
             pos_);
      }
      std::optional<Part> value;
      if (peek() == '=') {
        ++pos_;
        std::size_t value_at = pos_;
        while (!at_end() && peek() != ',' && peek() != '/' && peek() != ' ' && peek() != '}') {
          ++pos_;
        }
        value = Part{value_at, text_.substr(value_at, pos_ - value_at)};
        if (value->second.empty()) fail(fmt::format("term '{}' needs a value", term), value_at);
      }
      apply_term(event, term, term_at, value);
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (at_end()) {
        fail(fmt::format("'{}/' is never closed: PMU terms end with '/'", pmu_name), slash);
      }
      if (peek() != '/') {
        fail(fmt::format("unexpected '{}' in the terms of '{}/': terms are separated by ','",
                         peek(), pmu_name),
             pos_);
      }
    }
    ++pos_;  // the closing '/'
  }

  // Modifiers (perf accepts both cpu/.../u and cpu/.../:u) and the written text.
  std::vector<EventSpec> finish_pmu_event(std::size_t start, std::vector<EventSpec> specs) {
    std::size_t modifiers_at = pos_;
    if (peek() == ':') modifiers_at = ++pos_;
    while (!at_end() && std::isalpha(static_cast<unsigned char>(peek()))) ++pos_;
    if (pos_ > modifiers_at || text_[modifiers_at - 1] == ':') {
      for (auto& spec : specs) {
        apply_or_fail(text_.substr(modifiers_at, pos_ - modifiers_at), modifiers_at, spec);
      }
    }
    expect_event_end();
    std::string modifiers(text_.substr(modifiers_at, pos_ - modifiers_at));
    for (auto& spec : specs) {
      spec.text =
          specs.size() == 1 || modifiers.empty()
              ? (specs.size() == 1 ? std::string(text_.substr(start, pos_ - start)) : spec.name)
              : fmt::format("{}:{}", spec.name, modifiers);
    }
    return specs;
  }

  std::uint64_t number_or_fail(std::string_view term, const Part& value) {
    std::uint64_t number = 0;
    if (!parse_number(value.second, number)) {
      fail(
          fmt::format("term '{}' needs a number (decimal or 0x hex), not '{}'", term, value.second),
          value.first);
    }
    return number;
  }

  void apply_term(PmuEvent& event, std::string_view term, std::size_t term_at,
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
    fail(fmt::format("unknown term '{}' for PMU '{}'{} (its terms: {}; also {}{})", term,
                     event.pmu->name, did_you_mean(term, candidates),
                     terms.empty() ? std::string("none") : join(terms, ", "),
                     "config, config1, config2, config3, period, freq, name, call-graph",
                     event.pmu->aliases.empty() ? std::string()
                                                : fmt::format("; events: {}",
                                                              [&] {
                                                                std::vector<std::string> names;
                                                                for (const auto& alias :
                                                                     event.pmu->aliases) {
                                                                  names.push_back(alias.name);
                                                                }
                                                                return join(names, ", ");
                                                              }())),
         term_at);
  }

  void refuse_mixing_with_generic(const PmuEvent& event, std::size_t at) {
    if (event.generic) {
      fail(fmt::format("a generic event in '{}/.../' takes no format terms",
                       event.pmu ? event.pmu->name : event.spec.name),
           at);
    }
  }

  // An alias's text is a term list in the PMU's own format ("event=0x64,umask=0x09"); a '?' value
  // is a parameter the user must give (perf's "umask=?").
  void apply_alias(PmuEvent& event, const PmuAlias& alias, std::size_t alias_at) {
    auto& attr = event.spec.attr;
    auto bad_alias = [&](const std::string& why) {
      fail(fmt::format("alias '{}' of PMU '{}' cannot be used: {} (events/{} reads '{}')",
                       alias.name, event.pmu->name, why, alias.name, alias.terms),
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

  void apply_call_graph(EventSpec& spec, const Part& value) {
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

  // ---- name[:part...] forms ----

  std::vector<EventSpec> resolve(const std::vector<Part>& parts) {
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
    if (name.size() > 1 && name[0] == 'r' &&
        parse_number(fmt::format("0x{}", name.substr(1)), raw)) {
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

  // A generic hardware or cache event counts on every core PMU of a hybrid system: one copy
  // each, with the PMU's type in config bits 32 and up.
  std::vector<EventSpec> generic_specs(const EventAttr& attr, std::string_view name) {
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

  std::optional<std::vector<EventSpec>> resolve_bare_alias(std::string_view name) {
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

  std::optional<std::vector<EventSpec>> resolve_vendor(const std::string& name, std::size_t at) {
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

  // ---- tracepoints ----

  bool tracepoint_subsystem_exists(const Part& subsystem) {
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

  std::vector<EventSpec> resolve_tracepoints(const Part& subsystem, const Part& event) {
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
        for (auto& candidate :
             sys::list_directory(fmt::format("{}/{}", events_dir, subsystems[0]))) {
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

  // ---- breakpoints and probes ----

  EventSpec resolve_breakpoint(const std::vector<Part>& parts) {
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

  const Pmu& probe_pmu(std::string_view pmu_name, const Part& at) {
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

  void set_retprobe(EventSpec& spec, const Pmu& pmu, const Part& at) {
    const PmuFormatField* field = pmu.find_term("retprobe");
    if (!field) {
      fail(fmt::format("the {} PMU has no 'retprobe' term ({}/{}/format/retprobe), so return "
                       "probes cannot be placed",
                       pmu.name, pmus_.root(), pmu.name),
           at.first);
    }
    apply_pmu_format(*field, 1, spec.attr.raw());
  }

  // uprobe:/path/to/binary:symbol[+offset] or uprobe:/path:0xOFFSET (a file offset).
  EventSpec resolve_uprobe(const std::vector<Part>& parts) {
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

  // kprobe:function[+offset] or kprobe:0xADDRESS.
  EventSpec resolve_kprobe(const std::vector<Part>& parts) {
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

  std::string unknown_name_message(std::string_view name) const {
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

  std::string_view text_;
  std::size_t pos_ = 0;
  const PmuRegistry& pmus_;
  std::string tracefs_root_;
  std::size_t tracefs_at_ = 0;
  const SymbolOffsetResolver* symbols_;
  const VendorEventResolver* vendor_;
};

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

std::vector<EventGroupSpec> parse_event_list(std::string_view text) {
  return Parser(text, EventParseOptions{}).parse();
}

std::vector<EventGroupSpec> parse_event_list(std::string_view text,
                                             const EventParseOptions& options) {
  return Parser(text, options).parse();
}

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
