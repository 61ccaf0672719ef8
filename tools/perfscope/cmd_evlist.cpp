// perfscope evlist: a recording's events as perf evlist prints them — names, -F their rates,
// -v every attr field perf prints, -g the groups, --trace-fields the tracepoints' fields.
#include <fmt/format.h>
#include <sys/mman.h>

#include <array>
#include <cstdio>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "script_tracepoints.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

namespace {

namespace flag = abi::attr_flag;

struct NamedBit {
  std::uint64_t bit;
  std::string_view name;
};

// perf_event_attr__fprintf's bit names, in its order (util/perf_event_attr_fprintf.c); bits it
// has no name for are not shown, as perf shows none.
std::string bit_names(std::uint64_t value, std::span<const NamedBit> names) {
  std::string text;
  for (const NamedBit& named : names) {
    if ((value & named.bit) == 0) continue;
    if (!text.empty()) text += '|';
    text += named.name;
  }
  return text;
}

std::string sample_type_text(std::uint64_t bits) {
  namespace sf = abi::sample_format;
  static constexpr std::array<NamedBit, 24> names{{
      {sf::ip, "IP"},
      {sf::tid, "TID"},
      {sf::time, "TIME"},
      {sf::addr, "ADDR"},
      {sf::read, "READ"},
      {sf::callchain, "CALLCHAIN"},
      {sf::id, "ID"},
      {sf::cpu, "CPU"},
      {sf::period, "PERIOD"},
      {sf::stream_id, "STREAM_ID"},
      {sf::raw, "RAW"},
      {sf::branch_stack, "BRANCH_STACK"},
      {sf::regs_user, "REGS_USER"},
      {sf::stack_user, "STACK_USER"},
      {sf::weight, "WEIGHT"},
      {sf::data_src, "DATA_SRC"},
      {sf::identifier, "IDENTIFIER"},
      {sf::transaction, "TRANSACTION"},
      {sf::regs_intr, "REGS_INTR"},
      {sf::phys_addr, "PHYS_ADDR"},
      {sf::cgroup, "CGROUP"},
      {sf::data_page_size, "DATA_PAGE_SIZE"},
      {sf::code_page_size, "CODE_PAGE_SIZE"},
      {sf::weight_struct, "WEIGHT_STRUCT"},
  }};
  return bit_names(bits, names);
}

std::string read_format_text(std::uint64_t bits) {
  namespace rf = abi::read_format;
  static constexpr std::array<NamedBit, 5> names{{{rf::total_time_enabled, "TOTAL_TIME_ENABLED"},
                                                  {rf::total_time_running, "TOTAL_TIME_RUNNING"},
                                                  {rf::id, "ID"},
                                                  {rf::group, "GROUP"},
                                                  {rf::lost, "LOST"}}};
  return bit_names(bits, names);
}

std::string branch_sample_type_text(std::uint64_t bits) {
  static constexpr std::array<std::string_view, 19> names{
      "USER",     "KERNEL",    "HV",        "ANY",      "ANY_CALL",   "ANY_RETURN", "IND_CALL",
      "ABORT_TX", "IN_TX",     "NO_TX",     "COND",     "CALL_STACK", "IND_JUMP",   "CALL",
      "NO_FLAGS", "NO_CYCLES", "TYPE_SAVE", "HW_INDEX", "PRIV_SAVE"};
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if ((bits & (1ULL << i)) == 0) continue;
    if (!text.empty()) text += '|';
    text += names[i];
  }
  return text;
}

