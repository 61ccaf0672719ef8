// perfscope diff BASE NEW: for two perf.data recordings, perf diff's table (shares, deltas in
// points, ratios; by any report sort key, with report's filters) or a differential export; for
// two `perfscope stat -r N --json` files, the change of each count with its confidence interval
// and a verdict, with thresholds for CI.
#include "cmd_diff.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "command_line.hpp"
#include "partial_data.hpp"
#include "perfscope/analysis/diff/diff_exports.hpp"
#include "perfscope/analysis/diff/perf_diff_table.hpp"
#include "perfscope/analysis/diff/profile_diff.hpp"
#include "perfscope/analysis/diff/stat_diff.hpp"
#include "perfscope/analysis/diff/stat_file.hpp"
#include "perfscope/analysis/exporters/profile_exporters.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/sample_selection.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "raw_trace_dump.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

namespace {

constexpr int threshold_crossed_status = 3;

constexpr std::string_view matching_rule =
    "Recordings compare by share: each row's % of its own file's event count (profiles of "
    "different lengths, sampling rates or periods compare). Rows match by the text of their sort "
    "keys: DSOs by file name, then symbols by name, never by address or build id, so a rebuilt "
    "binary's functions meet their old selves (unresolved addresses match only at the same "
    "offset; pid/tid keys differ between runs).\n"
    "Counts (stat --json files) compare the means of the repeats: change in % with a 95 % "
    "confidence interval from Welch's t-test; --fail-if 'task-clock>+3%' exits 3 when a count "
    "changed significantly by more than the threshold.";

// The file to write to, or stdout; created 0600 (recordings name commands and functions).
class OutputFile {
 public:
  explicit OutputFile(const std::string& path) : path_(path) {
    if (path.empty()) return;
    int created = sys::create_private_file(path);
    if (created == 0) file_.open(path, std::ios::binary | std::ios::trunc);
    if (created != 0 || !file_) {
      throw std::runtime_error(fmt::format("-o {}: cannot open it for writing: {}", path,
                                           std::strerror(created != 0 ? -created : errno)));
    }
  }
  std::ostream& stream() { return path_.empty() ? std::cout : file_; }
  void finish() {
    stream().flush();
    if (!stream()) {
      throw std::runtime_error(
          fmt::format("writing {} failed", path_.empty() ? std::string("stdout") : path_));
    }
  }

 private:
  std::string path_;
  std::ofstream file_;
};

std::uint32_t event_index(const Profile& profile, const std::string& name) {
  for (std::uint32_t e = 0; e < profile.events.size(); ++e) {
    if (profile.events[e].name == name) return e;
  }
  return no_index;
}

}  // namespace

