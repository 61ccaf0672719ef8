#include "record_perf_options.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <ctime>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "command_line.hpp"
#include "commands.hpp"
#include "control_channel.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/abi/user_registers.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope::cli {

std::uint64_t parse_frequency(const std::string& text, const char* option) {
  if (text == "max") {
    auto rate = sys::read_sysctl("perf_event_max_sample_rate");
    if (!rate || *rate <= 0) {
      throw CLI::ValidationError(fmt::format("{} max", option),
                                 "cannot read kernel.perf_event_max_sample_rate");
    }
    return static_cast<std::uint64_t>(*rate);
  }
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value == 0) {
    throw CLI::ValidationError(option, fmt::format("'{}' is not a rate: give samples per second "
                                                   "(a positive integer) or max",
                                                   text));
  }
  return value;
}

std::pair<std::size_t, std::size_t> parse_mmap_pages(const std::string& text,
                                                     std::string& rounded) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto pages = [&](std::string_view part) -> std::size_t {
    if (part.empty()) return 0;
    std::size_t value = 0;
    auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    std::string_view unit(end, static_cast<std::size_t>(part.data() + part.size() - end));
    std::size_t scale = 0;  // bytes per unit; 0: a page count
    if (unit == "B" || unit == "b") scale = 1;
    if (unit == "K" || unit == "k") scale = std::size_t{1} << 10;
    if (unit == "M" || unit == "m") scale = std::size_t{1} << 20;
    if (unit == "G" || unit == "g") scale = std::size_t{1} << 30;
    if (error != std::errc() || end == part.data() || (!unit.empty() && scale == 0) ||
        value > (std::size_t{1} << 40) / std::max<std::size_t>(scale, 1)) {
      throw CLI::ValidationError(
          "-m", fmt::format("'{}' is not a number of pages or a size; give DATA or DATA,AUX "
                            "(e.g. -m 128, -m 16M or -m 128,1024)",
                            part));
    }
    std::size_t count = scale == 0 ? value : (value * scale + page - 1) / page;
    if (value != 0 && count == 0) count = 1;
    if (count != 0 && !std::has_single_bit(count)) {
      std::size_t up = std::bit_ceil(count);
      rounded += fmt::format("{}-m {}: rounded up to {} pages ({} KiB), as perf does",
                             rounded.empty() ? "" : "; ", part, up, up * page / 1024);
      count = up;
    }
    return count;
  };
  std::string_view whole = text;
  std::size_t comma = whole.find(',');
  if (comma == std::string_view::npos) return {pages(whole), 0};
  return {pages(whole.substr(0, comma)), pages(whole.substr(comma + 1))};
}

int parse_clockid(const std::string& text) {
  int number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error == std::errc{} && end == text.data() + text.size() && number >= 0) return number;
  std::string name = text;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.starts_with("clock_")) name.erase(0, 6);
  static const std::pair<std::string_view, int> names[] = {{"monotonic", CLOCK_MONOTONIC},
                                                           {"monotonic_raw", CLOCK_MONOTONIC_RAW},
                                                           {"realtime", CLOCK_REALTIME},
                                                           {"boottime", CLOCK_BOOTTIME},
                                                           {"tai", CLOCK_TAI},
                                                           {"mono", CLOCK_MONOTONIC},
                                                           {"raw", CLOCK_MONOTONIC_RAW},
                                                           {"real", CLOCK_REALTIME},
                                                           {"boot", CLOCK_BOOTTIME}};
  for (const auto& [known, id] : names) {
    if (name == known) return id;
  }
  throw CLI::ValidationError(
      "-k", fmt::format("unknown clockid '{}': give monotonic (mono), monotonic_raw (raw), "
                        "realtime (real), boottime (boot), tai, or a clockid number",
                        text));
}

RecordOptions::Synthesis parse_synthesis(const std::string& text) {
  RecordOptions::Synthesis chosen{false, false, false};
  for (std::string_view word : split_comma_list(text)) {
    std::string name(word);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // perf's order: "no" or "all" anywhere decides alone.
    if (name == "no" || name == "none") return {false, false, false};
    if (name == "all") return {};
    if (name == "task") {
      chosen.tasks = true;
    } else if (name == "mmap") {
      chosen.tasks = chosen.mmaps = true;
    } else if (name == "cgroup") {
      chosen.cgroups = true;
    } else {
      throw CLI::ValidationError(
          "--synth", fmt::format("unknown kind '{}': give no, all, or task, mmap and cgroup "
                                 "(comma-separated), as perf record --synth",
                                 word));
    }
  }
  return chosen;
}