// perf's evsel__fprintf -v: "NAME: type: 1, size: 128, ..." (fields that are not zero).
std::string attr_details(const abi::PerfEventAttr& attr) {
  std::string out;
  auto field = [&](std::string_view name, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "{} {}: {}", out.empty() ? ":" : ",", name, value);
  };
  auto number = [&](std::string_view name, std::uint64_t value) {
    if (value != 0) field(name, fmt::format("{}", value));
  };
  auto hex = [&](std::string_view name, std::uint64_t value) {
    if (value != 0) field(name, fmt::format("{:#x}", value));
  };
  number("type", attr.type);
  number("size", attr.size);
  hex("config", attr.config);
  number("{ sample_period, sample_freq }", attr.sample_period_or_freq);
  if (attr.sample_type != 0) field("sample_type", sample_type_text(attr.sample_type));
  if (attr.read_format != 0) field("read_format", read_format_text(attr.read_format));
  static constexpr std::array<NamedBit, 15> first_flags{{
      {flag::disabled, "disabled"},
      {flag::inherit, "inherit"},
      {flag::pinned, "pinned"},
      {flag::exclusive, "exclusive"},
      {flag::exclude_user, "exclude_user"},
      {flag::exclude_kernel, "exclude_kernel"},
      {flag::exclude_hv, "exclude_hv"},
      {flag::exclude_idle, "exclude_idle"},
      {flag::mmap, "mmap"},
      {flag::comm, "comm"},
      {flag::freq, "freq"},
      {flag::inherit_stat, "inherit_stat"},
      {flag::enable_on_exec, "enable_on_exec"},
      {flag::task, "task"},
      {flag::watermark, "watermark"},
  }};
  for (const NamedBit& named : first_flags) {
    if (attr.flags & named.bit) field(named.name, "1");
  }
  number("precise_ip", (attr.flags & flag::precise_ip_mask) >> flag::precise_ip_shift);
  static constexpr std::array<NamedBit, 21> later_flags{{
      {flag::mmap_data, "mmap_data"},
      {flag::sample_id_all, "sample_id_all"},
      {flag::exclude_host, "exclude_host"},
      {flag::exclude_guest, "exclude_guest"},
      {flag::exclude_callchain_kernel, "exclude_callchain_kernel"},
      {flag::exclude_callchain_user, "exclude_callchain_user"},
      {flag::mmap2, "mmap2"},
      {flag::comm_exec, "comm_exec"},
      {flag::use_clockid, "use_clockid"},
      {flag::context_switch, "context_switch"},
      {flag::write_backward, "write_backward"},
      {flag::namespaces, "namespaces"},
      {flag::ksymbol, "ksymbol"},
      {flag::bpf_event, "bpf_event"},
      {flag::aux_output, "aux_output"},
      {flag::cgroup, "cgroup"},
      {flag::text_poke, "text_poke"},
      {flag::build_id, "build_id"},
      {flag::inherit_thread, "inherit_thread"},
      {flag::remove_on_exec, "remove_on_exec"},
      {flag::sigtrap, "sigtrap"},
  }};
  for (const NamedBit& named : later_flags) {
    if (attr.flags & named.bit) field(named.name, "1");
  }
  number("{ wakeup_events, wakeup_watermark }", attr.wakeup_events_or_watermark);
  number("bp_type", attr.bp_type);
  hex("{ bp_addr, config1 }", attr.config1);
  hex("{ bp_len, config2 }", attr.config2);
  hex("config3", attr.config3);  // perf 6.3 and later
  if (attr.branch_sample_type != 0) {
    field("branch_sample_type", branch_sample_type_text(attr.branch_sample_type));
  }
  hex("sample_regs_user", attr.sample_regs_user);
  number("sample_stack_user", attr.sample_stack_user);
  if (attr.clockid != 0) field("clockid", fmt::format("{}", attr.clockid));
  hex("sample_regs_intr", attr.sample_regs_intr);
  number("aux_watermark", attr.aux_watermark);
  number("sample_max_stack", attr.sample_max_stack);
  number("aux_sample_size", attr.aux_sample_size);
  number("sig_data", attr.sig_data);
  return out;
}

}  // namespace

EvlistCommand::EvlistCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "evlist");
  app_->add_option("-i,--input", input_, "Input file (default perf.data)");
  app_->add_flag("-F,--freq", frequency_, "Each event's sample frequency or period");
  app_->add_flag("-g,--group", groups_, "The event groups: {leader,member,...}");
  app_->add_flag("--trace-fields", trace_fields_, "The fields of each tracepoint event");
  app_->add_flag("--verbose-attr", attributes_,
                 "Every perf_event_attr field that is not zero (perf evlist -v)");
  app_->add_flag("-f,--force", force_, "Read a file another user owns (perf's -f)");
  app_->footer("Examples:\n  perfscope evlist -i perf.data\n  perfscope evlist -F -i perf.data");
}

int EvlistCommand::run() {
  // perf's -v is evlist's attribute listing; perfscope's -v (every subcommand's) says so too.
  bool verbose = attributes_ || app_->get_option("-v")->count() > 0;
  PerfDataReader reader = PerfDataReader::open(input_);
  const auto& events = reader.events();
  std::unique_ptr<ScriptTracepoints> tracepoints;
  if (trace_fields_) tracepoints = std::make_unique<ScriptTracepoints>(reader);
  bool any_tracepoint = false;
  std::string out;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& event = events[i];
    const auto& attr = event.attr;
    const bool tracepoint = attr.type == static_cast<std::uint32_t>(abi::EventType::tracepoint);
    any_tracepoint |= tracepoint;
    if (groups_) {
      // A group's leader names its members; a member has no line of its own.
      const EventGroupDesc* group = nullptr;
      bool member = false;
      for (const auto& candidate : reader.features().groups) {
        if (candidate.leader == i) group = &candidate;
        if (i > candidate.leader && i < candidate.leader + candidate.members) member = true;
      }
      if (member) continue;
      if (group && group->members > 1) {
        // perf writes an unnamed group's name as "{anon_group}" and shows none.
        out += (group->name == "{anon_group}" ? std::string() : group->name) + "{" + event.name;
        for (std::uint32_t m = 1; m < group->members && group->leader + m < events.size(); ++m) {
          out += "," + events[group->leader + m].name;
        }
        out += "}\n";
      } else {
        out += event.name + "\n";
      }
      continue;
    }
    std::string line = event.name;
    bool first = true;
    auto append = [&](const std::string& text) {
      line += first ? ":" : ",";
      first = false;
      line += text;
    };
    if (verbose) {
      std::string details = attr_details(attr);
      line += details;
      first = details.empty();
    } else if (frequency_) {
      append(fmt::format(" {}={}", (attr.flags & flag::freq) ? "sample_freq" : "sample_period",
                         attr.sample_period_or_freq));
    }
    if (trace_fields_) {
      if (!tracepoint) {
        append(" (not a tracepoint)");
      } else if (const TracepointFormat* format = tracepoints->format(i)) {
        bool any = false;
        for (const TracepointField& field : format->fields()) {
          if (field.is_common) continue;
          append(any ? field.name : " trace_fields: " + field.name);
          any = true;
        }
        if (!any) append(" (no trace field)");
      } else {
        append(" (no trace field)");
      }
    }
    out += line + "\n";
  }
  if (any_tracepoint && !trace_fields_) {
    out += "# Tip: use 'perf evlist --trace-fields' to show fields for tracepoint events\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace perfscope::cli
