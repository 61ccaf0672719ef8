// The subcommands of the perfscope tool.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cmd_push.hpp"
#include "command_line.hpp"
#include "perfscope/analysis/annotate/annotation_output.hpp"
#include "script_side_band.hpp"

namespace perfscope {
class PerfDataReader;
}

namespace perfscope::cli {

struct StatOptions {
  std::string events;
  int delay_ms = 0;     // -D: counting starts this long after the command; -1: never (disabled)
  std::string control;  // --control fifo:CTL[,ACK] or fd:CTL[,ACK]: enable, disable, ping, stop
  // stat record's perf.data (-o after `stat record`), stat report's (-i after `stat report`).
  std::string record_to, report_from;
  int pid = -1;
  int tid = -1;
  bool all_cpus = false;
  std::string cpu_list;
  std::string cgroup;
  int interval_ms = 0;
  int repeat = 1;
  bool json = false;
  bool perf_json = false;  // -j/--json-output: perf's JSON lines
  bool null_run = false;   // -n/--null: time the command, count nothing
  bool group = false;      // -g/--group: the events in one group
  bool csv = false;
  std::string field_separator;  // -x SEP: CSV with this separator
  std::string output;
  bool no_inherit = false;
  // Aggregation (perf stat -A/--no-aggr, --per-core, --per-socket, --per-die, --per-node,
  // --per-thread) and -d/-dd/-ddd detailed event sets.
  bool no_aggr = false;
  bool per_core = false;
  bool per_socket = false;
  bool per_die = false;
  bool per_node = false;
  bool per_thread = false;
  int detailed = 0;
  // perf stat's run control: --interval-count, --timeout, --all-user/--all-kernel, -q, --append,
  // --log-fd, --pre/--post, --sync.
  int interval_count = 0;
  int timeout_ms = 0;
  bool all_user = false, all_kernel = false;
  bool quiet = false;
  bool summary = false;         // --summary: -I's totals in CSV too, as perf's
  bool no_csv_summary = false;  // --no-csv-summary: without perf's "summary" field
  bool append = false;
  int log_fd = -1;
  std::string pre, post;
  bool sync = false;
  bool run_table = false;       // --table: each -r run's elapsed time, as perf's table
  bool interval_clear = false;  // --interval-clear: a clear screen before each -I interval
  bool scale = true;            // -c/--scale; --no-scale: multiplexed counts as measured
  std::vector<std::string> command;
};

class StatCommand {
 public:
  explicit StatCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  // `command`: the words after "--", if the user wrote one.
  int run(bool verbose, std::vector<std::string> command);

 private:
  CLI::App* app_;
  StatOptions options_;
};

class DoctorCommand {
 public:
  explicit DoctorCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  std::string binary_;
  bool json_ = false;
};

class ListCommand {
 public:
  explicit ListCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  std::string pattern_;
  bool json_ = false;
  bool probe_all_ = false;
  bool no_probe_ = false;
  bool descriptions_ = true;  // -d/--desc, --no-desc
};

// perf's inspection commands: evlist (a recording's events), buildid-list (its files' build
// ids), kallsyms (where kernel symbols are).
class EvlistCommand {
 public:
  explicit EvlistCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  std::string input_ = "perf.data";
  bool frequency_ = false, attributes_ = false, groups_ = false, trace_fields_ = false;
  bool force_ = false;
};

class BuildidListCommand {
 public:
  explicit BuildidListCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  std::string input_ = "perf.data";
  bool with_hits_ = false, kernel_ = false, force_ = false;
};

class KallsymsCommand {
 public:
  explicit KallsymsCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  std::vector<std::string> names_;
};

// perf data convert --to-json: a recording's samples as perf's JSON (--to-ctf refused: no
// babeltrace).
class DataCommand {
 public:
  explicit DataCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  CLI::App* convert_;
  std::string input_ = "perf.data";
  std::string to_json_, to_ctf_, time_;
  bool force_ = false, all_ = false, time_of_day_ = false;
};

// perf buildid-cache: perf's ~/.debug build-id cache, in perf's layout.
class BuildidCacheCommand {
 public:
  explicit BuildidCacheCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run(bool verbose);

