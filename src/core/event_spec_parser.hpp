// The event-list parser's private parts, shared by its three files: event_spec_grammar.cpp reads
// the text (groups, events, pmu/terms/, modifiers), event_spec_resolution.cpp turns names and terms
// into attrs (generic events, PMU terms and aliases, tracepoints, breakpoints, probes, vendor
// names), event_spec_printing.cpp writes specs back in the canonical spelling.
#pragma once

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "perfscope/core/event_resolvers.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/pmu_registry.hpp"

namespace perfscope::event_grammar {

using Part = std::pair<std::size_t, std::string_view>;  // position in the input, text

// A decimal or 0x-hex number that fills all of `text`.
bool parse_number(std::string_view text, std::uint64_t& value);
// "; did you mean 'X'?" when one of `candidates` is close enough to `name` to be a likely typo.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);
std::string join(const std::vector<std::string>& words, std::string_view separator);
// The generic hardware or cache event `name` means on a core PMU, if it is one.
std::optional<EventAttr> core_generic_event(const Pmu& pmu, std::string_view name);

// One parse of one event list: the grammar's members read the text at pos_, the resolution's
// members turn what was read into EventSpecs (and fail() with the position of the culprit).
class Parser {
 public:
  Parser(std::string_view text, const EventParseOptions& options)
      : text_(text),
        pmus_(options.pmus ? *options.pmus : PmuRegistry::system()),
        tracefs_root_(options.tracefs_root),
        symbols_(options.symbols ? options.symbols : installed_symbol_offset_resolver()),
        vendor_(options.vendor ? options.vendor : installed_vendor_event_resolver()) {}

  std::vector<EventGroupSpec> parse();

 private:
  [[noreturn]] void fail(std::string message, std::size_t position) const {
    throw EventSpecError(std::move(message), std::string(text_), position);
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void skip_spaces() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  const std::string& tracefs();

  std::vector<EventGroupSpec> parse_group();

  // A group can only count on one PMU: on a hybrid system the copies of a generic event for
  // cpu_core and cpu_atom go to one group each, as perf does. Events of no core PMU (software,
  // tracepoints) stay with the first.
  std::vector<EventGroupSpec> split_by_core_pmu(std::vector<EventSpec> events) const;

  bool is_core_pmu(const std::string& name) const;

  static bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  }
  static bool is_token_char(char c) {
    return is_name_char(c) || c == '/' || c == '*' || c == '?' || c == '=' || c == '@' ||
           c == '+' || c == '[' || c == ']' || c == '~';
  }

  void expect_event_end();

  std::vector<EventSpec> parse_event();

  void apply_or_fail(std::string_view modifiers, std::size_t at, EventSpec& spec);

  void apply_parts_as_modifiers(const std::vector<Part>& parts, std::size_t first,
                                std::vector<EventSpec>& specs);

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

  std::vector<EventSpec> parse_pmu_event(std::size_t start);

  // Reads term[=value],... up to and past the closing '/'.
  void parse_terms(PmuEvent& event, std::string_view pmu_name, std::size_t slash);

  // Modifiers (perf accepts both cpu/.../u and cpu/.../:u) and the written text.
  std::vector<EventSpec> finish_pmu_event(std::size_t start, std::vector<EventSpec> specs);

  std::uint64_t number_or_fail(std::string_view term, const Part& value);

  void apply_term(PmuEvent& event, std::string_view term, std::size_t term_at,
                  const std::optional<Part>& value);

  void refuse_mixing_with_generic(const PmuEvent& event, std::size_t at);

  // An alias's text is a term list in the PMU's own format ("event=0x64,umask=0x09"); a '?' value
  // is a parameter the user must give (perf's "umask=?").
  void apply_alias(PmuEvent& event, const PmuAlias& alias, std::size_t alias_at);

  void apply_call_graph(EventSpec& spec, const Part& value);

  // ---- name[:part...] forms ----

  std::vector<EventSpec> resolve(const std::vector<Part>& parts);

  // A generic hardware or cache event counts on every core PMU of a hybrid system: one copy
  // each, with the PMU's type in config bits 32 and up.
  std::vector<EventSpec> generic_specs(const EventAttr& attr, std::string_view name);

  std::optional<std::vector<EventSpec>> resolve_bare_alias(std::string_view name);

  std::optional<std::vector<EventSpec>> resolve_vendor(const std::string& name, std::size_t at);

  // ---- tracepoints ----

  bool tracepoint_subsystem_exists(const Part& subsystem);

  std::vector<EventSpec> resolve_tracepoints(const Part& subsystem, const Part& event);

  // ---- breakpoints and probes ----

  EventSpec resolve_breakpoint(const std::vector<Part>& parts);

  const Pmu& probe_pmu(std::string_view pmu_name, const Part& at);

  void set_retprobe(EventSpec& spec, const Pmu& pmu, const Part& at);

  // uprobe:/path/to/binary:symbol[+offset] or uprobe:/path:0xOFFSET (a file offset).
  EventSpec resolve_uprobe(const std::vector<Part>& parts);

  // kprobe:function[+offset] or kprobe:0xADDRESS.
  EventSpec resolve_kprobe(const std::vector<Part>& parts);

  std::string unknown_name_message(std::string_view name) const;

  std::string_view text_;
  std::size_t pos_ = 0;
  const PmuRegistry& pmus_;
  std::string tracefs_root_;
  std::size_t tracefs_at_ = 0;
  const SymbolOffsetResolver* symbols_;
  const VendorEventResolver* vendor_;
};

}  // namespace perfscope::event_grammar