DiffCommand::DiffCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "diff");
  // perf diff's defaults: no file compares perf.data.old (record's previous recording) with
  // perf.data; one file is the new one, compared with perf.data.old.
  app_->add_option("BASE", options_.base,
                   "The baseline: a perf.data file or a stat --json file (default "
                   "perf.data.old; with one file given, that file is NEW)");
  app_->add_option("NEW", options_.current,
                   "The file to compare with it, of the same kind (default perf.data)");
  app_->add_option("-s,--sort", options_.sort,
                   "Recordings: sort keys comm,pid,tid,dso,sym,cpu,srcline (default dso,sym)");
  app_->add_flag("--children", options_.children,
                 "Recordings: inclusive shares (a function with its callees) and their deltas");
  app_->add_option("--percent-limit", options_.percent_limit,
                   "Recordings: hide rows below this share in both")
      ->check(CLI::Range(0.0, 100.0));
  add_sample_filter_options(*app_, {&options_.comm_list, &options_.pids, &options_.tids,
                                    &options_.dso_list, &options_.symbol_list, "-C", "-d", "-S"});
  app_->add_option("--event", options_.event,
                   "Recordings: compare this event only (exports need one)");
  app_->add_option("--cpu", options_.cpu_list,
                   "Recordings: only the samples taken on these CPUs (0-3,8), in each");
  app_->add_option("--time", options_.time,
                   "Recordings: only the samples in these times, in each (report's forms: "
                   "START,STOP in seconds, A%/N, A%-B%: percentages of each recording)");
  app_->add_flag("-q,--quiet", options_.quiet,
                 "No warnings on stderr: the comparison alone (perf's table: its rows alone)");
  // perf's own table and its options: any of them prints it instead of perfscope's.
  app_->add_option("-c,--compute", options_.compute,
                   "perf's table, its computed column: delta-abs (perf's default), delta, ratio "
                   "or wdiff:W1,W2");
  app_->add_flag("-p,--period", options_.show_period,
                 "perf's table with each side's period (Base period, Period)");
  app_->add_flag("-F,--formula", options_.show_formula,
                 "perf's table with the formula of each computed value");
  app_->add_flag("-b,--baseline-only", options_.baseline_only,
                 "perf's table of the rows both recordings have (Baseline: shares of those)");
  app_->add_option("-o,--order", options_.order,
                   "perf's table ordered by file 0 (BASE's shares) or 1 (the computed column, "
                   "the default)");
  app_->add_option("--percentage", options_.percentage,
                   "perf's table: shares 'absolute' (of the whole recording, the default) or "
                   "'relative' (of what the filters kept)");
  app_->add_option("-t,--field-separator", options_.field_separator,
                   "perf's table with this separator between columns and no padding line (its "
                   "character inside a name becomes '.')");
  app_->add_flag("-D,--dump-raw-trace", options_.dump_raw_trace,
                 "perf's raw dump of each recording (every record in hex and decoded) before "
                 "the comparison");
  app_->add_flag("--full-names", options_.full_names,
                 "C++ names with parameter lists and return types");
  app_->add_flag("--raw-names", options_.raw_names,
                 "Print comms, files and symbols as recorded, control bytes and all (by default "
                 "the text table escapes them: \\x1b, \\xff)");
  add_threads_option(*app_, options_.threads);
  add_symbol_source_options(*app_, options_.symbol_sources);
  app_->add_option("--debug-root", options_.debug_root,
                   "Where separate debug files are (default /usr/lib/debug)");
  app_->add_option("--format", options_.format,
                   "text (default) or json; recordings also folded (two-column, FlameGraph's "
                   "difffolded), svg (differential flame graph), pprof (a pair for go tool "
                   "pprof -diff_base)");
  app_->add_option("--output", options_.output,
                   "Write to this file (pprof: PREFIX for PREFIX.base.pb.gz and PREFIX.new.pb.gz)");
  // One value per --fail-if (repeat the option for more): the files after it are BASE and NEW.
  app_->add_option("--fail-if", options_.fail_if,
                   "Counts: 'EVENT>+P%' or 'EVENT<-P%': exit 3 on a significant change beyond "
                   "it (repeatable)")
      ->allow_extra_args(false);
  app_->add_option("--resolve", options_.resolve_percent,
                   "Counts: the change in % the 'repeats' column is computed for (default 1)")
      ->check(CLI::Range(0.001, 1000.0));
  app_->footer(std::string(matching_rule) +
               "\n\nExamples:\n"
               "  perfscope diff --children base.data new.data\n"
               "  perfscope diff --fail-if 'task-clock>+3%' base.json new.json   (from stat -r 10 "
               "--json -o FILE)");
}

int DiffCommand::run() {
  if (options_.current.empty()) {
    options_.current = options_.base.empty() ? std::string("perf.data") : options_.base;
    options_.base = "perf.data.old";
  }
  DiffInputKind base = diff_input_kind(options_.base);
  DiffInputKind current = diff_input_kind(options_.current);
  for (auto [path, kind] :
       {std::pair{&options_.base, base}, std::pair{&options_.current, current}}) {
    if (kind != DiffInputKind::perf_data && kind != DiffInputKind::stat_json) {
      throw std::invalid_argument(fmt::format(
          "'{}' is {}: diff compares two perf.data recordings or two `perfscope stat --json` "
          "files",
          *path, diff_input_kind_name(kind)));
    }
  }
  if (base != current) {
    throw std::invalid_argument(fmt::format(
        "BASE '{}' is {} but NEW '{}' is {}: diff compares two of a kind (two perf.data "
        "recordings, or two `perfscope stat -r N --json -o FILE` files)",
        options_.base, diff_input_kind_name(base), options_.current,
        diff_input_kind_name(current)));
  }
  return base == DiffInputKind::perf_data ? run_profiles() : run_counts();
}

