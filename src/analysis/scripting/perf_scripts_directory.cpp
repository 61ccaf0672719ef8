#include "perf_scripts_directory.hpp"

#include <dirent.h>
#include <fmt/format.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace perfscope {

namespace {

// The entries of a directory in readdir order (perf lists in that order), without . and ...
std::vector<std::string> directory_entries(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return names;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  return names;
}

std::string trimmed(std::string text) {
  std::size_t start = text.find_first_not_of(" \t");
  std::size_t end = text.find_last_not_of(" \t\r\n");
  return start == std::string::npos ? std::string() : text.substr(start, end - start + 1);
}

// The "# description:" and "# args:" comment lines of a report script (the last of each).
void read_script_info(const std::string& path, ListedScript& script) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::string text = trimmed(line);
    if (text.empty() || text[0] != '#' || text.starts_with("#!")) continue;
    text = trimmed(text.substr(1));
    if (text.starts_with("description:")) {
      script.description = trimmed(text.substr(12));
    } else if (text.starts_with("args:")) {
      script.arguments = trimmed(text.substr(5));
    }
  }
}

bool readable(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

}  // namespace

std::string choose_perf_exec_path(const std::string& own) {
  if (const char* set = std::getenv("PERF_EXEC_PATH"); set != nullptr && *set != '\0') return set;
  if (readable("/usr/lib/perf-core/scripts/python/Perf-Trace-Util/lib/Perf/Trace/Core.py")) {
    return "/usr/lib/perf-core";
  }
  return own;
}

std::optional<std::vector<ListedScript>> list_perf_scripts(const std::string& exec_path) {
  const std::string scripts = exec_path + "/scripts";
  if (DIR* dir = ::opendir(scripts.c_str())) {
    ::closedir(dir);
  } else {
    return std::nullopt;
  }
  std::vector<ListedScript> listed;
  for (const std::string& language : directory_entries(scripts)) {
    const std::string bin = scripts + "/" + language + "/bin";
    for (const std::string& file : directory_entries(bin)) {
      if (!file.ends_with("-report") || file.size() == 7) continue;
      ListedScript script;
      script.name = file.substr(0, file.size() - 7);
      bool seen = std::any_of(listed.begin(), listed.end(), [&](const ListedScript& other) {
        return ::strcasecmp(other.name.c_str(), script.name.c_str()) == 0;
      });
      if (seen) continue;
      read_script_info(bin + "/" + file, script);
      listed.push_back(std::move(script));
    }
  }
  return listed;
}

std::string perf_script_list_text(const std::vector<ListedScript>& scripts) {
  std::string text = "List of available trace scripts:\n";
  for (const ListedScript& script : scripts) {
    text += fmt::format("  {:<36} {}\n", script.name + " " + script.arguments, script.description);
  }
  return text;
}

std::optional<std::string> perf_script_half(const std::string& exec_path, const std::string& name,
                                            const std::string& suffix) {
  const std::string scripts = exec_path + "/scripts";
  for (const std::string& language : directory_entries(scripts)) {
    std::string path = scripts + "/" + language + "/bin/" + name + suffix;
    if (readable(path)) return path;
  }
  return std::nullopt;
}

std::optional<std::string> find_perf_script(const std::string& exec_path, const std::string& name) {
  if (readable(name)) return name;
  std::string shipped = exec_path + "/scripts/python/" + name;
  if (readable(shipped)) return shipped;
  return std::nullopt;
}

std::size_t required_report_arguments(const std::string& report_path) {
  ListedScript script;
  read_script_info(report_path, script);
  return static_cast<std::size_t>(
      std::count(script.arguments.begin(), script.arguments.end(), '<'));
}

}  // namespace perfscope
