// perfscope doctor: what this machine can measure, and what to change where it cannot.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "cmd_top.hpp"
#include "commands.hpp"
#include "perfscope/analysis/recording/jit_runtimes.hpp"
#include "perfscope/analysis/recording/off_cpu_recorder.hpp"
#include "perfscope/analysis/symbols/frame_pointer_check.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/engine/machine_check.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

DoctorCommand::DoctorCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "doctor");
  app_->add_option("--binary", binary_, "Also check this binary for frame pointers and symbols");
  app_->add_flag("--json", json_, "Machine-readable output");
  app_->footer(
      "Examples:\n"
      "  perfscope doctor\n"
      "  perfscope doctor --binary /usr/bin/ls --json");
}

namespace {

constexpr std::size_t screen_width = 100;
constexpr std::string_view indent = "       ";

std::string_view tag(CheckStatus status) {
  switch (status) {
    case CheckStatus::ok: return "[ ok ]";
    case CheckStatus::warn: return "[warn]";
    case CheckStatus::fail: return "[FAIL]";
    case CheckStatus::info: return "[info]";
  }
  return "[info]";
}

// Prints `text` word-wrapped under the check, each line indented; `lead` starts the first one.
void print_wrapped(std::string_view lead, const std::string& text) {
  std::istringstream words(text);
  std::string word;
  std::string line = std::string(indent) + std::string(lead);
  bool line_has_word = false;
  std::string continuation(indent.size() + lead.size(), ' ');
  while (words >> word) {
    if (line_has_word && line.size() + 1 + word.size() > screen_width) {
      fmt::print("{}\n", line);
      line = continuation;
      line_has_word = false;
    }
    if (line_has_word) line += ' ';
    line += word;
    line_has_word = true;
  }
  if (line_has_word) fmt::print("{}\n", line);
}

// The fixes already printed, with the check they were printed under: several checks fail for one
// cause (no PMU fails four) and share a fix, which is said once and referred to after.
using SaidFixes = std::vector<std::pair<std::string, std::string>>;

void print_check(CheckStatus status, std::string_view title, const std::string& value,
                 const std::string& explanation, const std::string& fix,
                 SaidFixes* said = nullptr) {
  fmt::print("{} {}: {}\n", tag(status), title, value);
  if (status == CheckStatus::ok) return;
  if (!explanation.empty()) print_wrapped("", explanation);
  if (fix.empty()) return;
  if (said != nullptr) {
    for (const auto& [text, under] : *said) {
      if (text == fix) {
        print_wrapped("fix: ", fmt::format("the same as for '{}' above", under));
        return;
      }
    }
    said->emplace_back(fix, std::string(title));
  }
  print_wrapped("fix: ", fix);
}

CheckStatus frame_pointer_status(const FramePointerReport& binary) {
  if (!binary.architecture_supported || binary.functions.empty()) return CheckStatus::info;
  return binary.frame_pointers_usable() ? CheckStatus::ok : CheckStatus::warn;
}

std::string frame_pointer_summary(const FramePointerReport& binary) {
  if (!binary.architecture_supported) return fmt::format("not checked ({})", binary.machine);
  if (binary.functions.empty()) return "no functions to check";
  return fmt::format("{:.0f}% ({} of {} functions)", binary.fraction() * 100,
                     binary.functions_with_frame_pointer, binary.functions.size());
}

void print_binary(const FramePointerReport& binary) {
  fmt::print("\n{} ({}):\n", binary.path, binary.machine);
  print_check(frame_pointer_status(binary), "frame pointers",
              fmt::format("{}{}", frame_pointer_summary(binary),
                          binary.symbol_table.empty()
                              ? std::string()
                              : fmt::format(", symbols from {}", binary.symbol_table)),
              "", "");
  print_check(binary.stripped ? CheckStatus::warn : CheckStatus::ok, "symbol table",
              binary.stripped ? (binary.symbol_table.empty() ? "none" : "stripped, .dynsym only")
                              : ".symtab",
              "", "");
  print_check(binary.has_debug_info ? CheckStatus::ok : CheckStatus::warn, "debug info",
              binary.has_debug_info ? ".debug_info present" : "none", "", "");
  print_check(binary.has_eh_frame ? CheckStatus::ok : CheckStatus::warn, "unwind tables",
              binary.has_eh_frame ? ".eh_frame present" : "no .eh_frame", "", "");
  print_check(binary.build_id.empty() ? CheckStatus::warn : CheckStatus::ok, "build-id",
              binary.build_id.empty() ? "none" : binary.build_id, "", "");
  for (const auto& line : binary.advice) print_wrapped("advice: ", line);
}

// The JIT runtimes on PATH and what `record --jit` sets for each.
void print_runtimes(const std::vector<JitRuntimeSwitches>& runtimes) {
  fmt::print("\nJIT runtimes (record --jit):\n");
  if (runtimes.empty()) fmt::print("  none on PATH (node, java, python3)\n");
  for (const JitRuntimeSwitches& runtime : runtimes) {
    std::string set;
    for (const auto& [name, value] : runtime.environment) {
      set += fmt::format("{}{}=\"{}\"", set.empty() ? "" : " ", name, value);
    }
    fmt::print("  {} ({}): {}\n", runtime.runtime.empty() ? "?" : runtime.runtime, runtime.path,
               set.empty() ? "nothing to set" : set);
    print_wrapped("    ", runtime.note);
  }
}

void print_text(const MachineReport& report, const std::optional<FramePointerReport>& binary,
                const std::vector<JitRuntimeSwitches>& runtimes) {
  fmt::print("perfscope doctor: what this machine lets perf_event measure\n\n");
  SaidFixes said;
  for (const auto& check : report.checks) {
    print_check(check.status, check.title, check.value, check.explanation, check.fix, &said);
  }
  if (binary) print_binary(*binary);
  print_runtimes(runtimes);
  fmt::print("\nhardware counters: {}; sampling: {}; user-space reads: {}",
             report.hardware_counters ? "yes" : "no", report.sampling, report.user_space_reads);
  if (binary) fmt::print("; frame pointers: {}", frame_pointer_summary(*binary));
  fmt::print("\n");
}

nlohmann::json to_json(const FramePointerReport& binary) {
  nlohmann::json advice = nlohmann::json::array();
  for (const auto& line : binary.advice) advice.push_back(line);
  return {
      {"path", binary.path},
      {"machine", binary.machine},
      {"architecture_supported", binary.architecture_supported},
      {"symbol_table", binary.symbol_table},
      {"stripped", binary.stripped},
      {"debug_info", binary.has_debug_info},
      {"eh_frame", binary.has_eh_frame},
      {"build_id", binary.build_id},
      {"functions", binary.functions.size()},
      {"functions_with_frame_pointer", binary.functions_with_frame_pointer},
      {"frame_pointer_fraction", binary.fraction()},
      {"frame_pointers_usable", binary.frame_pointers_usable()},
      {"advice", advice},
  };
}

void print_json(const MachineReport& report, const std::optional<FramePointerReport>& binary,
                const std::vector<JitRuntimeSwitches>& runtimes) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& check : report.checks) {
    checks.push_back({{"id", check.id},
                      {"title", check.title},
                      {"status", check_status_name(check.status)},
                      {"value", check.value},
                      {"explanation", check.explanation},
                      {"fix", check.fix}});
  }
  nlohmann::json pmus = nlohmann::json::array();
  for (const auto& pmu : report.pmus) {
    pmus.push_back({{"name", pmu.name}, {"type", pmu.type}, {"core", pmu.core}});
  }
  const auto& page = report.user_page;
  nlohmann::json document = {
      {"schema", "perfscope-doctor"},
      {"version", 1},
      {"checks", checks},
      {"pmus", pmus},
      {"user_page",
       {{"mapped", page.mapped},
        {"from_hardware_event", page.from_hardware_event},
        {"cap_user_rdpmc", page.user_rdpmc},
        {"cap_user_time", page.user_time},
        {"cap_user_time_zero", page.user_time_zero},
        {"cap_user_time_short", page.user_time_short},
        {"index", page.index},
        {"pmc_width", page.pmc_width}}},
      {"summary",
       {{"hardware_counters", report.hardware_counters},
        {"sampling", report.sampling},
        {"user_space_reads", report.user_space_reads}}},
  };
  if (binary) document["binary"] = to_json(*binary);
  nlohmann::json jit = nlohmann::json::array();
  for (const JitRuntimeSwitches& runtime : runtimes) {
    nlohmann::json environment = nlohmann::json::object();
    for (const auto& [name, value] : runtime.environment) environment[name] = value;
    jit.push_back({{"runtime", runtime.runtime},
                   {"path", runtime.path},
                   {"version", runtime.version},
                   {"record_jit_sets", environment},
                   {"note", runtime.note}});
  }
  document["jit_runtimes"] = jit;
  fmt::print("{}\n", document.dump(2));
}

}  // namespace

int DoctorCommand::run() {
  // The binary first: a path that cannot be read is the user's mistake, reported before probing.
  std::optional<FramePointerReport> binary;
  if (!binary_.empty()) {
    try {
      binary = check_frame_pointers(binary_);
    } catch (const Error& error) {
      fmt::print(stderr, "perfscope doctor: {}\n  {}\n", error.summary(), error.diagnosis());
      return 1;
    }
  }
  MachineReport report = check_machine();
  report.checks.push_back(top_check(report));
  report.checks.push_back(off_cpu_machine_check());
  std::vector<JitRuntimeSwitches> runtimes = installed_jit_runtimes();
  if (json_) {
    print_json(report, binary, runtimes);
  } else {
    print_text(report, binary, runtimes);
  }
  return 0;
}

}  // namespace perfscope::cli
