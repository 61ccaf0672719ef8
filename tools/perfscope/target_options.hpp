// The target options that stat, record and trace share (-p, -t, -a, -C, -G and a command), turned
// into a perfscope::Target with one set of rules and messages.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string_view>
#include <vector>

#include "perfscope/core/cpu_list.hpp"
#include "perfscope/engine/target.hpp"

namespace perfscope::cli {

// `options` has pid, tid, all_cpus, cpu_list, cgroup and command members (StatOptions,
// RecordOptions). `verb` names the subcommand in messages ("stat", "record").
template <class Options>
Target target_from_options(const Options& options, std::string_view verb) {
  int chosen = (options.pid >= 0) + (options.tid >= 0) +
               (options.all_cpus || !options.cpu_list.empty() || !options.cgroup.empty());
  if (chosen > 1) {
    throw std::invalid_argument(
        "choose one target: -p PID, -t TID, or CPUs (-a, -C, -G); they cannot be combined");
  }
  std::vector<int> cpus;
  if (!options.cpu_list.empty()) cpus = parse_cpu_list(options.cpu_list);
  // With -p/-t a command is the measuring period, as in perf (`stat -p PID -- sleep 5`): the
  // task is measured from the start until the command exits.
  if (options.pid >= 0) return Target::process(options.pid).bounded_by(options.command);
  if (options.tid >= 0) return Target::thread(options.tid).bounded_by(options.command);
  if (!options.cgroup.empty()) {
    return Target::cgroup(options.cgroup, cpus).bounded_by(options.command);
  }
  if (options.all_cpus || !cpus.empty()) return Target::cpus(cpus).bounded_by(options.command);
  if (options.command.empty()) {
    throw std::invalid_argument(fmt::format(
        "nothing to {}: give a command (perfscope {} -- COMMAND ...) or a target (-p PID, -t "
        "TID, -a, -C CPUS, -G CGROUP)",
        verb == "stat" ? "measure" : verb, verb));
  }
  return Target::command(options.command);
}

}  // namespace perfscope::cli
