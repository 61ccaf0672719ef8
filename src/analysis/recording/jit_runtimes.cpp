#include "perfscope/analysis/recording/jit_runtimes.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "perfscope/core/trim_whitespace.hpp"

namespace perfscope {

namespace {

namespace fs = std::filesystem;

// `name` as execvp finds it: a path as given, else the first executable of that name on PATH.
std::string find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::istringstream directories(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string directory; std::getline(directories, directory, ':');) {
    std::string candidate = (directory.empty() ? std::string(".") : directory) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// A script's interpreter from its "#!" line ("#!/usr/bin/env node" -> node).
std::string interpreter_of(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line) || !line.starts_with("#!")) return {};
  std::istringstream words(line.substr(2));
  std::string program, argument;
  words >> program >> argument;
  if (program.ends_with("/env")) {
    if (argument == "-S") words >> argument;
    return argument;
  }
  return program;
}

std::string appended(const char* variable, std::string_view ours) {
  const char* existing = std::getenv(variable);
  if (!existing || *existing == '\0') return std::string(ours);
  return fmt::format("{} {}", existing, ours);
}

JitRuntimeSwitches switches_for_executable(const std::string& executable, int depth) {
  JitRuntimeSwitches result;
  std::error_code error;
  fs::path resolved = fs::canonical(executable, error);
  result.path = error ? executable : resolved.string();
  std::string name = fs::path(result.path).filename().string();
  std::string given = fs::path(executable).filename().string();
  if (name == "node" || name == "nodejs" || given == "node" || given == "nodejs") {
    result.runtime = "node";
    result.environment.emplace_back(
        "NODE_OPTIONS",
        appended("NODE_OPTIONS",
                 "--perf-prof --perf-prof-unwinding-info --interpreted-frames-native-stack"));
    result.note =
        "a jitdump (jit-PID.dump in its working directory) with each function's code, "
        "and interpreted functions as frames of their own";
  } else if (name == "java" || given == "java") {
    result.runtime = "java";
    result.environment.emplace_back(
        "JAVA_TOOL_OPTIONS", appended("JAVA_TOOL_OPTIONS",
                                      "-XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions "
                                      "-XX:+DumpPerfMapAtExit"));
    result.note =
        "frame pointers through compiled Java, and /tmp/perf-PID.map written as the "
        "JVM exits (JDK 17 and later)";
  } else if (name.starts_with("python") || given.starts_with("python")) {
    result.runtime = "python";
    std::string version = name.starts_with("python") ? name.substr(6) : std::string();
    result.version = version;
    int major = 0, minor = 0;
    bool parsed = std::sscanf(version.c_str(), "%d.%d", &major, &minor) == 2;
    if (parsed && (major > 3 || (major == 3 && minor >= 12))) {
      result.environment.emplace_back("PYTHONPERFSUPPORT", "1");
      result.note = "/tmp/perf-PID.map naming the trampoline of each Python function";
    } else {
      result.note = parsed ? fmt::format(
                                 "Python {} has no perf support (Python 3.12 adds it): "
                                 "nothing was set",
                                 version)
                           : "the Python version is not in its file name: nothing was set "
                             "(Python 3.12 and later take PYTHONPERFSUPPORT=1)";
    }
  } else if (depth == 0) {
    std::string interpreter = interpreter_of(result.path);
    if (!interpreter.empty()) {
      std::string found = find_executable(interpreter);
      if (!found.empty()) {
        JitRuntimeSwitches via = switches_for_executable(found, depth + 1);
        if (!via.runtime.empty()) return via;
      }
    }
  }
  if (result.runtime.empty()) {
    result.note = fmt::format(
        "{} is not a runtime --jit knows (node, java, python 3.12 and "
        "later): nothing was set",
        executable);
  }
  return result;
}

}  // namespace

JitRuntimeSwitches jit_switches_for(const std::vector<std::string>& command) {
  if (command.empty()) {
    JitRuntimeSwitches none;
    none.note = "--jit sets a runtime's switches for a command perfscope starts: give one";
    return none;
  }
  std::string executable = find_executable(command.front());
  if (executable.empty()) {
    JitRuntimeSwitches none;
    none.note = fmt::format("{} is not on PATH: nothing was set", command.front());
    return none;
  }
  return switches_for_executable(executable, 0);
}

std::vector<JitRuntimeSwitches> installed_jit_runtimes() {
  std::vector<JitRuntimeSwitches> found;
  for (const char* name : {"node", "java", "python3"}) {
    std::string executable = find_executable(name);
    if (!executable.empty()) found.push_back(switches_for_executable(executable, 0));
  }
  return found;
}

}  // namespace perfscope
