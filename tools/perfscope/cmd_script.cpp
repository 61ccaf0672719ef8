// perfscope script: the records of a perf.data file, one line per sample in perf script's format
// (ip, symbol+offset and file of the sample and of each call-chain entry; DWARF stacks unwound),
// or every decoded field as JSON lines (samples with their symbol and file).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <variant>

#include "commands.hpp"
#include "partial_data.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/analysis_threads.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/sample_selection.hpp"
#include "perfscope/analysis/profile/stack_resolver.hpp"
#include "perfscope/analysis/recording/off_cpu_state.hpp"
#include "perfscope/core/event_attr.hpp"
#include "perfscope/core/safe_text.hpp"
#include "raw_trace_dump.hpp"
#include "report_perf_options.hpp"
#include "script_dlfilter.hpp"
#include "script_fields.hpp"
#include "script_json.hpp"
#include "script_output.hpp"
#include "script_text_printer.hpp"
#include "script_tracepoints.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

namespace {

namespace sf = abi::sample_format;

using script_text::add_recorded_build_ids;
using script_text::resolver_options;

}  // namespace

bool script_words_ask_for_scripting(const std::vector<std::string>& words) {
  // The options of perf script that take a value: their values are no script's name.
  static constexpr std::array<std::string_view, 20> with_value{
      "-i",      "--input",   "-F",      "--fields",  "-C",         "--cpu",      "--pid",
      "--tid",   "-c",        "--comms", "--time",    "-S",         "--symbols",  "--dsos",
      "--symfs", "--threads", "-k",      "--vmlinux", "--kallsyms", "--max-stack"};
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string_view word = words[i];
    if (word == "-s" || word == "--script" || word.starts_with("--script=") || word == "-g" ||
        word == "--gen-script" || word.starts_with("--gen-script=") || word == "-l" ||
        word == "--list" || (word.starts_with("-s") && word.size() > 2 && word[2] != '-')) {
      return true;
    }
    if (word == "--") return i + 1 < words.size();
    if (word.starts_with("-")) {
      if (std::find(with_value.begin(), with_value.end(), word) != with_value.end()) ++i;
      continue;
    }
    // The first word that is no option's value: perf's `script record|report NAME`, a script
    // file, or a shipped script's name; anything else is left to the option parser.
    if (word.size() > 2 && (std::string_view("record").starts_with(word) ||
                            std::string_view("report").starts_with(word))) {
      return true;
    }
    if (word.ends_with(".py") || word.ends_with(".pl")) return true;
    const char* exec_path = std::getenv("PERF_EXEC_PATH");
    for (const std::string& root :
         {std::string(exec_path != nullptr ? exec_path : ""), std::string("/usr/lib/perf-core")}) {
      if (root.empty()) continue;
      for (const char* language : {"python", "perl"}) {
        if (::access(fmt::format("{}/scripts/{}/bin/{}-report", root, language, word).c_str(),
                     R_OK) == 0) {
          return true;
        }
      }
    }
    return false;
  }
  return false;
}

void run_scripting_helper(const std::vector<std::string>& words) {
  std::string helper =
      find_helper("perfscope-script-python",
                  "perf's Python scripting, built with perfscope from libpython3-dev",
                  "perfscope_script_python");
  std::vector<std::string> argv_words{"perfscope-script-python"};
  argv_words.insert(argv_words.end(), words.begin(), words.end());
  std::vector<char*> argv;
  for (std::string& word : argv_words) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execv(helper.c_str(), argv.data());
  throw std::runtime_error(fmt::format("cannot run {}: {}", helper, std::strerror(errno)));
}