 private:
  CLI::App* app_;
  std::string add_, remove_, purge_, missing_, update_, kcore_, debuginfod_;
  bool purge_all_ = false, list_ = false, force_ = false;
};

// perf probe: uprobes and kprobes through tracefs.
class ProbeCommand {
 public:
  explicit ProbeCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  std::string binary_, list_, funcs_, line_, vars_;
  bool externs_ = false;
  std::vector<std::string> add_, positional_, delete_, definitions_;
  bool force_ = false, dry_run_ = false, quiet_ = false;
};

// perf config: list, show and set perf's settings in ~/.perfconfig and /etc/perfconfig.
class ConfigCommand {
 public:
  explicit ConfigCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  bool list_ = false, user_ = false, system_ = false;
  std::vector<std::string> settings_;
};

// perf's build report: `version --build-options` and `check feature NAME[,NAME]`.
class VersionCommand {
 public:
  explicit VersionCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  bool build_options_ = false;
};

class CheckCommand {
 public:
  explicit CheckCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  CLI::App* feature_;
  std::vector<std::string> feature_lists_;
  bool quiet_ = false;
};

struct RecordOptions {
  std::string events;
  std::uint64_t frequency = 0;
  std::uint64_t period = 0;
  bool frame_pointer_graph = false;
  std::string call_graph;
  bool keep_stacks = false;  // --keep-stacks: dwarf stack copies written, not unwound
  int pid = -1;
  int tid = -1;
  bool all_cpus = false;
  std::string cpu_list;
  std::string cgroup;
  std::string output = "perf.data";
  std::size_t mmap_pages = 0;
  std::size_t aux_pages = 0;  // -m DATA,AUX: the AUX area of an AUX-tracing event
  bool sample_cpu = false;
  bool strict_frequency = false;  // --strict-freq: refuse -F above the kernel's maximum
  // --per-thread / --no-inherit: one event and ring buffer per thread that exists at the start,
  // none for threads created later (perf record's --per-thread; per-CPU buffers otherwise).
  bool per_thread = false;
  // Off-CPU profiling: --off-cpu, --wall (on-CPU cpu-clock + off-CPU), the minimum blocked time
  // in ns (--off-cpu-thresh) and every Nth switch-out (--off-cpu-every).
  bool off_cpu = false;
  bool wall = false;
  std::uint64_t off_cpu_thresh_ns = 0;
  std::uint64_t off_cpu_every = 1;
  // --jit: the launched command's runtime told to describe its JIT code (jit_runtimes.hpp).
  bool jit = false;
  // perf record's everyday options (record_perf_options.hpp).
  bool timestamps = false;          // -T: recorded always; taken as perf takes it
  bool sample_addr = false;         // -d: PERF_SAMPLE_ADDR
  bool no_samples = false;          // -n: the events never sample (side-band records only)
  bool quiet = false;               // -q: no summary and notes
  bool no_buildid_cache = false;    // -N: no copy of kallsyms in ~/.debug
  bool no_buildid = false;          // -B: no HEADER_BUILD_ID
  bool switch_events = false;       // --switch-events: SWITCH records in the file
  bool sample_period = false;       // -P: recorded always; taken as perf takes it
  bool timestamp_boundary = false;  // --timestamp-boundary: SAMPLE_TIME written always
  int clockid = -1;                 // -k: the events' clock; -1: CLOCK_MONOTONIC
  bool all_user = false;            // --all-user: every event counts user space only
  bool all_kernel = false;          // --all-kernel: every event counts the kernel only
  bool user_callchains = false;     // --user-callchains: no kernel part in call chains
  bool kernel_callchains = false;   // --kernel-callchains: no user part in call chains
  bool raw_samples = false;         // -R: PERF_SAMPLE_RAW (and TIME, CPU) on every event
  bool sample_identifier = false;   // --sample-identifier: PERF_SAMPLE_IDENTIFIER
  bool namespaces = false;          // --namespaces: NAMESPACES records
  bool no_buffering = false;        // --no-buffering: a wakeup for every sample
  bool dry_run = false;             // --dry-run: check the options and events, record nothing
  bool timestamp_filename = false;  // --timestamp-filename: OUTPUT.YYYYmmddHHMMSScc at the end
  std::uint64_t max_size = 0;       // --max-size: stop once the file has this many bytes; 0: none
  int delay_ms = 0;     // -D: sampling starts this long after the command (-1: never); 0: at once
  std::string control;  // --control fifo:CTL[,ACK] or fd:CTL[,ACK]: enable, disable, ping, stop
  // --synth: the records of what exists at the start written (perf's PERF_SYNTH_* kinds).
  struct Synthesis {
    bool tasks = true;    // COMM and FORK of the existing tasks
    bool mmaps = true;    // their code mappings
    bool cgroups = true;  // the cgroups (with --all-cgroups)
  } synthesis;
  // --filter: a tracepoint filter for the events of one -e (perf's: the -e before it).
  struct EventFilter {
    std::size_t first_event = 0;  // in the order of the events, groups flattened
    std::size_t events = 0;
    std::string text;
    std::string event_list;  // that -e's text, for errors
  };
  std::vector<EventFilter> filters;
  // Sample fields perf's options add to every event.
  bool phys_data = false;       // --phys-data: PERF_SAMPLE_PHYS_ADDR
  bool data_page_size = false;  // --data-page-size: PERF_SAMPLE_DATA_PAGE_SIZE
  bool code_page_size = false;  // --code-page-size: PERF_SAMPLE_CODE_PAGE_SIZE
  bool weight = false;          // -W/--weight: PERF_SAMPLE_WEIGHT(_STRUCT)
  bool transaction = false;     // --transaction: PERF_SAMPLE_TRANSACTION
  std::uint64_t intr_regs = 0;  // -I/--intr-regs: PERF_SAMPLE_REGS_INTR of these registers
  std::uint64_t user_regs = 0;  // --user-regs: PERF_SAMPLE_REGS_USER of these registers
  bool all_cgroups = false;     // --all-cgroups: PERF_SAMPLE_CGROUP and CGROUP records
  bool buildid_mmap = false;    // --buildid-mmap: build ids in the MMAP2 records
  bool buildid_all = false;     // --buildid-all: build ids of every mapped file, hit or not
  // -b/-j: branch stacks (PERF_SAMPLE_BRANCH_STACK) with these PERF_SAMPLE_BRANCH_* bits.
  std::uint64_t branch_filter = 0;
  bool group = false;         // --group: every event in one group
  bool exclude_perf = false;  // --exclude-perf: no tracepoint hits of perfscope itself
  int realtime_priority = 0;  // -r/--realtime: the recorder under SCHED_FIFO at this priority
  bool no_bpf_event = false;  // --no-bpf-event: nothing to leave out (no BPF records here)
  std::string mmap_note;      // what -m rounded, said when recording starts
  std::vector<std::string> command;
  PushOptions push;  // --push URL: profiles to a backend (cmd_push.hpp)
};

// One recording from its options to its file, as `perfscope record` makes it (for commands that
// record with options of their own, such as `sched record`). Returns the exit status.
int run_record(RecordOptions options, bool verbose = false);

class RecordCommand {
 public:
  explicit RecordCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run(bool verbose, std::vector<std::string> command);

