#include "subcommand_table.hpp"

#include <array>
#include <stdexcept>
#include <string>

namespace perfscope::cli {

namespace {

constexpr std::array subcommands{
    SubcommandEntry{"stat", "Count events while a command runs, or for a target", true},
    SubcommandEntry{"doctor", "Say what this machine can measure and how to fix what not", true},
    SubcommandEntry{"list", "List the events this machine offers and whether they open", true},
    SubcommandEntry{"record", "Sample a command or a target into a perf.data file", true},
    SubcommandEntry{"script", "Print the records of a perf.data file"},
    SubcommandEntry{"report", "Show where the samples of a perf.data file went"},
    SubcommandEntry{"view", "Explore a recording in the browser: flame graph, call tree, timeline"},
    SubcommandEntry{
        "diff", "Compare two recordings (perf.data) or two sets of repeated counts (stat --json)"},
    SubcommandEntry{"annotate", "Show the samples of functions per instruction and source line"},
    SubcommandEntry{"trace",
                    "Trace system calls like strace (without ptrace: from the syscall tracepoints)",
                    true},
    SubcommandEntry{"inject",
                    "Rewrite a recording: --unwind turns DWARF stack copies into call chains"},
    SubcommandEntry{
        "archive",
        "Pack the files a recording's samples reach, for reporting it on another machine"},
    SubcommandEntry{"top", "Live view of the functions using the CPU (perf top)", true},
    SubcommandEntry{"sched",
                    "Scheduler analysis: per-switch history, wake-up latency, thread states", true},
    SubcommandEntry{"push", "Send a profile to Pyroscope or Parca"},
    SubcommandEntry{"evlist", "List the events of a perf.data file (perf evlist)"},
    SubcommandEntry{"buildid-list",
                    "List the build ids of a recording's files (perf buildid-list)"},
    SubcommandEntry{"buildid-cache",
                    "Add files to perf's build-id cache (~/.debug), list, remove (perf's)"},
    SubcommandEntry{"probe", "Add, list and remove uprobes and kprobes (perf probe)"},
    SubcommandEntry{"kallsyms", "Say where kernel symbols are (perf kallsyms)"},
    SubcommandEntry{"version", "The version, and with --build-options what this build has"},
    SubcommandEntry{"data", "Convert a recording: data convert --to-json (perf's JSON layout)"},
    SubcommandEntry{"config", "Show and set perf's settings (~/.perfconfig), as perf config"},
    SubcommandEntry{"check", "Whether this build has a feature (perf check feature NAME)"},
};

}  // namespace

std::span<const SubcommandEntry> subcommand_table() { return subcommands; }

bool is_subcommand_name(std::string_view word) {
  for (const SubcommandEntry& entry : subcommands) {
    if (entry.name == word) return true;
  }
  return false;
}

bool opens_events(std::string_view name) {
  for (const SubcommandEntry& entry : subcommands) {
    if (entry.name == name) return entry.opens_events;
  }
  return false;
}

CLI::App* add_subcommand_named(CLI::App& app, std::string_view name) {
  for (const SubcommandEntry& entry : subcommands) {
    if (entry.name == name) {
      return app.add_subcommand(std::string(entry.name), std::string(entry.description));
    }
  }
  throw std::logic_error("add_subcommand_named: no subcommand " + std::string(name));
}

}  // namespace perfscope::cli
