// Event lists as users write them: "cycles,instructions:u,{task-clock,page-faults}:k".
// Supported now: generic hardware/software/hw-cache names, raw rNNNN, tracepoints subsys:name,
// breakpoints mem:ADDR[/LEN][:rwx], groups in braces, and perf's modifiers.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/core/event_attr.hpp"

namespace perfscope {

struct EventSpec {
  std::string text;  // as written, modifiers included
  std::string name;  // display name (text without group braces)
  EventAttr attr;
  bool weak_group = false;  // :W — if the group cannot open, open its events separately
};

struct EventGroupSpec {
  std::vector<EventSpec> events;
  bool braced = false;  // written as {a,b}: opened as one group
};

// A malformed event list: the message names the problem, position is the offending character.
class EventSpecError : public std::invalid_argument {
 public:
  EventSpecError(std::string message, std::string input, std::size_t position);
  std::size_t position() const noexcept { return position_; }
  const std::string& input() const noexcept { return input_; }
  // The message, the input, and a caret under the offending character.
  std::string with_caret() const;

 private:
  std::string input_;
  std::size_t position_;
};

std::vector<EventGroupSpec> parse_event_list(std::string_view text);

// Applies perf modifiers ("u", "k", "ppp", "G", "H", "I", "P", "D", "e", "S", "W") to an attr.
// Returns false and sets `bad` to the index of the first unknown modifier.
bool apply_modifiers(std::string_view modifiers, EventSpec& spec, std::size_t& bad);

// The id of tracepoint subsys:name from tracefs, or -errno (ENOENT: no such tracepoint).
long long tracepoint_id(std::string_view subsystem, std::string_view name);

}  // namespace perfscope