std::uint64_t parse_size(const std::string& text, const char* option) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  std::uint64_t scale = unit.empty() || unit == "B" || unit == "b" ? 1
                        : unit == "K" || unit == "k"               ? std::uint64_t{1} << 10
                        : unit == "M" || unit == "m"               ? std::uint64_t{1} << 20
                        : unit == "G" || unit == "g"               ? std::uint64_t{1} << 30
                                                                   : 0;
  if (error != std::errc{} || end == text.data() || scale == 0 ||
      value > std::numeric_limits<std::uint64_t>::max() / scale) {
    throw CLI::ValidationError(
        option, fmt::format("'{}' is not a size: give bytes, or a number with B, K, M or G "
                            "(e.g. 200M)",
                            text));
  }
  return value * scale;
}

std::vector<RecordOptions::EventFilter> event_filters_in_order(
    const CLI::App& app, const std::function<std::size_t(const std::string&)>& count_events) {
  const CLI::Option* event = app.get_option("-e");
  const CLI::Option* filter = app.get_option("--filter");
  const CLI::Option* exclude_perf = app.get_option_no_throw("--exclude-perf");
  const std::vector<std::string> lists = event->as<std::vector<std::string>>();
  const std::vector<std::string> texts =
      filter->count() ? filter->as<std::vector<std::string>>() : std::vector<std::string>{};
  std::vector<RecordOptions::EventFilter> filters;
  std::size_t events_seen = 0, lists_seen = 0, filters_seen = 0;
  std::optional<RecordOptions::EventFilter> last_list;
  for (const CLI::Option* option : app.parse_order()) {
    if (option == event && lists_seen < lists.size()) {
      const std::string& list = lists[lists_seen++];
      last_list = RecordOptions::EventFilter{events_seen, count_events(list), {}, list};
      events_seen += last_list->events;
    } else if (option == filter && filters_seen < texts.size()) {
      const std::string& text = texts[filters_seen++];
      if (!last_list) {
        throw std::invalid_argument(fmt::format(
            "--filter '{}' has no event: it filters the tracepoints of the -e before it "
            "(perfscope record -e raw_syscalls:sys_enter --filter 'id == 39')",
            text));
      }
      last_list->text = text;
      filters.push_back(*last_list);
    } else if (option == exclude_perf && exclude_perf != nullptr) {
      // perf's --exclude-perf: the tracepoints of the -e before it skip the recorder's own hits.
      if (!last_list) {
        throw std::invalid_argument(
            "--exclude-perf has no event: it applies to the tracepoints of the -e before it "
            "(perfscope record -a -e raw_syscalls:sys_enter --exclude-perf)");
      }
      last_list->text = fmt::format("common_pid != {}", ::getpid());
      filters.push_back(*last_list);
    }
  }
  return filters;
}

std::uint64_t parse_register_list(const std::string& text, const char* option) {
#if defined(__aarch64__)
  constexpr bool arm64 = true;
#else
  constexpr bool arm64 = false;
#endif
  const std::uint64_t available = abi::dwarf_unwind_register_mask();
  if (available == 0) {
    throw CLI::ValidationError(option,
                               "perfscope knows no registers of this machine's architecture to "
                               "sample (x86-64 and arm64 it does)");
  }
  if (text.empty()) return available;  // perf: every general register
  std::string names;
  for (std::uint64_t mask = available; mask != 0; mask &= mask - 1) {
    names += fmt::format("{} ",
                         abi::register_name(static_cast<unsigned>(std::countr_zero(mask)), arm64));
  }
  if (text == "?") throw CLI::ValidationError(option, "available registers: " + names);
  std::uint64_t chosen = 0;
  for (std::string_view word : split_comma_list(text)) {
    bool found = false;
    for (std::uint64_t mask = available; mask != 0 && !found; mask &= mask - 1) {
      auto reg = static_cast<unsigned>(std::countr_zero(mask));
      std::string_view name = abi::register_name(reg, arm64);
      found = name.size() == word.size() &&
              std::equal(name.begin(), name.end(), word.begin(), [](char a, char b) {
                return std::tolower(static_cast<unsigned char>(a)) ==
                       std::tolower(static_cast<unsigned char>(b));
              });
      if (found) chosen |= std::uint64_t{1} << reg;
    }
    if (!found) {
      throw CLI::ValidationError(
          option, fmt::format("unknown register \"{}\": the registers are {}", word, names));
    }
  }
  return chosen;
}

