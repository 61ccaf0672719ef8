// perf's configuration files, read and written as perf does: /etc/perfconfig (the system's, unless
// PERF_CONFIG_NOSYSTEM is set), then ~/.perfconfig (the user's, which wins), or only the file
// PERF_CONFIG names. Git-config syntax: "[section]" lines, then "name = value" lines; "#" and ";"
// start comments. Settings are "section.name", lower case.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope::cli {

struct PerfConfigItem {
  std::string key;  // "report.children"
  std::string value;
};

struct PerfConfigFile {
  std::string path;
  std::vector<PerfConfigItem> items;  // in the file's order
};

// Reads one file; a missing file is empty. Throws std::runtime_error for a line that does not
// parse, with the file and line number.
PerfConfigFile read_perf_config_file(const std::string& path);
// Writes `file` as perf writes it (a comment line, then each section's items, tab-indented), in
// the order the sections first appear.
void write_perf_config_file(const PerfConfigFile& file);

std::string user_perf_config_path();    // $HOME/.perfconfig; empty without HOME
std::string system_perf_config_path();  // /etc/perfconfig

// The settings in force: every file perf reads, later files overriding earlier ones.
class PerfConfig {
 public:
  static PerfConfig load();
  explicit PerfConfig(std::vector<PerfConfigFile> files) : files_(std::move(files)) {}

  std::optional<std::string> get(std::string_view key) const;
  // perf's booleans: true/yes/on/1 and false/no/off/0 (and other integers: non-zero is true).
  // Throws std::invalid_argument naming the file's setting for anything else.
  std::optional<bool> boolean(std::string_view key) const;
  const std::vector<PerfConfigFile>& files() const noexcept { return files_; }

  // The settings no perfscope command reads, one line each ("~/.perfconfig: ui.show-headers:
  // not used by perfscope"), for -v.
  std::vector<std::string> unused_settings() const;

 private:
  std::vector<PerfConfigFile> files_;
};

// A setting's number ("5", "0.5"); std::invalid_argument naming the setting otherwise.
double parse_config_number(std::string_view key, const std::string& value);

// Loaded once per run, on first use.
const PerfConfig& perf_config();

}  // namespace perfscope::cli
