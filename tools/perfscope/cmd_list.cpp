// perfscope list: every event this machine offers, grouped, with whether it opens here.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "commands.hpp"
#include "perfscope/core/safe_text.hpp"
#include "perfscope/engine/event_catalog.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

ListCommand::ListCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "list");
  app_->add_option("pattern", pattern_,
                   "Only events matching this glob ('sched:*'), or containing this text; or one "
                   "class, as perf list takes it: hw, sw, cache, tracepoint, pmu");
  app_->add_flag("--json", json_, "Machine-readable output");
  app_->add_flag("--probe-all", probe_all_,
                 "Also open every listed tracepoint and uprobe (slow: tens of ms each)");
  app_->add_flag("--no-probe", no_probe_, "Do not open events to check them");
  app_->add_flag("-d,--desc,!--no-desc", descriptions_,
                 "Each event's description (the default; --no-desc leaves them out, as perf)");
  app_->footer(
      "Examples:\n"
      "  perfscope list 'sched:*'\n"
      "  perfscope list sw\n"
      "  perfscope list --json --no-probe cache");
}

namespace {

std::string_view heading(EventCategory category) {
  switch (category) {
    case EventCategory::hardware: return "Hardware events";
    case EventCategory::software: return "Software events";
    case EventCategory::cache: return "Hardware cache events";
    case EventCategory::pmu: return "PMU events (sysfs)";
    case EventCategory::tracepoint: return "Tracepoints";
    case EventCategory::breakpoint: return "Breakpoints";
    case EventCategory::probe: return "Dynamic probes";
  }
  return "";
}

std::string_view mark(const CatalogEvent& event) {
  switch (event.open) {
    case OpenCheck::opens: return "yes";
    case OpenCheck::fails: return "no";
    case OpenCheck::not_probed: return "-";
  }
  return "-";
}

std::string details(const CatalogEvent& event) {
  std::string text = event.description;
  if (!event.encoding.empty() && event.category == EventCategory::pmu) {
    text += fmt::format(" [{}]", event.encoding);
  }
  if (!event.unit.empty() || event.scale) {
    text += fmt::format(" (unit {}, scale {})", event.unit.empty() ? "-" : event.unit,
                        event.scale ? fmt::format("{:g}", *event.scale) : "1");
  }
  if (event.per_pkg) text += " (per package)";
  if (event.snapshot) text += " (snapshot)";
  return text;
}

void print_text(const std::vector<CatalogEvent>& events, bool descriptions) {
  std::string out;
  std::size_t at = 0;
  while (at < events.size()) {
    std::size_t end = at;
    while (end < events.size() && events[end].category == events[at].category) ++end;
    // A reason shared by every unprobed event of the category is said once, in its heading.
    bool shared_reason = true;
    for (std::size_t i = at; i < end; ++i) {
      shared_reason = shared_reason && events[i].open == OpenCheck::not_probed &&
                      events[i].open_error == events[at].open_error;
    }
    out += fmt::format("{} ({}):\n", heading(events[at].category), end - at);
    if (shared_reason && end - at > 1 && !events[at].open_error.empty()) {
      out += fmt::format("  ({})\n", events[at].open_error);
    }
    for (std::size_t i = at; i < end; ++i) {
      const auto& event = events[i];
      std::string name = event.alias.empty() || event.category == EventCategory::pmu
                             ? event.name
                             : fmt::format("{} OR {}", event.name, event.alias);
      std::string line = fmt::format("  {:<46} {:<4} {}", name, mark(event),
                                     descriptions ? details(event) : std::string());
      if (!event.open_error.empty() && !(shared_reason && end - at > 1)) {
        line += fmt::format(" -- {}", event.open_error);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line;
      out += '\n';
    }
    out += '\n';
    at = end;
  }
  if (events.empty()) out = "no event matches\n";
  // Names and descriptions come from sysfs and libpfm: escaped as every other text output.
  out = terminal_safe_lines(out);
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void print_json(const std::vector<CatalogEvent>& events) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& event : events) {
    nlohmann::json item = {
        {"category", category_name(event.category)},
        {"name", event.name},
        {"encoding", event.encoding},
        {"description", event.description},
        {"probed", event.open != OpenCheck::not_probed},
        {"opens", event.open == OpenCheck::not_probed
                      ? nlohmann::json()
                      : nlohmann::json(event.open == OpenCheck::opens)},
    };
    if (!event.alias.empty()) item["alias"] = event.alias;
    if (!event.unit.empty()) item["unit"] = event.unit;
    if (event.scale) item["scale"] = *event.scale;
    if (event.per_pkg) item["per_pkg"] = true;
    if (event.snapshot) item["snapshot"] = true;
    if (!event.open_error.empty()) item["error"] = event.open_error;
    list.push_back(std::move(item));
  }
  nlohmann::json document = {{"schema", "perfscope-list"}, {"version", 1}, {"events", list}};
  // sysfs strings are bytes: invalid UTF-8 is replaced (U+FFFD), never an exception.
  std::string text = document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), stdout);
}

// perf list's class words: a class of events, not a text to search for.
std::optional<EventCategory> class_named(std::string_view word) {
  if (word == "hw" || word == "hardware") return EventCategory::hardware;
  if (word == "sw" || word == "software") return EventCategory::software;
  if (word == "cache" || word == "hwcache") return EventCategory::cache;
  if (word == "tracepoint") return EventCategory::tracepoint;
  if (word == "pmu") return EventCategory::pmu;
  return std::nullopt;
}

}  // namespace

int ListCommand::run() {
  CatalogOptions options;
  std::optional<EventCategory> only = class_named(pattern_);
  options.pattern = only ? std::string() : pattern_;
  options.probe = !no_probe_;
  options.probe_slow_events = probe_all_;
  auto events = list_events(options);
  if (only) {
    std::erase_if(events, [&](const CatalogEvent& event) { return event.category != *only; });
  }
  if (json_) {
    print_json(events);
  } else {
    print_text(events, descriptions_);
  }
  return 0;
}

}  // namespace perfscope::cli
