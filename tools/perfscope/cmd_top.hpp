// perfscope top: a live view of where the CPU goes, refreshed every few seconds, with old samples
// decaying (perf top); an ncurses screen on a terminal, or N text snapshots (--stdio, --batch).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "perfscope/engine/machine_check.hpp"

namespace perfscope::cli {

// What `perfscope top` needs here, for doctor: the whole machine (root, CAP_PERFMON or
// perf_event_paranoid <= 0) or only one's own processes in user space, kernel symbols, and a
// terminal type terminfo knows for the live view.
MachineCheck top_check(const MachineReport& report);

struct TopOptions {
  std::string events;
  std::uint64_t frequency = 4000;
  std::uint64_t period = 0;
  int pid = -1;
  int tid = -1;
  bool all_cpus = false;
  std::string cpu_list;
  std::string cgroup;
  std::vector<std::string> command;  // always empty: top attaches, it runs nothing
  bool call_graph = false;           // -g
  int children = 0;                  // > 0: --children, < 0: --no-children, 0: with -g
  double delay_seconds = 2.0;
  std::string sort = "dso,sym";
  bool stdio = false;
  int batch = 0;  // > 0: print this many snapshots, then exit
  std::size_t rows = 0;
  bool show_samples = false;  // --show-nr-samples: the Samples column
  double percent_limit = 0;
  bool zero = false;
  std::string symbol_filter, dso_filter;
  std::size_t mmap_pages = 0;
  KernelSymbolOptions kernel;   // -k/--vmlinux, --ignore-vmlinux, --demangle-kernel
  std::string kallsyms;         // --kallsyms FILE
  EventSwitchOptions switches;  // --switch-on, --switch-off, --show-on-off-events
};

class TopCommand {
 public:
  explicit TopCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  TopOptions options_;
};

}  // namespace perfscope::cli
