// perfscope sched: scheduler analysis of a recording of the sched tracepoints (perf sched record's
// files and ours): timehist, latency, and each thread's time by state; `sched record` makes such
// a recording.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>
#include <vector>

namespace perfscope::cli {

struct SchedCommandOptions {
  std::string input = "perf.data";
  bool dump_raw_trace = false;  // -D: perf's raw dump of every record before the analysis
  bool force = false;           // -f: perf's "don't complain": perfscope reads any it can open
  bool show_state = false;      // timehist --state
  std::string sort = "avg, max, switch, runtime";  // latency -s
  bool per_thread = false;                         // latency -p
  bool count_waking = false;                       // latency --waking
  // sched record
  bool all_cpus = false;
  std::string output = "perf.data";
  std::size_t mmap_pages = 1024;
  bool frame_pointer_graph = false;
};

class SchedCommand {
 public:
  explicit SchedCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  // `command`: the words after the "--" that ends sched record's options.
  int run(std::vector<std::string> command);

 private:
  int record_sched(std::vector<std::string> command);
  int run_timehist();
  int run_latency();
  int run_states();

  CLI::App* app_;
  CLI::App* record_ = nullptr;
  CLI::App* timehist_ = nullptr;
  CLI::App* latency_ = nullptr;
  CLI::App* states_ = nullptr;
  SchedCommandOptions options_;
};

}  // namespace perfscope::cli
