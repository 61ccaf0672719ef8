#include "perfscope/analysis/diff/stat_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace perfscope {

namespace {

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    throw std::runtime_error(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  }
  return text.str();
}

double number_or(const nlohmann::json& object, const char* key, double fallback) {
  auto found = object.find(key);
  return found != object.end() && found->is_number() ? found->get<double>() : fallback;
}

}  // namespace

StatFile parse_stat_file(std::string_view text, const std::string& path) {
  nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object()) {
    throw std::runtime_error(fmt::format(
        "'{}' is not a JSON document: write counts with `perfscope stat -r N --json -o FILE -- "
        "COMMAND`",
        path));
  }
  std::string schema = document.value("schema", "");
  if (schema == "perfscope-stat-interval") {
    throw std::runtime_error(fmt::format(
        "'{}' holds interval counts (stat -I): diff compares totals of repeated runs; record "
        "them without -I",
        path));
  }
  if (schema != "perfscope-stat") {
    throw std::runtime_error(fmt::format(
        "'{}' is JSON of schema '{}', not perfscope-stat: diff compares two `perfscope stat "
        "--json` files or two perf.data files",
        path, schema.empty() ? "none" : schema));
  }
  if (int version = document.value("version", 0); version != 1) {
    throw std::runtime_error(fmt::format(
        "'{}' is perfscope-stat version {}; this perfscope reads version 1", path, version));
  }
  StatFile file;
  file.path = path;
  file.target = document.value("target", "");
  file.runs = document.value("runs", 1);
  auto events = document.find("events");
  if (events == document.end() || !events->is_array()) {
    throw std::runtime_error(fmt::format("'{}': perfscope-stat without an events array", path));
  }
  for (const auto& event : *events) {
    if (!event.is_object() || !event.value("supported", false)) continue;
    auto value = event.find("value");
    if (value == event.end() || !value->is_number()) continue;  // not counted
    StatFileEvent out;
    out.name = event.value("name", "");
    out.unit = event.value("unit", "");
    if (auto values = event.find("values"); values != event.end() && values->is_array()) {
      for (const auto& run : *values) {
        if (run.is_number()) out.values.push_back(run.get<double>());
      }
    }
    if (!out.values.empty()) {
      out.summary = summarize_repeats(out.values);
    } else {
      // Files written before per-run values: the mean and spread are enough for Welch's test.
      out.summary.runs = static_cast<std::size_t>(std::max(file.runs, 1));
      out.summary.mean = value->get<double>();
      out.summary.stddev = number_or(event, "stddev", 0);
    }
    file.events.push_back(std::move(out));
  }
  if (document.contains("elapsed_ns")) {
    StatFileEvent elapsed;
    elapsed.name = "elapsed";
    elapsed.unit = "msec";
    if (auto values = document.find("elapsed_values_ns");
        values != document.end() && values->is_array()) {
      for (const auto& run : *values) {
        if (run.is_number()) elapsed.values.push_back(run.get<double>() / 1e6);
      }
    }
    if (!elapsed.values.empty()) {
      elapsed.summary = summarize_repeats(elapsed.values);
    } else {
      elapsed.summary.runs = static_cast<std::size_t>(std::max(file.runs, 1));
      elapsed.summary.mean = number_or(document, "elapsed_ns", 0) / 1e6;
      elapsed.summary.stddev = number_or(document, "elapsed_stddev_ns", 0) / 1e6;
    }
    file.events.push_back(std::move(elapsed));
  }
  return file;
}

StatFile read_stat_file(const std::string& path) { return parse_stat_file(read_whole(path), path); }

DiffInputKind diff_input_kind(const std::string& path) {
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) return DiffInputKind::directory;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  }
  char head[4096] = {};
  in.read(head, sizeof head);
  std::string_view text(head, static_cast<std::size_t>(in.gcount()));
  if (text.empty()) return DiffInputKind::empty;
  if (text.starts_with("PERFILE2")) return DiffInputKind::perf_data;
  std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || text[start] != '{') return DiffInputKind::other;
  // Both perfscope JSON documents name their schema first.
  if (text.find("\"perfscope-stat\"") != std::string_view::npos) return DiffInputKind::stat_json;
  if (text.find("\"perfscope-stat-interval\"") != std::string_view::npos) {
    return DiffInputKind::stat_json;  // parse_stat_file says why it cannot be compared
  }
  if (text.find("perfscope-profile") != std::string_view::npos) return DiffInputKind::profile_json;
  return DiffInputKind::stat_json;  // JSON of some kind: parse_stat_file names its schema
}

const char* diff_input_kind_name(DiffInputKind kind) noexcept {
  switch (kind) {
    case DiffInputKind::perf_data: return "a perf.data recording";
    case DiffInputKind::stat_json: return "a perfscope stat JSON file";
    case DiffInputKind::profile_json: return "a perfscope profile JSON export";
    case DiffInputKind::empty: return "empty (the recording stopped before writing anything)";
    case DiffInputKind::directory: return "a directory (give the recording in it)";
    case DiffInputKind::other: return "neither a perf.data recording nor JSON";
  }
  return "";
}

}  // namespace perfscope
