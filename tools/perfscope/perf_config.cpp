#include "perf_config.hpp"

#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace perfscope::cli {

namespace {

// The settings perfscope's commands read (the rest are perf's alone: -v lists them).
constexpr std::array<std::string_view, 8> used_keys{
    "buildid.dir",  "report.children",        "report.sort_order",    "report.percent-limit",
    "top.children", "call-graph.record-mode", "call-graph.dump-size", "record.build-id",
};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// A value: its comment (# or ; outside quotes) cut, its quotes taken away.
std::string value_text(std::string_view text) {
  std::string out;
  bool quoted = false;
  for (char c : text) {
    if (c == '"') {
      quoted = !quoted;
      continue;
    }
    if (!quoted && (c == '#' || c == ';')) break;
    out.push_back(c);
  }
  return std::string(trimmed(out));
}

}  // namespace

PerfConfigFile read_perf_config_file(const std::string& path) {
  PerfConfigFile file;
  file.path = path;
  std::ifstream in(path);
  if (!in) return file;
  std::string section;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::string_view text = trimmed(line);
    if (text.empty() || text.front() == '#' || text.front() == ';') continue;
    auto fail = [&](std::string_view why) {
      return std::runtime_error(
          fmt::format("{}:{}: {} (the line is '{}'); fix or remove it", path, number, why, text));
    };
    if (text.front() == '[') {
      std::size_t close = text.find(']');
      if (close == std::string_view::npos) throw fail("a section without its ']'");
      std::string_view name = trimmed(text.substr(1, close - 1));
      // [section "subsection"]: settings section.subsection.name, the subsection as written.
      std::size_t quote = name.find('"');
      if (quote != std::string_view::npos) {
        std::string_view sub = name.substr(quote + 1);
        if (sub.empty() || sub.back() != '"') throw fail("a subsection without its closing quote");
        sub.remove_suffix(1);
        section = lower(trimmed(name.substr(0, quote))) + "." + std::string(sub);
      } else {
        section = lower(name);
      }
      if (section.empty()) throw fail("a section without a name");
      continue;
    }
    if (section.empty()) throw fail("a setting before any [section]");
    std::size_t equals = text.find('=');
    std::string name = lower(trimmed(text.substr(0, equals)));
    if (name.empty()) throw fail("a setting without a name");
    // "name" alone is a boolean that is true, as in git's syntax.
    std::string value =
        equals == std::string_view::npos ? "true" : value_text(text.substr(equals + 1));
    file.items.push_back({section + "." + name, value});
  }
  return file;
}

void write_perf_config_file(const PerfConfigFile& file) {
  std::vector<std::string> sections;
  for (const auto& item : file.items) {
    std::string section = item.key.substr(0, item.key.rfind('.'));
    if (std::find(sections.begin(), sections.end(), section) == sections.end()) {
      sections.push_back(section);
    }
  }
  std::string text = "# this file is auto-generated.\n";
  for (const std::string& section : sections) {
    std::size_t dot = section.find('.');
    if (dot == std::string::npos) {
      text += fmt::format("[{}]\n", section);
    } else {
      text += fmt::format("[{} \"{}\"]\n", section.substr(0, dot), section.substr(dot + 1));
    }
    for (const auto& item : file.items) {
      std::size_t last = item.key.rfind('.');
      if (item.key.substr(0, last) != section) continue;
      text += fmt::format("\t{} = {}\n", item.key.substr(last + 1), item.value);
    }
  }
  std::string temporary = file.path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      throw std::runtime_error(fmt::format("cannot write {}: {}", temporary, std::strerror(errno)));
    }
  }
  if (std::rename(temporary.c_str(), file.path.c_str()) != 0) {
    int error = errno;
    std::remove(temporary.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: {}", file.path, std::strerror(error)));
  }
}

std::string user_perf_config_path() {
  const char* home = std::getenv("HOME");
  return home != nullptr && *home != '\0' ? std::string(home) + "/.perfconfig" : std::string();
}

std::string system_perf_config_path() { return "/etc/perfconfig"; }

PerfConfig PerfConfig::load() {
  std::vector<PerfConfigFile> files;
  if (const char* only = std::getenv("PERF_CONFIG"); only != nullptr) {
    if (*only != '\0') files.push_back(read_perf_config_file(only));
    return PerfConfig(std::move(files));
  }
  if (std::getenv("PERF_CONFIG_NOSYSTEM") == nullptr) {
    files.push_back(read_perf_config_file(system_perf_config_path()));
  }
  if (std::string user = user_perf_config_path(); !user.empty()) {
    files.push_back(read_perf_config_file(user));
  }
  return PerfConfig(std::move(files));
}

std::optional<std::string> PerfConfig::get(std::string_view key) const {
  std::optional<std::string> value;
  for (const auto& file : files_) {
    for (const auto& item : file.items) {
      if (item.key == key) value = item.value;
    }
  }
  return value;
}

std::optional<bool> PerfConfig::boolean(std::string_view key) const {
  auto value = get(key);
  if (!value) return std::nullopt;
  std::string text = lower(*value);
  if (text == "true" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "no" || text == "off" || text.empty()) return false;
  char* end = nullptr;
  long number = std::strtol(text.c_str(), &end, 0);
  if (end != text.c_str() && *end == '\0') return number != 0;
  throw std::invalid_argument(
      fmt::format("perfconfig setting {} = '{}' is no boolean: give true or false", key, *value));
}

std::vector<std::string> PerfConfig::unused_settings() const {
  std::vector<std::string> lines;
  for (const auto& file : files_) {
    for (const auto& item : file.items) {
      if (std::find(used_keys.begin(), used_keys.end(), item.key) != used_keys.end()) continue;
      lines.push_back(
          fmt::format("{}: {}: a perf setting perfscope does not read", file.path, item.key));
    }
  }
  return lines;
}

double parse_config_number(std::string_view key, const std::string& value) {
  char* end = nullptr;
  double number = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0') {
    throw std::invalid_argument(
        fmt::format("perfconfig setting {} = '{}' is no number", key, value));
  }
  return number;
}

const PerfConfig& perf_config() {
  static const PerfConfig config = PerfConfig::load();
  return config;
}

}  // namespace perfscope::cli
