// The rules of perfscope's command line that every subcommand shares: where a measured command
// starts, what an option error says, and the list of subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/analysis/symbols/symbol_file_locator.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"
#include "subcommand_table.hpp"

namespace perfscope {
class ExtractedSymbolArchive;
class PerfDataReader;
}  // namespace perfscope

namespace perfscope::cli {

// The help footer that states the rule for where the command starts (stat, record).
std::string command_rule_help(const std::string& verb);

// An option perf has and perfscope does not: taken by the parser so that using it is an option
// error that says `why` (what perfscope does instead), never "unknown option".
void add_refused_option(CLI::App& app, const std::string& names, const std::string& description,
                        bool takes_value, std::string why);

// CLI11's ExistingFile in perfscope's words: "cannot read DIR: it is a directory" or "no such
// file", the file named, as every other input error says it.
CLI::Validator readable_file();

// The helper program `name` installed beside this static binary (a build tree) or in
// ../libexec/perfscope (an installation): the parts that link shared libraries. Throws with where
// it was looked for and how to get it; `what` says what it is ("the HTTP helper, from libcurl")
// and `target` its CMake target.
std::string find_helper(std::string_view name, std::string_view what, std::string_view target);

// "a,b,,c" -> {"a", "b", "c"}, for options that take a list: CLI11's own delimiter would split
// "[kernel.kallsyms]" and similar names too.
std::vector<std::string> split_comma_list(const std::string& text);

// Splits `words` (argv without the program name) at the "--" that ends the options of a
// subcommand that runs a command: only a "--" before the command's first word counts, so a "--"
// that belongs to the command stays in it. Returns the words after that "--" (empty without one)
// and leaves the words before it in `words`. The subcommand may be a subcommand's own ("sched
// record").
std::vector<std::string> split_off_command(const CLI::App& app, std::vector<std::string>& words);

// The help text that `words` ask for with -h/--help, if they do: the whole tool's, or the one of
// the (nested) subcommand the words name, as CLI11 would print it, but found without parsing.
// CLI11 answers --help by throwing, and the first exception thrown in the static binary sorts
// every unwind table entry first (2 ms of a 3.5 ms run). A --help after the measured command's
// first word, or after "--", is the command's own.
std::optional<std::string> help_text_requested(const CLI::App& app,
                                               const std::vector<std::string>& words);

// For a subcommand that runs a command: throws CLI::ExtrasError when the first word CLI11 left
// for the command starts with '-' (an option the subcommand does not have).
void check_no_unknown_option(const CLI::App& subcommand);

// The exit status of an option error (an unknown option, a missing or wrong value, a bad -e
// event), as perf's: scripts written for perf test for 129.
inline constexpr int usage_error_status = 129;

// Prints an option error as "perfscope SUB: what; what to do" on stderr and returns
// usage_error_status; a word that names no command gets 1 (as in perf), no subcommand the list
// and 1; or lets CLI11 print help or the version.
int report_parse_error(CLI::App& app, const CLI::ParseError& error);

// An option value found wrong after parsing (a subcommand's std::invalid_argument: options that
// exclude each other, a format it does not write, a sort key it does not know): printed as
// report_parse_error prints option errors, "perfscope SUB: what; run 'perfscope SUB --help' for
// the options", returning usage_error_status.
int report_option_value_error(const CLI::App& app, std::string_view message);

// "usage: perfscope ..." and one line per subcommand, as perf prints without arguments.
void print_subcommand_list(const CLI::App& app, std::FILE* out);

// The sample filters report, diff and annotate share (--comms, --pid, --tid, --dsos, and
// --symbols where symbols is given; perfscope's singular spellings too). Plain strings are split
// by the caller: CLI11 would read "[kernel.kallsyms]" as a bracketed list.
struct SampleFilterOptions {
  std::string* comms = nullptr;
  std::vector<std::uint32_t>* pids = nullptr;
  std::vector<std::uint32_t>* tids = nullptr;
  std::string* dsos = nullptr;
  std::string* symbols = nullptr;
  // The command's perf short forms ("-c" for report's --comms, "-C" for diff's), or empty.
  std::string comm_short, dso_short, symbol_short;
};
void add_sample_filter_options(CLI::App& app, const SampleFilterOptions& targets);

// perf's --switch-on EVENT, --switch-off EVENT and --show-on-off-events (report, script).
struct EventSwitchOptions {
  std::string on, off;
  bool show = false;
};
void add_event_switch_options(CLI::App& app, EventSwitchOptions& targets);

// perf's kernel-symbol options: -k/--vmlinux FILE, --ignore-vmlinux, --demangle-kernel and
// -m/--modules (module symbols of the live kernel: what perfscope reads from kallsyms anyway).
struct KernelSymbolOptions {
  std::string vmlinux;
  bool ignore_vmlinux = false;
  bool demangle_kernel = false;
  bool modules = false;
};
// `vmlinux_names` and `modules_names` as the command has them in perf ("-k,--vmlinux";
// "-m,--modules", or empty where perf has no such option).
void add_kernel_symbol_options(CLI::App& app, KernelSymbolOptions& targets,
                               const std::string& vmlinux_names, const std::string& modules_names);
void apply_kernel_symbol_options(const KernelSymbolOptions& options, SymbolizerOptions& symbols);

// Where report, script, annotate and archive read the recorded files when they are not (or no
// longer) at their recorded paths: --archive FILE (a perfscope or perf archive, or a directory
// in perf's ~/.debug layout; repeatable) and --symfs DIR (perf's option).
struct SymbolSourceOptions {
  std::vector<std::string> archives;
  std::string symfs;
  std::string kallsyms;  // perf's --kallsyms FILE: kernel symbols from this file
  KernelSymbolOptions kernel;
  int demangle = 0;    // perf's --demangle (> 0) and --no-demangle (< 0)
  bool force = false;  // perf's -f/--force: perfscope refuses no file for its owner anyway
};
void add_symbol_source_options(CLI::App& app, SymbolSourceOptions& targets);

// --inline/--no-inline of report and script: inlined calls as frames of their own. `choice` > 0
// asks for them, < 0 refuses them, 0 takes perf's default: on for recordings with DWARF call
// chains (a sampled user stack), off otherwise.
void add_inline_option(CLI::App& app, int& choice);

// -e/--event as perf takes it: given several times, the lists add up ("-e a -e b" is "a,b"), each
// -e taking one value (a command after it stays the command).
CLI::Option* add_event_list_option(CLI::App& app, std::string& events,
                                   const std::string& description);
bool inline_frames_wanted(int choice, const PerfDataReader& reader);

// --threads N of the commands that analyse a recording (report, script, diff, archive, view):
// 0 (the default) the CPUs the process may use (at most 16) where the recording is large enough
// to gain, 1 the calling thread alone. The output is the same whatever the number.
void add_threads_option(CLI::App& app, std::size_t& threads);

// The archives of `options` unpacked (into private directories, removed with this object) and
// the lookup roots they and the symfs make; throws std::runtime_error saying what is wrong.
class SymbolSources {
 public:
  explicit SymbolSources(const SymbolSourceOptions& options);
  ~SymbolSources();
  SymbolSources(const SymbolSources&) = delete;
  SymbolSources& operator=(const SymbolSources&) = delete;
  const SymbolLookupRoots& roots() const noexcept { return roots_; }
  // The lookup roots, --kallsyms, the kernel-symbol options and --demangle/--no-demangle into
  // `symbols`.
  void apply(SymbolizerOptions& symbols) const;

 private:
  std::vector<ExtractedSymbolArchive> extracted_;
  SymbolLookupRoots roots_;
  std::string kallsyms_;
  KernelSymbolOptions kernel_;
  int demangle_ = 0;
};

}  // namespace perfscope::cli