std::uint64_t parse_branch_filter(const std::string& text) {
  namespace bs = abi::branch_sample;
  static const std::pair<std::string_view, std::uint64_t> modes[] = {{"u", bs::user},
                                                                     {"k", bs::kernel},
                                                                     {"hv", bs::hv},
                                                                     {"any", bs::any},
                                                                     {"any_call", bs::any_call},
                                                                     {"any_ret", bs::any_return},
                                                                     {"ind_call", bs::ind_call},
                                                                     {"abort_tx", bs::abort_tx},
                                                                     {"in_tx", bs::in_tx},
                                                                     {"no_tx", bs::no_tx},
                                                                     {"cond", bs::cond},
                                                                     {"ind_jmp", bs::ind_jump},
                                                                     {"call", bs::call},
                                                                     {"save_type", bs::type_save},
                                                                     {"stack", bs::call_stack},
                                                                     {"hw_index", bs::hw_index},
                                                                     {"priv", bs::priv_save},
                                                                     {"counter", bs::counters}};
  std::uint64_t bits = 0;
  for (std::string_view word : split_comma_list(text)) {
    auto found = std::find_if(std::begin(modes), std::end(modes),
                              [&](const auto& mode) { return mode.first == word; });
    if (found == std::end(modes)) {
      std::string known;
      for (const auto& mode : modes)
        known += fmt::format("{}{}", known.empty() ? "" : ",", mode.first);
      throw CLI::ValidationError(
          "-j", fmt::format("unknown branch filter '{}': the filters are {}", word, known));
    }
    bits |= found->second;
  }
  // Only privilege levels: every taken branch at those levels, as perf.
  if ((bits & ~bs::plm_all) == 0) bits |= bs::any;
  return bits;
}

// --filter: each on the events of the -e it follows; perf's refusal for any that is not a
// tracepoint.
void apply_event_filters(std::vector<EventGroupSpec>& groups,
                         const std::vector<RecordOptions::EventFilter>& filters) {
  std::vector<EventSpec*> flat;
  for (auto& group : groups) {
    for (auto& spec : group.events) flat.push_back(&spec);
  }
  for (const auto& filter : filters) {
    for (std::size_t i = filter.first_event;
         i < filter.first_event + filter.events && i < flat.size(); ++i) {
      EventSpec& spec = *flat[i];
      if (spec.attr.type() != static_cast<std::uint32_t>(abi::EventType::tracepoint)) {
        throw std::invalid_argument(fmt::format(
            "--filter '{}' follows -e {}, whose event {} is not a tracepoint: a filter is for "
            "tracepoints (perf: --filter option should follow a -e tracepoint or HW tracer "
            "option); put it after the tracepoint's -e",
            filter.text, filter.event_list, spec.name));
      }
      // A second filter on the same event (--exclude-perf after --filter) narrows it, as perf
      // appends them.
      spec.filter =
          spec.filter.empty() ? filter.text : fmt::format("({}) && ({})", spec.filter, filter.text);
    }
  }
}