// perf's table when any of its options is given: -c, -p, -F, -b, -o, -t, --percentage.
std::optional<PerfDiffLayout> DiffCommand::perf_table_layout(const std::string& format) const {
  const DiffCommandOptions& o = options_;
  if (o.compute.empty() && !o.show_period && !o.show_formula && !o.baseline_only &&
      o.order.empty() && o.percentage.empty() && o.field_separator.empty()) {
    return std::nullopt;
  }
  if (format != "text") {
    throw std::invalid_argument(fmt::format(
        "--format {}: -c, -p, -F, -b, -o, -t and --percentage choose perf's text table; leave "
        "them out for --format {}",
        format, format));
  }
  if (o.children) {
    throw std::invalid_argument(
        "perf's diff table (-c, -p, -F, -b, -o, -t, --percentage) compares self shares: leave "
        "out --children, or those options for perfscope's table with inclusive shares");
  }
  PerfDiffLayout layout;
  if (!o.compute.empty()) parse_perf_diff_compute(o.compute, layout);
  layout.show_period = o.show_period;
  layout.show_formula = o.show_formula;
  layout.baseline_only = o.baseline_only;
  layout.quiet = o.quiet;
  layout.field_separator = o.field_separator;
  if (!o.order.empty() && o.order != "0" && o.order != "1") {
    bool number = o.order.find_first_not_of("0123456789") == std::string::npos;
    throw std::invalid_argument(
        number ? fmt::format("-o {}: perf's --order names the file whose column orders the rows: "
                             "0 (BASE's shares) or 1 (the computed column); diff compares two "
                             "files",
                             o.order)
               : fmt::format("-o '{}': -o is perf's --order (0 or 1); write to a file with "
                             "--output FILE",
                             o.order));
  }
  layout.sort_by_baseline = o.order == "0";
  if (!o.percentage.empty() && o.percentage != "relative" && o.percentage != "absolute") {
    throw std::invalid_argument(
        fmt::format("--percentage '{}': 'absolute' (shares of the whole recording, the default) or "
                    "'relative' (of what -C, -d, -S, --pid, --tid kept)",
                    o.percentage));
  }
  layout.relative_percentages = o.percentage == "relative";
  return layout;
}

int DiffCommand::run_counts() {
  const DiffCommandOptions& o = options_;
  if (!o.format.empty() && o.format != "text" && o.format != "json") {
    throw std::invalid_argument(fmt::format(
        "--format '{}': counts diff as text or json (folded, svg and pprof are for recordings)",
        o.format));
  }
  StatDiffOptions options;
  options.resolve_percent = o.resolve_percent;
  for (const auto& text : o.fail_if) options.thresholds.push_back(parse_stat_threshold(text));
  StatDiff diff = diff_stat_files(read_stat_file(o.base), read_stat_file(o.current), options);
  OutputFile output(o.output);
  std::string text =
      o.format == "json" ? stat_diff_json(diff) : render_stat_diff(diff, o.raw_names);
  output.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
  output.finish();
  return diff.regression() ? threshold_crossed_status : 0;
}

