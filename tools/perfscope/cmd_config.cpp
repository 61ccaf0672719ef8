// perfscope config: perf's configuration files (~/.perfconfig, /etc/perfconfig) listed, read and
// written as perf config does, in perf's layout; the settings perfscope's commands honour are in
// perf_config.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "commands.hpp"
#include "perf_config.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

ConfigCommand::ConfigCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "config");
  app_->add_flag("-l,--list", list_, "Show every setting (section.name=value)");
  app_->add_flag("--user", user_, "Only the user's file (~/.perfconfig)");
  app_->add_flag("--system", system_, "Only the system's file (/etc/perfconfig)");
  app_->add_option("settings", settings_,
                   "section.name shows a setting, section.name=value sets it (in ~/.perfconfig, "
                   "or /etc/perfconfig with --system)");
  app_->footer(
      "Examples:\n"
      "  perfscope config report.children=false   (report without the Children column)\n"
      "  perfscope config --list");
}

int ConfigCommand::run() {
  if (user_ && system_) {
    throw std::invalid_argument("--user and --system exclude each other: give one");
  }
  if (!list_ && settings_.empty()) {
    throw std::invalid_argument(
        "give --list, or section.name to show a setting, or section.name=value to set it");
  }
  if (list_ && !settings_.empty()) {
    throw std::invalid_argument("--list takes no settings: give either");
  }
  // The files shown: the one --user or --system names, else every file perf reads.
  std::vector<PerfConfigFile> files;
  if (user_) {
    files.push_back(read_perf_config_file(user_perf_config_path()));
  } else if (system_) {
    files.push_back(read_perf_config_file(system_perf_config_path()));
  } else {
    files = PerfConfig::load().files();
  }
  if (list_) {
    // perf's set: each setting once, where it first appears, with the value read last.
    std::vector<PerfConfigItem> merged;
    for (const auto& file : files) {
      for (const auto& item : file.items) {
        auto at = std::find_if(merged.begin(), merged.end(),
                               [&](const PerfConfigItem& seen) { return seen.key == item.key; });
        if (at == merged.end()) {
          merged.push_back(item);
        } else {
          at->value = item.value;
        }
      }
    }
    std::string out;
    for (const auto& item : merged) out += fmt::format("{}={}\n", item.key, item.value);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  PerfConfig shown(files);
  std::string target_path = system_ ? system_perf_config_path() : user_perf_config_path();
  if (target_path.empty()) {
    throw std::runtime_error(
        "HOME is not set: there is no ~/.perfconfig to write (or give --system)");
  }
  std::optional<PerfConfigFile> target;
  std::string out;
  for (const std::string& setting : settings_) {
    std::size_t equals = setting.find('=');
    std::string key = setting.substr(0, equals);
    if (key.find('.') == std::string::npos || key.front() == '.' || key.back() == '.') {
      throw std::invalid_argument(fmt::format(
          "'{}' names no section: settings are section.name (report.children)", setting));
    }
    if (equals == std::string::npos) {
      if (auto value = shown.get(key)) out += fmt::format("{}={}\n", key, *value);
      continue;
    }
    std::string value = setting.substr(equals + 1);
    if (value.empty()) {
      throw std::invalid_argument(fmt::format("'{}' gives no value: section.name=value", setting));
    }
    if (!target) target = read_perf_config_file(target_path);
    auto at = std::find_if(target->items.begin(), target->items.end(),
                           [&](const PerfConfigItem& item) { return item.key == key; });
    if (at == target->items.end()) {
      target->items.push_back({key, value});
    } else {
      at->value = value;
    }
  }
  if (target) write_perf_config_file(*target);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace perfscope::cli