void add_perf_record_options(CLI::App& app, RecordOptions& options) {
  app.add_flag("-T,--timestamp", options.timestamps,
               "Sample timestamps (perf's -T; perfscope records them always)");
  app.add_flag("-d,--data", options.sample_addr,
               "Record the data address of each sample (PERF_SAMPLE_ADDR: memory events, page "
               "faults); script's addr field prints it");
  app.add_flag("-n,--no-samples", options.no_samples,
               "Do not sample: the events count, and the file holds the processes' side-band "
               "records alone (COMM, MMAP, EXIT, switches with --switch-events), as perf's -n");
  app.add_flag("-q,--quiet", options.quiet,
               "No summary and no notes on stderr (errors and warnings of lost data still)");
  app.add_flag("-N,--no-buildid-cache", options.no_buildid_cache,
               "Do not copy the kernel's symbols into the build-id cache (~/.debug)");
  app.add_flag("-B,--no-buildid", options.no_buildid,
               "Do not record the build ids of the files samples hit (reports then cannot tell "
               "a rebuilt file from the recorded one)");
  app.add_flag("--switch-events", options.switch_events,
               "Record context-switch records (PERF_RECORD_SWITCH/SWITCH_CPU_WIDE): script shows "
               "them");
  app.add_flag("-P,--period", options.sample_period,
               "Record the sample period (PERF_SAMPLE_PERIOD; perfscope records it always)");
  app.add_flag("--timestamp-boundary", options.timestamp_boundary,
               "Write the times of the first and last samples in the header (SAMPLE_TIME; "
               "perfscope writes them always, -B too)");
  app.add_option_function<std::string>(
         "-k,--clockid",
         [&options](const std::string& text) { options.clockid = parse_clockid(text); },
         "The clock of sample times: monotonic (the default), monotonic_raw, realtime, "
         "boottime, tai (or mono, raw, real, boot), or a clockid number")
      ->type_name("CLOCK");
  app.add_flag("--all-user", options.all_user, "Every event counts in user space only (as :u)");
  app.add_flag("--all-kernel", options.all_kernel, "Every event counts in the kernel only (as :k)");
  app.add_flag("--user-callchains", options.user_callchains,
               "Call chains without their kernel part (exclude_callchain_kernel)");
  app.add_flag("--kernel-callchains", options.kernel_callchains,
               "Call chains without their user part (exclude_callchain_user)");
  app.add_flag("-R,--raw-samples", options.raw_samples,
               "Raw sample data (PERF_SAMPLE_RAW) from every event, with time and CPU, as perf "
               "-R");
  app.add_flag("--sample-identifier", options.sample_identifier,
               "Each sample starts with its event's id (PERF_SAMPLE_IDENTIFIER)");
  app.add_flag("--namespaces", options.namespaces,
               "Record the namespaces of each task (NAMESPACES records at every fork, and of "
               "the tasks that exist): script --show-namespace-events prints them");
  app.add_flag("--no-buffering", options.no_buffering,
               "Wake the recorder for every sample (wakeup_events 1) instead of a quarter buffer");
  app.add_flag("--dry-run", options.dry_run,
               "Check the options and the event list, then exit without opening events, "
               "recording or writing a file");
  app.add_flag("--timestamp-filename", options.timestamp_filename,
               "Name the finished file OUTPUT.YYYYmmddHHMMSScc (the time it was finished)");
  app.add_option_function<std::string>(
         "--max-size",
         [&options](const std::string& text) { options.max_size = parse_size(text, "--max-size"); },
         "Stop recording (and the command, as a stop signal does) once the file holds this "
         "much: bytes, or with B, K, M or G")
      ->type_name("SIZE");
  app.add_option("-D,--delay", options.delay_ms,
                 "Start sampling this many ms after the command starts (-1: never, the events "
                 "stay disabled), as perf record -D: the start-up phase left out")
      ->check(CLI::Range(-1, 24 * 3600 * 1000))
      ->type_name("MS");
  app.add_option("--control", options.control,
                 "Commands from a FIFO or descriptor while recording: enable, disable, ping, stop "
                 "(fifo:CTL[,ACK] or fd:CTL[,ACK]; each answered ack on ACK), as perf; with -D -1 "
                 "the events wait for 'enable'")
      ->type_name("fifo:CTL[,ACK]")
      ->check(control_spec_error, "");
  app.add_option_function<std::string>(
         "--synth",
         [&options](const std::string& text) { options.synthesis = parse_synthesis(text); },
         "Which records of what exists at the start to write: no, all (the default), or task "
         "(COMM and FORK), mmap (task and their code maps), cgroup, comma-separated, as perf")
      ->type_name("KINDS");
  app.add_option("--filter",
                 "A tracepoint filter for the events of the -e before it (ftrace's "
                 "syntax: 'id == 39', 'common_pid != 1'); read in order with -e")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("FILTER");
  add_refused_option(
      app, "-z,--compression-level",
      "perf's zstd-compressed records: not written by perfscope (see the error for why)", false,
      "perfscope writes its records uncompressed (it reads perf's compressed files): leave "
      "out -z, and compress the finished file for storage (zstd perf.data; unpack it before "
      "reading)");
  add_refused_option(
      app, "-s,--stat", "perf's per-thread read counts: use 'perfscope stat --per-thread'", false,
      "per-thread counts in the recording (PERF_SAMPLE_READ with inherit_stat) are not "
      "written by perfscope record: count per thread with 'perfscope stat --per-thread -- "
      "COMMAND'");
  app.add_option_function<std::string>(
         "-I,--intr-regs",
         [&options](const std::string& text) {
           options.intr_regs = parse_register_list(text, "--intr-regs");
         },
         "Sample these registers at the interrupt (PERF_SAMPLE_REGS_INTR; all general ones "
         "without a list; -I? names them): script -F iregs prints them")
      ->expected(0, 1)
      ->type_name("REGS");
  app.add_option_function<std::string>(
         "--user-regs",
         [&options](const std::string& text) {
           options.user_regs = parse_register_list(text, "--user-regs");
         },
         "Sample these user-space registers (PERF_SAMPLE_REGS_USER; all general ones without a "
         "list): script -F uregs prints them")
      ->expected(0, 1)
      ->type_name("REGS");
  app.add_flag("--phys-data", options.phys_data,
               "Record the physical address of each sample's data address (PERF_SAMPLE_PHYS_ADDR; "
               "with -d): script -F phys_addr");
  app.add_flag("--data-page-size", options.data_page_size,
               "Record the page size of each sample's data address (PERF_SAMPLE_DATA_PAGE_SIZE; "
               "with -d): script -F data_page_size");
  app.add_flag("--code-page-size", options.code_page_size,
               "Record the page size of each sample's code address (PERF_SAMPLE_CODE_PAGE_SIZE): "
               "script -F code_page_size");
  app.add_flag("-W,--weight", options.weight,
               "Record each sample's weight (PERF_SAMPLE_WEIGHT: the latency memory events "
               "measure; 0 for other events)");
  app.add_flag("--transaction", options.transaction,
               "Record each sample's transaction flags (PERF_SAMPLE_TRANSACTION: TSX aborts; 0 "
               "elsewhere)");
  app.add_flag("--all-cgroups", options.all_cgroups,
               "Record each sample's cgroup (PERF_SAMPLE_CGROUP) and the cgroups' paths (CGROUP "
               "records): report --sort cgroup names them");
  app.add_flag("--buildid-all", options.buildid_all,
               "The build ids of every file a mapping named, not only of those samples hit");
  app.add_flag("--buildid-mmap", options.buildid_mmap,
               "The kernel writes each mapped file's build id into its MMAP2 record (kernel "
               "5.12+): no build-id section is gathered at the end");
  app.add_flag_callback(
      "-b,--branch-any", [&options] { options.branch_filter |= abi::branch_sample::any; },
      "Sample the taken branches (branch stacks: PERF_SAMPLE_BRANCH_STACK, needs a PMU that "
      "records them, such as Intel LBR or Arm BRBE)");
  app.add_option_function<std::string>(
         "-j,--branch-filter",
         [&options](const std::string& text) {
           options.branch_filter |= parse_branch_filter(text);
         },
         "Sample these taken branches: any, any_call, any_ret, ind_call, ind_jmp, call, cond, "
         "abort_tx, in_tx, no_tx, save_type, stack, hw_index, priv, counter, with u, k, hv")
      ->type_name("FILTERS");
  app.add_flag("--group", options.group,
               "Every event in one group (counted together), as perf's --group");
  app.add_flag("--exclude-perf", options.exclude_perf,
               "The tracepoints of the -e before it skip perfscope's own hits (a common_pid "
               "filter)");
  app.add_option("-r,--realtime", options.realtime_priority,
                 "Run the recorder under SCHED_FIFO at this priority (root or CAP_SYS_NICE), so "
                 "that a busy machine does not keep it from draining")
      ->check(CLI::Range(1, 99))
      ->type_name("PRIORITY");
  app.add_flag("--no-bpf-event", options.no_bpf_event,
               "perf's switch for BPF program records: perfscope records none (-v says so)");
  add_refused_option(
      app, "--clang-path", "perf's compiler for BPF scriptlets: perfscope runs no BPF programs",
      true,
      "perf compiles BPF scriptlets (-e prog.c) with clang; perfscope loads no BPF programs: "
      "use tracepoints, kprobes or uprobes (perfscope probe) as events instead");
  add_refused_option(
      app, "--clang-opt",
      "perf's compiler options for BPF scriptlets: perfscope runs no BPF programs", true,
      "perf compiles BPF scriptlets (-e prog.c) with clang; perfscope loads no BPF programs: "
      "use tracepoints, kprobes or uprobes (perfscope probe) as events instead");
}

}  // namespace perfscope::cli
