// perfscope-script-python: perf's scripting, run by `perfscope script` (cmd_script.cpp) when
// its words ask for it (-s, -g, -l, `record NAME`, `report NAME`, a script's name), with the
// words after "script". A helper beside the static CLI: embedding CPython needs a dynamic
// libpython (its extension modules load into this process).
//
//   perfscope script -s FILE.py [ARG...]       the script over perf.data (-i FILE)
//   perfscope script -l                         perf's shipped scripts (and PERF_EXEC_PATH's)
//   perfscope script record NAME [ARG...]       NAME's record half (bin/NAME-record)
//   perfscope script report NAME [ARG...]       NAME's report half (bin/NAME-report)
//   perfscope script NAME [ARG...]              both, the record piped into the report
//   perfscope script -g python                  perf-script.py: a handler for every event
#include <fmt/format.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/scripting/perf_scripts_directory.hpp"
#include "analysis/scripting/python_script_session.hpp"
#include "analysis/scripting/python_script_skeleton.hpp"

namespace {

using perfscope::PythonScriptOptions;

constexpr const char* usage_text =
    "Usage: perfscope script [-i FILE] -s SCRIPT.py [SCRIPT ARGS...]\n"
    "       perfscope script -l\n"
    "       perfscope script record|report NAME [ARGS...]\n"
    "       perfscope script NAME [ARGS...]\n"
    "       perfscope script [-i FILE] -g python\n"
    "\n"
    "perf's Python scripts, run unchanged (perf script -s): the script's handlers get perf's\n"
    "arguments (process_event's param_dict, subsystem__event's fields, trace_unhandled,\n"
    "context_switch, throttle), perf_trace_context's functions, and PERF_EXEC_PATH's\n"
    "Perf-Trace-Util (perf's own where perf is installed, else perfscope's).\n"
    "\n"
    "  -i, --input FILE          the recording (default perf.data; - or a pipe: standard input)\n"
    "  -s, --script [LANG:]FILE  the script; the words after it are its sys.argv\n"
    "  -g, --gen-script python   write perf-script.py, a handler for each of the file's events\n"
    "  -l, --list                the scripts under PERF_EXEC_PATH with their arguments\n"
    "  --max-stack N             callchain entries a handler gets (default 127)\n"
    "  -G, --hide-call-graph     no callchains\n"
    "  -C, --cpu LIST            only samples of these CPUs (0-3,7)\n"
    "  --pid LIST, --tid LIST    only samples of these processes, threads\n"
    "  --comm LIST               only samples of threads with these comms\n"
    "  --inline, --no-inline     inlined calls as frames of their own (default: DWARF stacks)\n"
    "  -f, --force, -q, --quiet  accepted, as perf accepts them\n";

[[noreturn]] void usage_error(const std::string& message) {
  fmt::print(stderr, "perfscope script: {}\n\n{}", message, usage_text);
  std::exit(2);
}

std::string helper_directory() {
  char self[4096] = {};
  ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string path = length > 0 ? std::string(self, static_cast<std::size_t>(length)) : ".";
  return path.substr(0, path.rfind('/'));
}

// perfscope's own Perf-Trace-Util: in the build tree beside this program, installed under
// share/perfscope.
std::string own_exec_path() {
  std::string directory = helper_directory();
  for (const std::string& candidate :
       {directory + "/perf-core", directory + "/../share/perfscope/perf-core"}) {
    if (::access((candidate + "/scripts/python/Perf-Trace-Util/lib/Perf/Trace/Core.py").c_str(),
                 R_OK) == 0) {
      return candidate;
    }
  }
  return directory + "/perf-core";
}

// Where `perf` runs perfscope, for perf's record and report shell scripts (they call perf).
std::string perf_shim_directory() {
  std::string directory = helper_directory();
  for (const std::string& candidate :
       {directory + "/perf-shim", directory + "/../libexec/perfscope/perf-shim"}) {
    if (::access((candidate + "/perf").c_str(), X_OK) == 0) return candidate;
  }
  throw std::runtime_error(
      "cannot find perfscope's perf-shim/perf beside perfscope-script-python: perf's record and "
      "report scripts call `perf`; build the perfscope target (or cmake --install) to make it");
}

std::set<std::uint32_t> number_list(const std::string& option, const std::string& text) {
  std::set<std::uint32_t> numbers;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    std::uint32_t first = 0, last = 0;
    std::size_t dash = item.find('-');
    auto parse = [&](std::string_view digits, std::uint32_t& out) {
      auto result = std::from_chars(digits.data(), digits.data() + digits.size(), out);
      if (result.ec != std::errc() || result.ptr != digits.data() + digits.size()) {
        usage_error(fmt::format("{} {}: '{}' is not a number or a range (give 0-3,7)", option, text,
                                std::string(digits)));
      }
    };
    if (dash == std::string::npos) {
      parse(item, first);
      last = first;
    } else {
      parse(std::string_view(item).substr(0, dash), first);
      parse(std::string_view(item).substr(dash + 1), last);
    }
    for (std::uint32_t n = first; n <= last; ++n) numbers.insert(n);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return numbers;
}

std::set<std::string> word_list(const std::string& text) {
  std::set<std::string> words;
  std::size_t at = 0;
  for (std::size_t comma; (comma = text.find(',', at)) != std::string::npos; at = comma + 1) {
    words.insert(text.substr(at, comma - at));
  }
  words.insert(text.substr(at));
  return words;
}

// Runs /bin/sh with `words` (perf runs the record and report halves so), `perf` being perfscope.
[[noreturn]] void exec_shell(const std::vector<std::string>& words, const std::string& exec_path) {
  ::setenv("PERF_EXEC_PATH", exec_path.c_str(), 1);
  const char* path = std::getenv("PATH");
  std::string shim = perf_shim_directory();
  ::setenv("PATH", (shim + ":" + (path != nullptr ? path : "/usr/bin:/bin")).c_str(), 1);
  std::vector<char*> argv;
  std::vector<std::string> copy = words;
  for (std::string& word : copy) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execv("/bin/sh", argv.data());
  throw std::runtime_error(fmt::format("cannot run /bin/sh: {}", std::strerror(errno)));
}

bool prefix_of(const std::string& word, const char* full) {
  return word.size() > 2 && std::string_view(full).starts_with(word);
}

bool stdin_is_pipe() {
  struct stat status;
  return ::fstat(0, &status) == 0 && S_ISFIFO(status.st_mode);
}

int run(std::vector<std::string> words) {
  PythonScriptOptions options;
  options.symbols.parameter_lists = false;  // perf's scripts get its short names ("spin")
  bool input_given = false, list = false;
  std::string generate, script;
  std::size_t i = 0;
  auto value = [&](const std::string& option) -> std::string {
    if (i + 1 >= words.size()) usage_error(fmt::format("{} needs a value", option));
    return words[++i];
  };
  for (; i < words.size(); ++i) {
    std::string word = words[i];
    std::string inline_value;
    if (word.starts_with("--") && word.find('=') != std::string::npos) {
      inline_value = word.substr(word.find('=') + 1);
      word = word.substr(0, word.find('='));
      words[i] = word;
      words.insert(words.begin() + static_cast<std::ptrdiff_t>(i) + 1, inline_value);
    }
    if (word == "--") {
      ++i;
      break;
    }
    if (!word.starts_with("-") || word == "-") break;
    if (word == "-i" || word == "--input") {
      options.input = value(word);
      input_given = true;
    } else if (word == "-s" || word == "--script") {
      // perf goes on reading its own options after the script's name: the script's words
      // start at the first word that is no option, or after "--".
      script = value(word);
    } else if (word == "-g" || word == "--gen-script") {
      generate = value(word);
    } else if (word == "-l" || word == "--list") {
      list = true;
    } else if (word == "--max-stack") {
      std::string text = value(word);
      auto result = std::from_chars(text.data(), text.data() + text.size(), options.max_stack);
      if (result.ec != std::errc()) usage_error("--max-stack takes a number");
    } else if (word == "-G" || word == "--hide-call-graph") {
      options.callchains = false;
    } else if (word == "-C" || word == "--cpu") {
      options.cpus = number_list(word, value(word));
    } else if (word == "--pid") {
      options.pids = number_list(word, value(word));
    } else if (word == "--tid") {
      options.tids = number_list(word, value(word));
    } else if (word == "--comm") {
      options.comms = word_list(value(word));
    } else if (word == "--inline") {
      options.inline_choice = 1;
    } else if (word == "--no-inline") {
      options.inline_choice = -1;
    } else if (word == "-f" || word == "--force" || word == "-q" || word == "--quiet" ||
               word == "-v" || word == "--verbose") {
    } else if (word == "-F" || word == "--fields") {
      if (!generate.empty()) usage_error("custom fields not supported for generated scripts");
      value(word);
    } else if (word == "-h" || word == "--help") {
      std::fputs(usage_text, stdout);
      return 0;
    } else {
      usage_error(fmt::format(
          "unknown option {} with a Python script (the options above apply; the script's own "
          "options go after -s SCRIPT)",
          word));
    }
  }
  std::vector<std::string> rest(
      words.begin() + static_cast<std::ptrdiff_t>(std::min(i, words.size())), words.end());
  options.exec_path = perfscope::choose_perf_exec_path(own_exec_path());
  if (!input_given && stdin_is_pipe()) options.input = "-";

  if (list) {
    auto scripts = perfscope::list_perf_scripts(options.exec_path);
    if (!scripts) {
      std::printf("open(%s/scripts) failed.\nCheck \"PERF_EXEC_PATH\" env to set scripts dir.\n",
                  options.exec_path.c_str());
      return 255;
    }
    std::fputs(perfscope::perf_script_list_text(*scripts).c_str(), stdout);
    return 0;
  }
  if (!generate.empty()) {
    if (strcasecmp(generate.c_str(), "python") != 0 && strcasecmp(generate.c_str(), "py") != 0) {
      usage_error(fmt::format(
          "-g {}: perfscope generates Python scripts only (-g python); perf's Perl scripts are "
          "not supported",
          generate));
    }
    perfscope::write_python_skeleton(options.input, "perf-script.py");
    fmt::print(stderr, "generated Python script: perf-script.py\n");
    return 0;
  }
  if (script.empty()) {
    if (rest.empty()) usage_error("give -s SCRIPT.py, -l, -g python, or record/report NAME");
    std::string first = rest.front();
    if (prefix_of(first, "record") || prefix_of(first, "report")) {
      bool record = prefix_of(first, "record");
      if (rest.size() < 2) {
        usage_error(fmt::format("script {} needs a script's name (perfscope script -l lists them)",
                                record ? "record" : "report"));
      }
      auto half =
          perfscope::perf_script_half(options.exec_path, rest[1], record ? "-record" : "-report");
      if (!half) {
        fmt::print(stderr,
                   "perfscope script: no script {} under {}/scripts (perfscope script -l lists "
                   "them)\n",
                   rest[1] + (record ? "-record" : "-report"), options.exec_path);
        return 255;
      }
      std::vector<std::string> shell{"/bin/sh", *half};
      // perf records system-wide when no command follows the script's own options.
      bool command = false;
      for (std::size_t k = 2; k < rest.size(); ++k) command |= !rest[k].starts_with("-");
      if (record && !command) shell.push_back("-a");
      shell.insert(shell.end(), rest.begin() + 2, rest.end());
      exec_shell(shell, options.exec_path);
    }
    auto record_half = perfscope::perf_script_half(options.exec_path, first, "-record");
    auto report_half = perfscope::perf_script_half(options.exec_path, first, "-report");
    if (record_half && report_half) {
      return -1000;  // live mode: handled by the caller (needs both halves)
    }
    auto found = perfscope::find_perf_script(options.exec_path, first);
    if (!found) {
      fmt::print(stderr,
                 "Couldn't find script '{}'\n\n See perfscope script -l for available "
                 "scripts.\n",
                 first);
      return 255;
    }
    script = *found;
    rest.erase(rest.begin());
    --i;
  } else {
    std::size_t colon = script.find(':');
    std::string language;
    if (colon != std::string::npos && ::access(script.c_str(), R_OK) != 0) {
      language = script.substr(0, colon);
      script = script.substr(colon + 1);
    } else if (std::size_t dot = script.rfind('.'); dot != std::string::npos) {
      language = script.substr(dot + 1);
    }
    if (strcasecmp(language.c_str(), "pl") == 0 || strcasecmp(language.c_str(), "perl") == 0) {
      throw std::runtime_error(fmt::format(
          "{}: perf's Perl scripts are not supported by perfscope; its Python scripts are "
          "(perfscope script -l lists them)",
          script));
    }
    if (strcasecmp(language.c_str(), "py") != 0 && strcasecmp(language.c_str(), "python") != 0) {
      usage_error(
          fmt::format("{}: invalid script extension (give a .py file, or py:FILE)", script));
    }
    if (auto found = perfscope::find_perf_script(options.exec_path, script)) script = *found;
  }
  options.script = script;
  options.arguments = rest;
  return perfscope::run_python_script(options);
}

// `perfscope script NAME [ARGS]`: NAME's record half piped into its report half, as perf runs
// a script "live".
int run_live(const std::vector<std::string>& words) {
  std::string exec_path = perfscope::choose_perf_exec_path(own_exec_path());
  std::size_t first = 0;
  while (first < words.size() && words[first].starts_with("-")) ++first;
  const std::string name = words[first];
  std::vector<std::string> arguments(words.begin() + static_cast<std::ptrdiff_t>(first) + 1,
                                     words.end());
  std::string record = *perfscope::perf_script_half(exec_path, name, "-record");
  std::string report = *perfscope::perf_script_half(exec_path, name, "-report");
  const bool top = name.ends_with("top");
  std::size_t report_count = top ? arguments.size() : perfscope::required_report_arguments(report);
  if (arguments.size() < report_count) {
    fmt::print(stderr, "'{}' script requires options\n", name);
    return 255;
  }
  std::vector<std::string> report_words(
      arguments.begin(), arguments.begin() + static_cast<std::ptrdiff_t>(report_count));
  std::vector<std::string> record_words(
      arguments.begin() + static_cast<std::ptrdiff_t>(report_count), arguments.end());
  bool command = false;
  for (const std::string& word : record_words) command |= !word.starts_with("-");
  int pipe_ends[2];
  if (::pipe(pipe_ends) != 0) throw std::runtime_error("cannot make a pipe");
  pid_t child = ::fork();
  if (child == 0) {
    ::dup2(pipe_ends[1], 1);
    ::close(pipe_ends[0]);
    ::close(pipe_ends[1]);
    std::vector<std::string> shell{"/bin/sh", record};
    if (top || !command) shell.push_back("-a");
    shell.insert(shell.end(), {"-q", "-o", "-"});
    shell.insert(shell.end(), record_words.begin(), record_words.end());
    exec_shell(shell, exec_path);
  }
  ::dup2(pipe_ends[0], 0);
  ::close(pipe_ends[0]);
  ::close(pipe_ends[1]);
  std::vector<std::string> shell{"/bin/sh", report};
  shell.insert(shell.end(), report_words.begin(), report_words.end());
  shell.insert(shell.end(), {"-i", "-"});
  exec_shell(shell, exec_path);
}

}  // namespace

// The sanitizer build's leak check: what CPython keeps after Py_FinalizeEx (interned strings,
// extension modules' state: PySide2's and Qt's, the libpq results perf's export script never
// clears) is theirs, not a leak of perfscope's.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libpython3\nleak:libshiboken2\nleak:libpyside2\nleak:libQt5\nleak:PySide2\n"
         "leak:libpq\n";
}

int main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  try {
    int status = run(words);
    if (status == -1000) return run_live(words);
    return status;
  } catch (const std::exception& error) {
    std::fflush(stdout);
    fmt::print(stderr, "perfscope script: {}\n", error.what());
    return 1;
  }
}
