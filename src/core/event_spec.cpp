#include "perfscope/core/event_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <limits>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/event_names.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace flag = abi::attr_flag;

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
      case 'S': attr.set_sample_type(attr.raw().sample_type | abi::sample_format::read); break;
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

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::vector<EventGroupSpec> parse() {
    std::vector<EventGroupSpec> groups;
    skip_spaces();
    if (at_end()) fail("the event list is empty", 0);
    for (;;) {
      skip_spaces();
      if (peek() == '{') {
        groups.push_back(parse_group());
      } else {
        EventGroupSpec single;
        single.events.push_back(parse_event());
        groups.push_back(std::move(single));
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

  EventGroupSpec parse_group() {
    std::size_t open = pos_++;
    EventGroupSpec group;
    group.braced = true;
    for (;;) {
      skip_spaces();
      if (at_end()) fail("unbalanced '{': the group is never closed with '}'", open);
      if (peek() == '}') {
        if (group.events.empty()) fail("empty group '{}'", open);
        break;
      }
      if (peek() == '{') fail("groups cannot be nested", pos_);
      group.events.push_back(parse_event());
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
      for (auto& event : group.events) {
        std::size_t bad = 0;
        if (!apply_modifiers(modifiers, event, bad)) {
          fail(fmt::format("unknown or repeated modifier '{}' (known: u k h G H I p P D e S W)",
                           modifiers[bad]),
               start + bad);
        }
        event.text += ":" + std::string(modifiers);
      }
    }
    return group;
  }

  static bool is_token_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '/' || c == '*' || c == '?' || c == '=' || c == '@';
  }

  // Reads name[:part]* up to ',', '}' or end. Parts are split on ':'.
  EventSpec parse_event() {
    std::size_t start = pos_;
    std::vector<std::pair<std::size_t, std::string_view>> parts;
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
    if (!at_end() && peek() != ',' && peek() != '}' && peek() != ' ') {
      fail(fmt::format("unexpected character '{}' in event name", peek()), pos_);
    }
    EventSpec spec;
    spec.text = std::string(text_.substr(start, pos_ - start));
    resolve(parts, spec);
    return spec;
  }

  void apply_or_fail(std::string_view modifiers, std::size_t at, EventSpec& spec) {
    if (modifiers.empty()) fail("':' must be followed by modifiers", at);
    std::size_t bad = 0;
    if (!apply_modifiers(modifiers, spec, bad)) {
      fail(fmt::format("unknown or repeated modifier '{}' (known: u k h G H I p P D e S W)",
                       modifiers[bad]),
           at + bad);
    }
  }

  static bool parse_number(std::string_view text, std::uint64_t& value) {
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      text.remove_prefix(2);
      base = 16;
    }
    if (text.empty()) return false;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    return ec == std::errc{} && ptr == text.data() + text.size();
  }

  void resolve(const std::vector<std::pair<std::size_t, std::string_view>>& parts,
               EventSpec& spec) {
    auto [name_at, name] = parts.front();
    if (name == "mem") return resolve_breakpoint(parts, spec);
    if (name.find('/') != std::string_view::npos) {
      fail(
          "PMU event syntax 'pmu/term=value/' is not supported yet; use a generic name, rNNNN, "
          "or a tracepoint",
          name_at);
    }
    if (auto generic = lookup_generic_event(name)) {
      spec.attr = *generic;
      spec.name = std::string(name);
      for (std::size_t i = 1; i < parts.size(); ++i) {
        apply_or_fail(parts[i].second, parts[i].first, spec);
      }
      return;
    }
    std::uint64_t raw = 0;
    if (name.size() > 1 && name[0] == 'r' &&
        parse_number(fmt::format("0x{}", name.substr(1)), raw)) {
      spec.attr = EventAttr::raw_event(raw);
      spec.name = std::string(name);
      for (std::size_t i = 1; i < parts.size(); ++i) {
        apply_or_fail(parts[i].second, parts[i].first, spec);
      }
      return;
    }
    if (parts.size() >= 2 && !parts[1].second.empty()) {
      auto [event_at, event] = parts[1];
      long long id = tracepoint_id(name, event);
      if (id == -ENODEV) {
        fail(
            "tracefs is not mounted and cannot be mounted here (mount -t tracefs nodev "
            "/sys/kernel/tracing as root)",
            name_at);
      }
      if (id == -ENOENT &&
          sys::list_directory(fmt::format("{}/events/{}", sys::tracefs_root().value_or(""), name))
              .empty()) {
        // No such tracepoint subsystem: most likely a misspelt event with modifiers ("cyclez:u").
        fail(unknown_name_message(name), name_at);
      }
      if (id < 0) {
        fail(fmt::format("no tracepoint '{}:{}' (see {}/available_events)", name, event,
                         sys::tracefs_root().value_or("tracefs")),
             name_at);
      }
      spec.attr = EventAttr::tracepoint(static_cast<std::uint64_t>(id));
      spec.name = fmt::format("{}:{}", name, event);
      for (std::size_t i = 2; i < parts.size(); ++i) {
        apply_or_fail(parts[i].second, parts[i].first, spec);
      }
      return;
    }
    fail(unknown_name_message(name), name_at);
  }

  void resolve_breakpoint(const std::vector<std::pair<std::size_t, std::string_view>>& parts,
                          EventSpec& spec) {
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
    spec.attr = EventAttr::breakpoint(address, length, access);
    spec.name = generic_event_name(spec.attr.raw());
    for (std::size_t i = next; i < parts.size(); ++i) {
      apply_or_fail(parts[i].second, parts[i].first, spec);
    }
  }

  static std::string unknown_name_message(std::string_view name) {
    std::string best;
    std::size_t best_distance = std::numeric_limits<std::size_t>::max();
    auto consider = [&](std::string_view candidate) {
      std::size_t distance = edit_distance(name, candidate);
      if (distance < best_distance) {
        best_distance = distance;
        best = std::string(candidate);
      }
    };
    for (auto table : {hardware_event_names(), software_event_names()}) {
      for (const auto& entry : table) {
        consider(entry.name);
        if (!entry.alias.empty()) consider(entry.alias);
      }
    }
    for (const auto& cache : hw_cache_event_names()) consider(cache);
    std::string message = fmt::format("unknown event '{}'", name);
    if (best_distance <= std::max<std::size_t>(2, name.size() / 3)) {
      message += fmt::format("; did you mean '{}'?", best);
    }
    message +=
        " (known forms: generic names such as cycles or task-clock, rNNNN, subsys:tracepoint, "
        "mem:ADDR)";
    return message;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<EventGroupSpec> parse_event_list(std::string_view text) { return Parser(text).parse(); }

}  // namespace perfscope
