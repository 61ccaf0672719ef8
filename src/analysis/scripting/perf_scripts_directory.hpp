// Where perf's scripting looks for scripts and helpers (PERF_EXEC_PATH): the scripts/python
// folder, Perf-Trace-Util's modules, and the bin/NAME-record and bin/NAME-report pairs that
// `script -l`, `script record NAME` and `script report NAME` use.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace perfscope {

// The exec path for a run: $PERF_EXEC_PATH when set, else perf's own scripts when perf is
// installed (/usr/lib/perf-core), else perfscope's compatible helpers (`own`).
std::string choose_perf_exec_path(const std::string& own);

struct ListedScript {
  std::string name;         // "syscall-counts"
  std::string arguments;    // its report's "# args:" line ("[comm]")
  std::string description;  // its report's "# description:" line
};
// Every script with a NAME-report under EXEC_PATH/scripts/*/bin, in directory order as perf
// lists them (names that differ in case only once). nullopt when EXEC_PATH/scripts is missing.
std::optional<std::vector<ListedScript>> list_perf_scripts(const std::string& exec_path);
// perf script -l's text.
std::string perf_script_list_text(const std::vector<ListedScript>& scripts);

// EXEC_PATH/scripts/LANG/bin/NAME{suffix} ("-record", "-report"), if there is one.
std::optional<std::string> perf_script_half(const std::string& exec_path, const std::string& name,
                                            const std::string& suffix);
// The script file `name` names: itself when readable, else EXEC_PATH/scripts/python/NAME.
std::optional<std::string> find_perf_script(const std::string& exec_path, const std::string& name);
// The report's "# args:" line as perf counts it: the number of required (<...>) arguments.
std::size_t required_report_arguments(const std::string& report_path);

}  // namespace perfscope
