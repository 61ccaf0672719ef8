// The rules of perfscope's command line that every subcommand shares: where a measured command
// starts, what an option error says, and the list of subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace perfscope::cli {

// The help footer that states the rule for where the command starts (stat, record).
std::string command_rule_help(const std::string& verb);

// Splits `words` (argv without the program name) at the "--" that ends the options of a
// subcommand that runs a command: only a "--" before the command's first word counts, so a "--"
// that belongs to the command stays in it. Returns the words after that "--" (empty without one)
// and leaves the words before it in `words`. The subcommand may be a subcommand's own ("sched
// record").
std::vector<std::string> split_off_command(const CLI::App& app, std::vector<std::string>& words);

// For a subcommand that runs a command: throws CLI::ExtrasError when the first word CLI11 left
// for the command starts with '-' (an option the subcommand does not have).
void check_no_unknown_option(const CLI::App& subcommand);

// Prints an option error as "perfscope SUB: what; what to do" on stderr and returns 2, or the
// subcommand list (no subcommand given) and returns 1, or lets CLI11 print help or the version.
int report_parse_error(CLI::App& app, const CLI::ParseError& error);

// "usage: perfscope ..." and one line per subcommand, as perf prints without arguments.
void print_subcommand_list(const CLI::App& app, std::FILE* out);

// The sample filters report, diff and annotate share (--comm, --pid, --tid, --dso, and --symbol
// where symbols is given). Plain strings are split by the caller: CLI11 would read
// "[kernel.kallsyms]" as a bracketed list.
struct SampleFilterOptions {
  std::string* comms = nullptr;
  std::vector<std::uint32_t>* pids = nullptr;
  std::vector<std::uint32_t>* tids = nullptr;
  std::string* dsos = nullptr;
  std::string* symbols = nullptr;
};
void add_sample_filter_options(CLI::App& app, const SampleFilterOptions& targets);

}  // namespace perfscope::cli
