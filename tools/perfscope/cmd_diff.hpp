// perfscope diff: what changed between two recordings (perf.data) or two sets of repeated counts
// (stat --json files).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "perfscope/analysis/diff/perf_diff_table.hpp"

namespace perfscope::cli {

struct DiffCommandOptions {
  std::string base, current;
  std::string sort;
  bool children = false;
  double percent_limit = 0;
  std::string comm_list, dso_list, symbol_list;
  std::vector<std::uint32_t> pids, tids;
  bool dump_raw_trace = false;  // -D: perf's raw dump of each recording first
  std::string cpu_list, time;   // --cpu, --time: each recording's samples there only
  bool quiet = false;           // -q: no warnings on stderr
  std::string event;
  bool full_names = false;
  bool raw_names = false;
  std::string debug_root;
  std::string format;
  std::string output;
  std::vector<std::string> fail_if;
  double resolve_percent = 1.0;
  std::size_t threads = 0;  // add_threads_option's
  // perf's table (any of these chooses it): -c, -p, -F, -b, -o, -t, --percentage.
  std::string compute;
  bool show_period = false, show_formula = false, baseline_only = false;
  std::string order, percentage, field_separator;
  SymbolSourceOptions symbol_sources;  // --symfs, --kallsyms, --archive, --demangle, -f
};

class DiffCommand {
 public:
  explicit DiffCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  // 0, or 3 when a --fail-if threshold is crossed; errors are thrown.
  int run();

 private:
  int run_profiles();
  int run_counts();
  std::optional<PerfDiffLayout> perf_table_layout(const std::string& format) const;

  CLI::App* app_;
  DiffCommandOptions options_;
};

}  // namespace perfscope::cli
