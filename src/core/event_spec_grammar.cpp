#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/event_spec_parser.hpp"
#include "perfscope/core/event_names.hpp"

// The syntax of event lists: groups in braces, events, pmu/term=value,.../ term lists and
// modifiers. What a name or a term means is event_spec_resolution.cpp's business.

namespace perfscope {

namespace event_grammar {

namespace {

constexpr std::string_view known_modifiers = "u k h G H I p P D e S W";

}  // namespace

std::vector<EventGroupSpec> Parser::parse() {
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

std::vector<EventGroupSpec> Parser::parse_group() {
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

std::vector<EventGroupSpec> Parser::split_by_core_pmu(std::vector<EventSpec> events) const {
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

bool Parser::is_core_pmu(const std::string& name) const {
  const Pmu* pmu = pmus_.find(name);
  return pmu && pmu->core;
}

void Parser::expect_event_end() {
  if (!at_end() && peek() != ',' && peek() != '}' && peek() != ' ' && peek() != '\t') {
    fail(fmt::format("unexpected character '{}' in event name", peek()), pos_);
  }
}

std::vector<EventSpec> Parser::parse_event() {
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

void Parser::apply_or_fail(std::string_view modifiers, std::size_t at, EventSpec& spec) {
  if (modifiers.empty()) fail("':' must be followed by modifiers", at);
  std::size_t bad = 0;
  if (!apply_modifiers(modifiers, spec, bad)) {
    fail(fmt::format("unknown or repeated modifier '{}' (known: {})", modifiers[bad],
                     known_modifiers),
         at + bad);
  }
}

void Parser::apply_parts_as_modifiers(const std::vector<Part>& parts, std::size_t first,
                                      std::vector<EventSpec>& specs) {
  for (auto& spec : specs) {
    for (std::size_t i = first; i < parts.size(); ++i) {
      apply_or_fail(parts[i].second, parts[i].first, spec);
      // An expansion (glob, hybrid copy) names itself; the modifiers still show.
      if (!spec.text.empty()) spec.text += fmt::format(":{}", parts[i].second);
    }
  }
}

std::vector<EventSpec> Parser::parse_pmu_event(std::size_t start) {
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
    fail(
        fmt::format("unknown PMU '{}'{} (PMUs here: {}; see {})", pmu_name,
                    did_you_mean(pmu_name, pmus_.names()), join(pmus_.names(), ", "), pmus_.root()),
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

void Parser::parse_terms(PmuEvent& event, std::string_view pmu_name, std::size_t slash) {
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
      fail(fmt::format(
               "unexpected '{}': a term name (such as {}) must start here", peek(),
               !event.pmu || event.pmu->format.empty() ? "period" : event.pmu->format.front().name),
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
      fail(fmt::format("unexpected '{}' in the terms of '{}/': terms are separated by ','", peek(),
                       pmu_name),
           pos_);
    }
  }
  ++pos_;  // the closing '/'
}

std::vector<EventSpec> Parser::finish_pmu_event(std::size_t start, std::vector<EventSpec> specs) {
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

}  // namespace event_grammar

std::vector<EventGroupSpec> parse_event_list(std::string_view text) {
  return event_grammar::Parser(text, EventParseOptions{}).parse();
}

std::vector<EventGroupSpec> parse_event_list(std::string_view text,
                                             const EventParseOptions& options) {
  return event_grammar::Parser(text, options).parse();
}

}  // namespace perfscope
