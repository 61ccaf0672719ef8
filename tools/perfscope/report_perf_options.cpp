#include "report_perf_options.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <charconv>
#include <ctime>
#include <limits>
#include <stdexcept>
#include <string_view>

#include "command_line.hpp"
#include "commands.hpp"

namespace perfscope::cli {

namespace {

std::vector<std::string_view> comma_words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    words.push_back(text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return words;
}

bool is_number(std::string_view word, double& value) {
  auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  return error == std::errc() && end == word.data() + word.size();
}

}  // namespace

void add_report_perf_options(CLI::App& app, ReportCommandOptions& options) {
  app.add_flag("--hide-unresolved", options.hide_unresolved,
               "Only the samples whose function has a symbol: the others are left out, from the "
               "totals too, as perf leaves them out");
  app.add_flag("--show-total-period", options.show_total_period,
               "The Period column: each row's own period sum (the event's count it stands for)");
  app.add_flag("-n,--show-nr-samples", options.show_nr_samples,
               "The Samples column (perfscope shows it always)");
  app.add_flag("-q,--quiet", options.quiet,
               "Only the rows: no \"#\" header lines and no notes or warnings on stderr");
  app.add_flag("-G,--inverted", options.inverted,
               "Caller-based call graph, as perf -G (-g caller)");
  app.add_flag("--stats", options.record_statistics,
               "Only each record type's count in the file and each event's samples, as perf");
  app.add_flag("--skip-empty,!--no-skip-empty", options.skip_empty,
               "--stats leaves out the record types and events with no record (the default)");
  app.add_flag("--tasks", options.tasks,
               "Only the recording's tasks (pid, tid, parent, comm), children under parents");
  app.add_flag("--mmaps", options.mmaps,
               "As --tasks, with each task's mappings under it (start-end, protection, file "
               "offset, inode, file), as perf");
  app.add_flag("--full-source-path", options.full_source_path,
               "srcline and srcfile name source files by their whole path, as perf's");
  app.add_flag("--ns", options.nanoseconds,
               "The time key (--sort time) to the nanosecond, as perf's --ns");
  app.add_option_function<std::string>(
         "--time-quantum",
         [&options](const std::string& text) {
           options.time_quantum_ns = parse_time_quantum(text);
         },
         "The step of the time key (--sort time): nanoseconds, or with s, ms, us or ns; "
         "100ms by default, as perf")
      ->type_name("TIME");
  app.add_flag("-D,--dump-raw-trace", options.dump_raw_trace,
               "perf's raw dump instead of the profile: every record in hex and decoded, in "
               "perf's order and layout, then each record type's count");
  app.add_option("-t,--field-separator", options.field_separator,
                 "Columns separated by this text, for scripts, as perf's -t: the columns perf "
                 "shows (Samples with -n), values containing it with '.' for it")
      ->check([](const std::string& text) {
        return text.empty() ? std::string("give the separator (-t ,)") : std::string();
      });
  app.add_option("--symbol-filter", options.symbol_filter,
                 "Only the samples in functions whose name contains this text (shares stay of the "
                 "whole event, as perf's)")
      ->type_name("TEXT");
  app.add_flag("--header", options.header, "The file's header (host, events, features) first");
  app.add_flag("--header-only", options.header_only, "Only the file's header");
  app.add_option("--max-stack", options.max_stack,
                 "At most N entries of each call chain (the sample's ip and N-1 callers)")
      ->type_name("N");
  app.add_option("-F,--fields", options.output_fields,
                 "perf's output fields: overhead,overhead_children,sample and sort keys (e.g. "
                 "overhead,sample,comm,sym)")
      ->type_name("FIELDS");
  add_refused_option(
      app, "-T", "perf's per-thread counts: use 'perfscope stat --per-thread'", false,
      "perf report -T (--threads, which is perfscope's number of analysis threads) prints the "
      "per-thread counts of a 'perf record -s' recording, which "
      "perfscope does not record; count per thread with 'perfscope stat --per-thread -- "
      "COMMAND', or see each thread's samples with --sort pid,tid");
  add_refused_option(
      app, "--hierarchy", "perf's hierarchical view: not printed by perfscope", false,
      "the hierarchical view is not printed by perfscope: --sort comm,dso,sym gives one row "
      "per key combination, and -g caller their call trees");
}

void apply_call_graph_option(const std::string& text, ReportOptions& report, bool& source_lines) {
  if (text.empty()) {  // -g alone: perf's graph,0.5,caller (callee without --children)
    report.call_graph.reset();
    return;
  }
  for (std::string_view word : comma_words(text)) {
    double threshold = 0;
    if (word.empty() || word == "graph" || word == "function" || word == "percent") continue;
    if (word == "none") {
      report.call_graph = ReportCallGraph::none;
    } else if (word == "caller") {
      report.call_graph = ReportCallGraph::caller;
    } else if (word == "callee") {
      report.call_graph = ReportCallGraph::callee;
    } else if (word == "address") {
      source_lines = true;
    } else if (is_number(word, threshold) && threshold >= 0 && threshold <= 100) {
      report.call_graph_limit = threshold;
    } else if (word == "flat" || word == "fractal" || word == "folded" || word == "period" ||
               word == "count" || word == "branch") {
      throw std::invalid_argument(fmt::format(
          "-g {}: '{}' is not printed by perfscope report: its call graphs are perf's graph "
          "(percentages of the whole event){}",
          text, word,
          word == "folded" ? "; --format folded writes every stack as folded lines" : ""));
    } else {
      throw std::invalid_argument(
          fmt::format("-g {}: '{}' is none of perf's call-graph words (graph, caller, callee, "
                      "none, a threshold such as 0.5, address)",
                      text, word));
    }
  }
}

void apply_output_fields(const std::string& text, ReportOptions& report) {
  std::string keys;
  bool samples = false;
  for (std::string_view word : comma_words(text)) {
    if (word == "overhead") continue;
    if (word == "overhead_children") {
      report.children = true;
    } else if (word == "sample") {
      samples = true;
    } else if (word == "period") {
      report.show_period = true;
    } else {
      keys += (keys.empty() ? "" : ",") + std::string(word);
    }
  }
  report.show_samples = samples;
  if (!keys.empty()) report.sort = parse_report_sort_keys(keys);
}

std::uint64_t parse_time_quantum(const std::string& text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  std::uint64_t scale = unit.empty() || unit == "ns" ? 1
                        : unit == "us"               ? 1'000
                        : unit == "ms"               ? 1'000'000
                        : unit == "s"                ? 1'000'000'000
                                                     : 0;
  if (error != std::errc{} || end == text.data() || scale == 0 ||
      value > std::numeric_limits<std::uint64_t>::max() / scale) {
    throw CLI::ValidationError("--time-quantum",
                               fmt::format("cannot read '{}': give nanoseconds, or a number with "
                                           "s, ms, us or ns (e.g. 10ms)",
                                           text));
  }
  if (value == 0) throw CLI::ValidationError("--time-quantum", "the time quantum cannot be 0");
  return value * scale;
}

std::string render_file_header(const PerfDataReader& reader, const std::string& path) {
  std::string out = "# ========\n";
  auto add = [&](std::string_view label, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "# {} : {}\n", label, value);
  };
  struct stat info {};
  if (path != "-" && ::stat(path.c_str(), &info) == 0) {
    char when[64];
    std::tm local{};
    ::localtime_r(&info.st_mtime, &local);
    std::strftime(when, sizeof when, "%a %b %e %H:%M:%S %Y", &local);
    fmt::format_to(std::back_inserter(out), "# captured on    : {}\n", when);
  }
  if (!reader.pipe_mode()) {
    fmt::format_to(std::back_inserter(out),
                   "# header version : 1\n# data offset    : {}\n# data size      : {}\n",
                   reader.data_offset(), reader.data_end() - reader.data_offset());
  }
  const PerfDataFeatures& f = reader.features();
  if (f.hostname) add("hostname", *f.hostname);
  if (f.osrelease) add("os release", *f.osrelease);
  if (f.version) add("perf version", *f.version);
  if (f.arch) add("arch", *f.arch);
  if (f.nr_cpus_online) add("nrcpus online", std::to_string(*f.nr_cpus_online));
  if (f.nr_cpus_available) add("nrcpus avail", std::to_string(*f.nr_cpus_available));
  if (f.cpudesc) add("cpudesc", *f.cpudesc);
  if (f.cpuid) add("cpuid", *f.cpuid);
  if (f.total_mem_kb) add("total memory", fmt::format("{} kB", *f.total_mem_kb));
  if (f.cmdline) {
    std::string line;
    for (const auto& word : *f.cmdline) line += (line.empty() ? "" : " ") + word;
    add("cmdline", line);
  }
  for (const auto& event : reader.events()) {
    const auto& attr = event.attr;
    fmt::format_to(std::back_inserter(out),
                   "# event : name = {}, type = {}, size = {}, config = {:#x}, {} = {}, "
                   "sample_type = {:#x}, read_format = {:#x}, ids = {}\n",
                   event.name, attr.type, event.file_attr_size, attr.config,
                   (attr.flags & abi::attr_flag::freq) != 0 ? "sample_freq" : "sample_period",
                   attr.sample_period_or_freq, attr.sample_type, attr.read_format,
                   event.ids.size());
  }
  if (f.sample_time) {
    fmt::format_to(std::back_inserter(out), "# sample duration : {:10.3f} ms\n",
                   static_cast<double>(f.sample_time->second - f.sample_time->first) / 1e6);
  }
  fmt::format_to(std::back_inserter(out), "# build ids : {} files\n", f.build_ids.size());
  out += "# ========\n#\n";
  return out;
}

std::string without_comment_lines(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::size_t start = 0;
  bool leading = true;  // blank lines before the first row go with the header
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size() - 1;
    std::string_view line(text.data() + start, end - start);
    if (!line.starts_with('#') && !(leading && line.empty())) {
      out.append(text, start, end - start + 1);
      leading = false;
    }
    start = end + 1;
  }
  return out;
}

}  // namespace perfscope::cli