ScriptCommand::ScriptCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "script");
  app_->add_option("-i,--input", input_, "Input file (default perf.data; - reads stdin)");
  app_->add_option("-F,--fields", fields_,
                   "Sample fields: comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso,trace,"
                   "addr,srcline,brstack (sym alone names the function, symoff adds +0xOFFSET); "
                   "+field/-field change the defaults, as in perf script");
  app_->add_flag("--full-names", full_names_,
                 "C++ names with parameter lists and return types (perf shows them with -v)");
  app_->add_flag("--json", json_, "Every record with every decoded field, one JSON object a line");
  app_->add_flag("!--no-sort", ordered_, "Print records in file order, not time order");
  app_->add_flag("--raw-names", raw_names_,
                 "Print comms, files and symbols as recorded, control bytes and all (by default "
                 "they are escaped: \\x1b, \\xff)");
  app_->add_flag("--show-task-events", side_band_.task,
                 "Also print the task records (COMM, FORK, EXIT), as perf script does");
  app_->add_flag("--show-mmap-events", side_band_.mmap,
                 "Also print the mapping records (MMAP, MMAP2)");
  app_->add_flag("--show-switch-events", side_band_.switches,
                 "Also print the context-switch records (record --switch-events, --off-cpu)");
  app_->add_flag("--show-lost-events", side_band_.lost,
                 "Also print the LOST records (what the kernel could not write)");
  app_->add_flag("--show-namespace-events", side_band_.namespaces,
                 "Also print the NAMESPACES records (record --namespaces)");
  app_->add_flag("--show-cgroup-events", side_band_.cgroup,
                 "Also print the CGROUP records (record --all-cgroups)");
  app_->add_flag("--show-bpf-events", side_band_.bpf,
                 "Also print the KSYMBOL and BPF_EVENT records (BPF programs loaded)");
  app_->add_flag("--show-text-poke-events", side_band_.text_poke,
                 "Also print the TEXT_POKE records (kernel text changed) and KSYMBOL");
  app_->add_flag("--show-round-events", side_band_.rounds,
                 "Also print the FINISHED_ROUND records; every record then comes in file order, "
                 "as perf script prints them then");
  app_->add_option("-c,--comms", comms_, "Only samples of these commands (comma-separated)");
  app_->add_option("--pid", pids_, "Only samples of these processes (comma-separated)");
  app_->add_option("--tid", tids_, "Only samples of these threads (comma-separated)");
  app_->add_option("-C,--cpu", cpus_, "Only samples taken on these CPUs (0-3,8)");
  app_->add_option("--time", time_,
                   "Only samples in these times: START,STOP in seconds (either open; several "
                   "separated by blanks), A%/N (the N-th slice of A %), A%-B%");
  app_->add_option("-S,--symbols", symbols_,
                   "Only samples whose ip is in these functions (comma-separated)");
  app_->add_option("--dsos", dsos_,
                   "Only samples whose ip is in these files (path or file name, comma-separated)");
  app_->add_flag("-G,--hide-call-graph", hide_call_graph_,
                 "Print the sampled ip alone, on the sample's line, not its call chain");
  app_->add_option("--max-stack", max_stack_,
                   "Print at most this many call-chain entries of each sample (default: all)");
  app_->add_flag("--ns", nanoseconds_, "Times with nine decimals");
  app_->add_flag("--full-source-path", full_source_path_,
                 "srcline names the source file by its whole path, as perf's");
  app_->add_flag("--header", header_, "The file's header (host, events, features) first");
  app_->add_flag("--header-only", header_only_, "Only the file's header");
  app_->add_flag("-D,--dump-raw-trace", dump_raw_trace_,
                 "perf's raw dump of every record (hex and decoded, in perf's order) before the "
                 "script's output");
  app_->add_flag("--dump-unsorted-raw-trace", dump_unsorted_raw_trace_,
                 "The raw dump in file order (and the script's output in file order)");
  app_->add_flag("--reltime", relative_time_, "Times since the first record printed");
  app_->add_flag("--deltatime", delta_time_, "Times since the previous record printed");
  app_->add_option("--dlfilter", dlfilter_,
                   "A filter shared object built against perf's perf_dlfilter.h: it picks the "
                   "samples printed (perf script --dlfilter)");
  app_->add_option("--dlarg", dlargs_, "An argument for the dlfilter (repeatable)");
  app_->add_flag("--list-dlfilters", list_dlfilters_, "List perf's installed dlfilters");
  add_inline_option(*app_, inline_frames_);
  add_threads_option(*app_, threads_);
  add_symbol_source_options(*app_, symbol_sources_);
  add_event_switch_options(*app_, switches_);
  app_->footer(
      "Examples:\n"
      "  perfscope script -F comm,tid,time,sym -i perf.data\n"
      "  perfscope script --comms sqlite3 --time 10%/2   (the second tenth of the recording)\n"
      "  perfscope script --json | head -5");
}