int DiffCommand::run_profiles() {
  const DiffCommandOptions& o = options_;
  if (!o.fail_if.empty()) {
    throw std::invalid_argument(
        "--fail-if compares repeated counts: give two `perfscope stat -r N --json` files");
  }
  std::string format = o.format.empty() ? "text" : o.format;
  if (format != "text" && format != "json" && format != "folded" && format != "svg" &&
      format != "pprof") {
    throw std::invalid_argument(
        fmt::format("--format '{}': the formats are text, json, folded, svg and pprof", o.format));
  }
  if (format == "pprof" && o.output.empty()) {
    throw std::invalid_argument(
        "--format pprof writes two files: name them with --output PREFIX (PREFIX.base.pb.gz and "
        "PREFIX.new.pb.gz)");
  }
  ProfileDiffOptions diff_options;
  if (!o.sort.empty()) diff_options.sort = parse_report_sort_keys(o.sort);
  if (std::find(diff_options.sort.begin(), diff_options.sort.end(), ReportSortKey::time) !=
      diff_options.sort.end()) {
    throw std::invalid_argument(
        "--sort time pairs no rows of two recordings (their sample times differ): compare them "
        "by comm, pid, dso, sym or srcline, and see each one's times with report --sort time");
  }
  diff_options.children = o.children;
  diff_options.percent_limit = o.percent_limit;
  std::optional<PerfDiffLayout> perf_table = perf_table_layout(format);
  if (perf_table) {
    // perf leaves out the column of a filter that keeps one value (as report does).
    auto elide = [&](ReportSortKey key, const std::string& list) {
      auto at = std::find(diff_options.sort.begin(), diff_options.sort.end(), key);
      if (split_comma_list(list).size() != 1 || at == diff_options.sort.end() ||
          diff_options.sort.size() == 1) {
        return;
      }
      diff_options.sort.erase(at);
    };
    elide(ReportSortKey::comm, o.comm_list);
    elide(ReportSortKey::dso, o.dso_list);
    elide(ReportSortKey::sym, o.symbol_list);
  }

  ProfileOptions options;
  options.symbols.parameter_lists = o.full_names;
  for (ReportSortKey key : diff_options.sort) {
    if (key == ReportSortKey::srcline) options.symbols.source_lines = true;
  }
  if (!o.debug_root.empty()) options.symbols.debug_root = o.debug_root;
  // Both recordings are named from the same sources (archives stay unpacked until the end).
  SymbolSources sources(o.symbol_sources);
  sources.apply(options.symbols);
  options.filter.comms = split_comma_list(o.comm_list);
  options.filter.pids = o.pids;
  options.filter.tids = o.tids;
  options.filter.dsos = split_comma_list(o.dso_list);
  options.filter.symbols = split_comma_list(o.symbol_list);
  // Every output here takes folded samples: memory bounded by the distinct stacks.
  options.keep_samples = false;
  options.threads = options_.threads;
  std::vector<std::string> partial_data;  // said after the output
  auto warn_of_partial_data = [&] {
    if (o.quiet) return;
    for (const std::string& warning : partial_data) print_partial_data_warning(warning);
  };
  auto load = [&](const std::string& path) {
    PerfDataReader reader = PerfDataReader::open(path);
    // -D: perf diff's dump of each recording as it reads it, before the comparison.
    if (o.dump_raw_trace) {
      auto error = print_raw_trace(reader, {PerfDumpTool::diff, true, path}, stdout).error;
      std::fflush(stdout);
      if (error) print_partial_data_warning(reader, *error);
    }
    // --cpu and --time are each recording's: its CPUs, its own first and last sample.
    ProfileOptions file_options = options;
    file_options.filter.times = TimeRanges::parse(o.time, reader.features().sample_time);
    if (!o.cpu_list.empty()) file_options.filter.cpus = cpu_selection(o.cpu_list, reader);
    Profile profile = build_profile(reader, file_options);
    partial_data.push_back(profile.summary.partial_data);
    if (profile.summary.samples == 0) {
      throw std::runtime_error(
          profile.summary.samples_read == 0
              ? fmt::format("'{}': the recording has no samples", path)
              : fmt::format("'{}': none of its {} samples passed the filters (--comms, --pid, "
                            "--tid, --dsos, --symbols, --cpu, --time)",
                            path, profile.summary.samples_read));
    }
    return profile;
  };
  Profile base = load(o.base);
  Profile current = load(o.current);
  if (!o.event.empty()) {
    std::uint32_t b = event_index(base, o.event), c = event_index(current, o.event);
    if (b == no_index || c == no_index) {
      throw std::invalid_argument(fmt::format("--event '{}': not recorded in {}", o.event,
                                              b == no_index ? o.base : o.current));
    }
    base = profile_of_event(std::move(base), b);
    current = profile_of_event(std::move(current), c);
  }
  ProfileDiff diff = diff_profiles(base, current, diff_options);

  OutputFile output(format == "pprof" ? std::string() : o.output);
  if (perf_table) {
    std::string text = render_perf_diff(diff, *perf_table, o.raw_names);
    output.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
    output.finish();
    warn_of_partial_data();
    return 0;
  }
  if (format == "text" || format == "json") {
    std::string text = format == "json" ? profile_diff_json(diff, o.base, o.current)
                                        : render_profile_diff(diff, o.base, o.current, o.raw_names);
    output.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
    output.finish();
    warn_of_partial_data();
    return 0;
  }
  // The exports hold one event's samples: counts of different events do not compare.
  if (diff.events.size() > 1) {
    std::string names;
    for (const auto& event : diff.events) names += (names.empty() ? "" : ", ") + event.name;
    throw std::invalid_argument(fmt::format(
        "--format {}: the recordings share several events ({}): choose one with --event", format,
        names));
  }
  const std::string& event = diff.events.front().name;
  // The indexes first: an argument moved from may be read after the move (clang evaluates
  // arguments left to right).
  std::uint32_t base_event = event_index(base, event), current_event = event_index(current, event);
  base = profile_of_event(std::move(base), base_event);
  current = profile_of_event(std::move(current), current_event);
  if (format == "folded") {
    write_diff_folded(base, current, output.stream());
  } else if (format == "svg") {
    write_diff_flame_graph_svg(base, current, output.stream(), o.base, o.current);
  } else {
    std::string prefix = o.output;
    if (prefix.ends_with(".pb.gz")) prefix.resize(prefix.size() - 6);
    std::string base_path = prefix + ".base.pb.gz", current_path = prefix + ".new.pb.gz";
    for (auto [path, profile] :
         {std::pair{&base_path, &base}, std::pair{&current_path, &current}}) {
      OutputFile file(*path);
      write_pprof(*profile, file.stream());
      file.finish();
    }
    fmt::print(stderr,
               "perfscope: wrote {} and {}: go tool pprof -diff_base {} {} (add -normalize when "
               "the recordings differ in length or rate)\n",
               base_path, current_path, base_path, current_path);
    warn_of_partial_data();
    return 0;
  }
  output.finish();
  warn_of_partial_data();
  return 0;
}

}  // namespace perfscope::cli
