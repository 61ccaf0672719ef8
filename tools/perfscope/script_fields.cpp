#include "script_fields.hpp"

#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace perfscope::cli {

namespace {

using FieldMember = bool ScriptFields::*;

constexpr std::array<std::pair<std::string_view, FieldMember>, 15> field_names{{
    {"comm", &ScriptFields::comm},
    {"pid", &ScriptFields::pid},
    {"tid", &ScriptFields::tid},
    {"cpu", &ScriptFields::cpu},
    {"time", &ScriptFields::time},
    {"period", &ScriptFields::period},
    {"event", &ScriptFields::event},
    {"ip", &ScriptFields::ip},
    {"sym", &ScriptFields::sym},
    {"symoff", &ScriptFields::symoff},
    {"dso", &ScriptFields::dso},
    {"trace", &ScriptFields::trace},
    {"addr", &ScriptFields::addr},
    {"srcline", &ScriptFields::srcline},
    {"brstack", &ScriptFields::brstack},
}};

ScriptFields none() {
  ScriptFields fields;
  for (const auto& [name, member] : field_names) fields.*member = false;
  return fields;
}

FieldMember member_of(std::string_view name) {
  for (const auto& [known, member] : field_names) {
    if (known == name) return member;
  }
  std::string list;
  for (const auto& [known, member] : field_names)
    list += (list.empty() ? "" : ",") + std::string(known);
  // perf's other fields: what they need is not recorded by perfscope, or not printed yet.
  static constexpr std::array<std::string_view, 14> perf_only{
      "flags",    "ipc",       "insn",       "insnlen",    "iregs",      "uregs",      "weight",
      "data_src", "phys_addr", "callindent", "brstacksym", "brstackoff", "bpf-output", "synth"};
  for (std::string_view other : perf_only) {
    if (other == name) {
      throw std::invalid_argument(
          fmt::format("-F: perf script's field '{}' is not printed by perfscope script ({} are); "
                      "'perfscope script --json' prints every field a sample recorded",
                      name, list));
    }
  }
  throw std::invalid_argument(fmt::format("-F: unknown field '{}'; the fields are {}", name, list));
}

}  // namespace

ScriptFieldSpec::ScriptFieldSpec(const std::string& text) {
  add_ = none();
  remove_ = none();
  if (text.empty()) return;
  list_ = none();
  bool first = true, changes = false;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    std::string_view word(text.data() + start,
                          (comma == std::string::npos ? text.size() : comma) - start);
    bool change = !word.empty() && (word.front() == '+' || word.front() == '-');
    if (first) changes = change;
    if (change != changes) {
      throw std::invalid_argument(fmt::format(
          "-F {}: either a list of fields or +field/-field changes to the defaults, not both",
          text));
    }
    first = false;
    if (change) {
      ScriptFields& changed = word.front() == '+' ? add_ : remove_;
      changed.*member_of(word.substr(1)) = true;
    } else {
      list_.*member_of(word) = true;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  replaces_ = !changes;
}

ScriptFields ScriptFieldSpec::for_event(bool tracepoint, bool callchains) const {
  if (replaces_) return list_;
  ScriptFields fields;  // a sampling event's defaults
  if (tracepoint) {
    fields.period = false;
    fields.ip = fields.sym = fields.symoff = fields.dso = callchains;
    fields.trace = true;
  }
  for (const auto& [name, member] : field_names) {
    if (add_.*member) fields.*member = true;
    if (remove_.*member) fields.*member = false;
  }
  return fields;
}

}  // namespace perfscope::cli