script_text::ScriptSelection ScriptCommand::script_selection(const PerfDataReader& reader) const {
  script_text::ScriptSelection selection;
  selection.times = TimeRanges::parse(time_, reader.features().sample_time);
  selection.switches =
      EventSwitchWindows::compute(reader, switches_.on, switches_.off, switches_.show);
  if (!cpus_.empty()) selection.cpus = cpu_selection(cpus_, reader);
  selection.pids = parse_task_id_list("--pid", pids_);
  selection.tids = parse_task_id_list("--tid", tids_);
  selection.comms = split_comma_list(comms_);
  selection.symbols = split_comma_list(symbols_);
  selection.dsos = split_comma_list(dsos_);
  return selection;
}

int ScriptCommand::run() {
  if (list_dlfilters_) {
    std::string list = list_dlfilters();
    std::fwrite(list.data(), 1, list.size(), stdout);
    return 0;
  }
  if (!dlargs_.empty() && dlfilter_.empty()) {
    throw std::invalid_argument("--dlarg passes arguments to a --dlfilter: give the filter too");
  }
  if (!dlfilter_.empty() && json_) {
    throw std::invalid_argument(
        "--dlfilter picks the samples of the text output: leave out --json");
  }
  PerfDataReader reader = PerfDataReader::open(input_);
  for (const auto& note : reader.notes()) fmt::print(stderr, "perfscope: {}: {}\n", input_, note);
  if (header_ || header_only_) {
    std::string header = render_file_header(reader, input_);
    std::fwrite(header.data(), 1, header.size(), stdout);
    if (header_only_) return 0;
  }
  if (dump_raw_trace_ || dump_unsorted_raw_trace_) {
    if (dump_unsorted_raw_trace_) ordered_ = false;
    auto dumped = print_raw_trace(reader, {PerfDumpTool::script, ordered_, input_}, stdout).error;
    std::fflush(stdout);
    if (dumped) print_partial_data_warning(reader, *dumped);
  }
  std::optional<PerfDataError> error;
  std::size_t undecodable = 0, undecodable_side_band = 0;
  SymbolizerOptions symbols;
  symbols.parameter_lists = full_names_;
  symbols.inline_frames = inline_frames_wanted(inline_frames_, reader);
  SymbolSources sources(symbol_sources_);  // archives stay unpacked until the script is done
  sources.apply(symbols);
  ScriptFieldSpec spec(fields_);  // checked before the walk: a typo is an option error
  // A dlfilter may ask any sample's source line (perf's srcline callback).
  symbols.source_lines = spec.wants_srcline() || !dlfilter_.empty();
  ScriptTextOptions text_options;
  text_options.raw_names = raw_names_;
  text_options.side_band = side_band_;
  // perf script reads in file order when it shows the rounds that order its reading.
  if (side_band_.rounds) ordered_ = false;
  text_options.selection = script_selection(reader);
  text_options.hide_call_graph = hide_call_graph_;
  text_options.max_stack = max_stack_;
  text_options.nanoseconds = nanoseconds_;
  text_options.full_source_path = full_source_path_;
  text_options.relative_time = relative_time_;
  text_options.delta_time = delta_time_;
  std::unique_ptr<DlFilter> dlfilter;
  if (!dlfilter_.empty()) {
    dlfilter = std::make_unique<DlFilter>(dlfilter_, dlargs_);
    text_options.filter = dlfilter.get();
  }
  if (relative_time_ && delta_time_) {
    throw std::invalid_argument("--reltime and --deltatime exclude each other: give one");
  }
  ScriptTracepoints tracepoints(reader);
  for (const auto& note : tracepoints.notes()) fmt::print(stderr, "perfscope: note: {}\n", note);
  if (json_) {
    std::vector<std::string> names;
    for (const auto& event : reader.events()) names.push_back(event_name(event));
    Output output;
    StackResolver resolver(resolver_options(symbols));
    add_recorded_build_ids(resolver, reader);
    auto visit = [&](const PerfDataRecord& record) {
      nlohmann::json json = record_json(record, reader, names);
      if (record.view.type() != static_cast<std::uint32_t>(abi::RecordType::sample)) {
        if (record.view.type() < 64)
          resolver.observe(record.view, reader.events()[record.event].config);
      } else if (json.contains("ip") && json.contains("pid")) {
        auto cpumode =
            static_cast<std::uint16_t>(record.view.header.misc & abi::record_misc::cpumode_mask);
        const ResolvedAddress& where = resolver.resolve(
            json["pid"].get<std::uint32_t>(), {json["ip"].get<std::uint64_t>(), cpumode, false});
        if (!where.symbol.symbol.empty()) {
          json["sym"] = std::string(where.symbol.symbol);
          json["symoff"] = where.function_offset();
        }
        json["dso"] = where.dso.empty() ? std::string("[unknown]") : std::string(where.dso);
      }
      // A tracepoint's payload by field name, as its format names them.
      if (record.view.type() == static_cast<std::uint32_t>(abi::RecordType::sample) &&
          tracepoints.decodes(record.event)) {
        SampleRecord sample;
        DecodeError decode_error;
        if (decode_sample(record.view, reader.events()[record.event].config, sample,
                          decode_error) &&
            sample.has(sf::raw)) {
          json["trace"] = tracepoints.fields(record.event, sample.raw);
        }
      }
      // Names are bytes the recorded processes chose: invalid UTF-8 becomes U+FFFD, as in every
      // JSON perfscope writes.
      std::string text = json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      text.push_back('\n');
      output.append(text);
    };
    error = ordered_ ? reader.for_each_record_ordered(visit) : reader.for_each_record(visit);
    output.flush();
  } else {
    // --reltime and --deltatime count from records other workers print: one printer then.
    // A dlfilter sees the samples one at a time, in order, as perf gives them.
    bool sequential_times = relative_time_ || delta_time_ || dlfilter != nullptr;
    std::size_t workers = ordered_ && !sequential_times ? analysis_threads(threads_, reader) : 1;
    if (workers > 1) {
      std::vector<std::unique_ptr<TextPrinter>> printers;
      symbols.shared_kernel = make_shared_kernel_symbols();
      for (std::size_t i = 0; i < workers; ++i) {
        printers.push_back(
            std::make_unique<TextPrinter>(reader, spec, symbols, tracepoints, text_options));
        printers.back()->collect_output();
      }
      ChunkWriter writer;
      error = reader.for_each_record_ordered_fanned_out(
          workers,
          [&](std::size_t worker, std::uint64_t, bool owned, const PerfDataRecord& record) {
            bool sample =
                record.view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample);
            if (owned || !sample) printers[worker]->print(record, owned);
          },
          {},
          [&](std::size_t worker, std::uint64_t chunk) {
            writer.write(chunk, printers[worker]->take_output());
          });
      for (const auto& printer : printers) {
        undecodable += printer->undecodable();
        undecodable_side_band += printer->undecodable_side_band();
      }
    } else {
      TextPrinter printer(reader, spec, symbols, tracepoints, text_options);
      auto visit = [&](const PerfDataRecord& record) { printer.print(record); };
      error = ordered_ ? reader.for_each_record_ordered(visit) : reader.for_each_record(visit);
      printer.finish();
      undecodable = printer.undecodable();
      undecodable_side_band = printer.undecodable_side_band();
    }
  }
  std::fflush(stdout);
  if (dlfilter) {
    std::string failure;
    if (!dlfilter->finish(failure)) throw std::runtime_error(failure);
  }
  if (undecodable != 0) {
    fmt::print(stderr, "perfscope: {} samples could not be decoded and were left out\n",
               undecodable);
  }
  if (undecodable_side_band != 0) {
    fmt::print(stderr,
               "perfscope: {} side-band records could not be decoded and were not printed\n",
               undecodable_side_band);
  }
  if (error) print_partial_data_warning(reader, *error);
  return 0;
}

}  // namespace perfscope::cli