 private:
  CLI::App* app_;
  RecordOptions options_;
};

// Whether the words after `script` ask for perf's scripting (-s, -g, -l, record/report NAME, a
// script's name or file), which perfscope-script-python runs; and running it with them.
bool script_words_ask_for_scripting(const std::vector<std::string>& words);
[[noreturn]] void run_scripting_helper(const std::vector<std::string>& words);

namespace script_text {
struct ScriptSelection;
}

class ScriptCommand {
 public:
  explicit ScriptCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  script_text::ScriptSelection script_selection(const PerfDataReader& reader) const;
  CLI::App* app_;
  std::string input_ = "perf.data";
  std::string fields_;
  bool json_ = false;
  bool ordered_ = true;
  bool full_names_ = false;
  bool raw_names_ = false;
  SideBandSelection side_band_;  // --show-*-events
  // perf's sample selection: --comms, --pid, --tid, --cpu, --time, --symbols, --dsos.
  std::string comms_, pids_, tids_, cpus_, time_, symbols_, dsos_;
  bool hide_call_graph_ = false, nanoseconds_ = false, relative_time_ = false, delta_time_ = false;
  bool full_source_path_ = false;              // --full-source-path
  bool header_ = false, header_only_ = false;  // perf's --header, --header-only
  // -D and --dump-unsorted-raw-trace: perf's raw dump of every record before the script's output.
  bool dump_raw_trace_ = false, dump_unsorted_raw_trace_ = false;
  EventSwitchOptions switches_;  // --switch-on, --switch-off, --show-on-off-events
  std::size_t max_stack_ = ~std::size_t{0};
  int inline_frames_ = 0;    // add_inline_option's choice
  std::size_t threads_ = 0;  // add_threads_option's
  SymbolSourceOptions symbol_sources_;
  std::string dlfilter_;  // --dlfilter FILE.so, its --dlarg words
  std::vector<std::string> dlargs_;
  bool list_dlfilters_ = false;
};

struct ReportCommandOptions {
  std::string input = "perf.data";
  std::string sort;
  int children = 0;  // > 0: --children, < 0: --no-children, 0: perf's default
  std::string call_graph;
  double percent_limit = 0;
  std::string comm_list;
  std::vector<std::uint32_t> pids, tids;
  std::string dso_list, symbol_list;
  std::string cpu_list, time;         // perf's --cpu and --time
  std::string percentage;             // perf's --percentage: relative or absolute
  bool nanoseconds = false;           // --ns: the time key to the nanosecond
  bool full_source_path = false;      // --full-source-path: srcline and srcfile by whole path
  std::uint64_t time_quantum_ns = 0;  // --time-quantum: the time key's step; 0: perf's 100 ms
  bool record_statistics = false;     // --stats: each record type's count, no profile
  bool skip_empty = true;             // --no-skip-empty: --stats lists the types with no record
  bool tasks = false;                 // --tasks: the tree of tasks, no profile
  bool stdio = false;
  bool srcline = false;
  int inline_frames = 0;    // > 0: --inline, < 0: --no-inline, 0: with DWARF call chains, as perf
  std::size_t threads = 0;  // add_threads_option's
  bool full_names = false;
  bool group_by_name = false;
  bool raw_names = false;
  std::string debug_root;
  SymbolSourceOptions symbol_sources;
  std::string format;
  std::string output;
  bool wall = false;  // --wall: on-CPU and off-CPU time as one wall-time event
  // perf report's everyday options (report_perf_options.hpp).
  bool show_nr_samples = false;    // -n: the Samples column, shown always
  bool show_total_period = false;  // --show-total-period: the Period column
  bool hide_unresolved = false;    // --hide-unresolved: samples without a symbol left out
  bool quiet = false;              // -q: only the rows
  bool inverted = false;           // -G: -g caller
  bool header = false, header_only = false;
  std::uint32_t max_stack = 0;  // 0: whole chains
  std::string output_fields;    // -F
  bool dump_raw_trace = false;  // -D: perf's raw dump of every record, no profile
  EventSwitchOptions switches;  // --switch-on, --switch-off, --show-on-off-events
  std::string symbol_filter;    // --symbol-filter: rows whose function's name contains it
  std::string field_separator;  // -t: perf's separated columns, for scripts
  bool mmaps = false;           // --mmaps: --tasks with each task's mappings
};

class ReportCommand {
 public:
  explicit ReportCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  ReportCommandOptions options_;
};

}  // namespace perfscope::cli

namespace perfscope::cli {

class AnnotateCommand {
 public:
  explicit AnnotateCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  std::string input_ = "perf.data";
  std::vector<std::string> symbols_;
  bool stdio_ = false, source_ = false, asm_only_ = false, full_names_ = false, raw_names_ = false;
  bool children_ = false;
  bool dump_raw_trace_ = false;  // -D: perf's raw dump of every record, no annotation
  AnnotateTextOptions text_;     // --asm-raw, --full-paths, --show-total-period, --prefix, ...
  std::string percent_type_ = "local-period";
  std::string cpu_list_;
  bool quiet_ = false, show_nr_samples_ = false;
  std::string format_ = "text";
  double percent_limit_ = 5.0;
  std::string comm_list_, dso_list_;
  std::vector<std::uint32_t> pids_, tids_;
  std::string debug_root_, kcore_ = "/proc/kcore";
  std::string disassembler_style_ = "att";
  std::size_t threads_ = 0;  // add_threads_option's
  SymbolSourceOptions symbol_sources_;
};

}  // namespace perfscope::cli
