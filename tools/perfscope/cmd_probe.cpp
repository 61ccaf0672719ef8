// perfscope probe: uprobes and kprobes made, listed and removed through tracefs as perf probe
// makes them (perf's groups, names and text), usable at once as -e GROUP:EVENT in record, stat
// and trace.
#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "commands.hpp"
#include "perfscope/analysis/trace/dynamic_probes.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

namespace {

// perf's line of a probe: "  probe_t:work         (on work in /bin/t with n m)"; `arguments`
// as the definition gave them (when added) or as the kernel names them (when listed).
std::string probe_line(const DynamicProbe& probe, const std::string& arguments) {
  std::string name = probe.group + ":" + probe.event;
  std::string with = arguments.empty() ? std::string() : " with " + arguments;
  if (probe.kernel) return fmt::format("  {:<20} (on {}{})\n", name, probe.on, with);
  return fmt::format("  {:<20} (on {} in {}{})\n", name, probe.on, probe.binary, with);
}

std::string listed_arguments(const DynamicProbe& probe) {
  std::string names;
  for (const std::string& name : probe.argument_names()) {
    names += names.empty() ? name : " " + name;
  }
  return names;
}

}  // namespace

ProbeCommand::ProbeCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "probe");
  app_->add_option("-x,--exec", binary_, "The executable or library of the uprobes");
  app_->add_option("-a,--add", add_,
                   "Add a probe: '[EVENT=]FUNCTION[+OFFSET|%return] [ARG...]', each ARG a C "
                   "variable by name ([NAME=]VAR[->FIELD|.FIELD|[N]][:TYPE], $params, $vars) or "
                   "a raw fetch argument (%di, +8(%sp), $comm) (repeatable)");
  app_->add_option("definitions", positional_,
                   "A probe to add, as --add takes it (its words joined)");
  app_->add_option("-d,--del", delete_, "Remove the probes GROUP:EVENT (globs) names");
  app_->add_option("-l,--list", list_, "List the probes (those the glob names)")->expected(0, 1);
  app_->add_option("-F,--funcs", funcs_, "List the functions probes can go on (of -x BINARY)")
      ->expected(0, 1);
  app_->add_option("-D,--definition", definitions_,
                   "Print the tracefs line of a probe without adding it");
  app_->add_flag("-f,--force", force_, "Add a probe beside an existing one of the same name");
  app_->add_flag("-n,--dry-run", dry_run_, "Say what would be added, add nothing");
  app_->add_flag("-q,--quiet", quiet_, "Print no messages");
  app_->add_option("-L,--line", line_,
                   "Show FUNCTION's source, each line a probe can go on numbered (of -x BINARY)");
  app_->add_option("-V,--vars", vars_,
                   "List the variables a probe on FUNCTION[+OFFSET] can fetch (of -x BINARY)");
  app_->add_flag("--externs", externs_, "With --vars: the unit's global variables too");
  app_->footer(
      "Examples:\n"
      "  perfscope probe -x /usr/lib/x86_64-linux-gnu/libc.so.6 --add malloc\n"
      "  perfscope probe -x ./server --add 'handle_request req->id req->path:string'\n"
      "  perfscope stat -e probe_libc:malloc -- ls\n"
      "  perfscope probe -l\n"
      "  perfscope probe -d 'probe_libc:*'");
}

int ProbeCommand::run() {
  if (!line_.empty() || !vars_.empty()) {
    if (binary_.empty()) {
      throw std::invalid_argument(
          "--line and --vars read a binary's DWARF: give -x BINARY (the kernel's, from a vmlinux, "
          "are perf probe's)");
    }
    std::string out;
    if (!line_.empty()) {
      if (line_.find_first_of(":@") != std::string::npos) {
        throw std::invalid_argument(fmt::format(
            "--line {}: perfscope shows a whole function (--line FUNCTION); line ranges and "
            "FILE:LINE are perf probe's",
            line_));
      }
      out += probe_lines_view(binary_, line_);
    }
    if (!vars_.empty()) {
      ProbeRequest point = parse_probe_definition(vars_);
      out += probe_variables_view(binary_, point.function, point.offset, externs_);
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  std::vector<std::string> additions = add_;
  // perf's words after the options are one definition: "probe -x BIN work n m".
  if (!positional_.empty()) {
    std::string definition;
    for (const std::string& word : positional_)
      definition += definition.empty() ? word : " " + word;
    additions.push_back(definition);
  }
  bool listing = app_->count("--list") != 0, functions = app_->count("--funcs") != 0;
  if (additions.empty() && delete_.empty() && definitions_.empty() && !listing && !functions) {
    throw std::invalid_argument(
        "give what to do: --add DEFINITION, --del GROUP:EVENT, --list, --funcs or --definition");
  }
  if (functions) {
    if (binary_.empty()) {
      throw std::invalid_argument(
          "--funcs lists a binary's functions: give -x BINARY (the kernel's are in "
          "/sys/kernel/tracing/available_filter_functions)");
    }
    std::string out;
    for (const std::string& name : probe_functions(binary_)) {
      if (!funcs_.empty() && name.find(funcs_) == std::string::npos) continue;
      out += name + "\n";
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  DynamicProbes probes;
  for (const std::string& definition : definitions_) {
    DynamicProbe probe = probes.add(parse_probe_definition(definition), binary_, true, true);
    if (!quiet_) std::fputs(probe.notice.c_str(), stderr);
    std::string line = probe_definition_line(probe) + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  for (const std::string& pattern : delete_) {
    auto removed = probes.remove(pattern);
    if (removed.empty()) {
      throw std::runtime_error(fmt::format("no probe matches '{}' (probe -l lists them)", pattern));
    }
    for (const DynamicProbe& probe : removed) {
      if (!quiet_) fmt::print(stderr, "Removed event: {}:{}\n", probe.group, probe.event);
    }
  }
  if (!additions.empty()) {
    std::string text;
    std::string last;
    for (const std::string& definition : additions) {
      DynamicProbe probe =
          probes.add(parse_probe_definition(definition), binary_, force_, dry_run_);
      if (!quiet_) std::fputs(probe.notice.c_str(), stderr);
      text += probe_line(probe, probe.requested_arguments);
      last = probe.group + ":" + probe.event;
    }
    if (!quiet_) {
      fmt::print(stderr,
                 "Added new event{}:\n{}\nYou can now use it in all perfscope and perf tools, "
                 "such as:\n\n\tperfscope record -e {} -a -- sleep 1\n\n",
                 additions.size() > 1 ? "s" : "", text, last);
    }
  }
  if (listing) {
    std::string out;
    for (const DynamicProbe& probe : probes.list()) {
      std::string name = probe.group + ":" + probe.event;
      if (!list_.empty() && !name.starts_with(list_) && name.find(list_) == std::string::npos) {
        continue;
      }
      out += probe_line(probe, listed_arguments(probe));
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  return 0;
}

}  // namespace perfscope::cli
