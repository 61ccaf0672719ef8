// Dynamic tracepoints made through tracefs as perf probe makes them: uprobes in an executable or
// library (uprobe_events) and kprobes in the kernel (kprobe_events), in perf's groups and names
// (probe_BINARY:function, probe:function), so that perf and perfscope list, use and remove each
// other's, and record, stat and trace take them at once as -e GROUP:EVENT.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/analysis/trace/probe_arguments.hpp"

namespace perfscope {

struct DynamicProbe {
  std::string group, event;  // probe_libc, syscall
  bool kernel = false;       // a kprobe
  bool return_probe = false;
  std::string binary;        // a uprobe's file
  std::uint64_t offset = 0;  // a uprobe's file offset
  std::string place;         // a kprobe's "function+offset"
  // perf's "on ..." text: "syscall", "syscall+4", "syscall%return" (the function found again from
  // the offset for a uprobe; "0x1810" when no symbol holds it).
  std::string on;
  // The kernel's fetch arguments ("n=-36(%bp):s32", "$comm"), in the probe's tracefs line.
  std::vector<std::string> fetch_arguments;
  // What perf's "Added new event" line says of them ("n x=p->x"), and its notices (the prologue
  // skipped at -O0); empty when none.
  std::string requested_arguments;
  std::string notice;

  // The names of the fetched values, as perf probe -l lists them after "with".
  std::vector<std::string> argument_names() const;
};

// "[EVENT=]FUNCTION[+OFFSET|%return] [ARGUMENT...]", perf probe's definition.
struct ProbeRequest {
  std::string event;  // empty: named after the function
  std::string function;
  std::uint64_t offset = 0;
  bool return_probe = false;
  std::vector<ProbeArgument> arguments;
};
// Throws std::invalid_argument saying what is wrong and what perfscope takes.
ProbeRequest parse_probe_definition(const std::string& definition);

class DynamicProbes {
 public:
  // tracefs found (mounting it where it may); throws std::runtime_error when it cannot be.
  DynamicProbes();

  bool kprobes_available() const;
  // The kernel fetches hexadecimal types (x8..x64), which perf gives unsigned values.
  bool hex_types_available() const;
  // Each kind's by name, kprobes first, as perf probe -l lists them; `places`: with perf's "on"
  // text (from DWARF where the binary has it), else names and locations only.
  std::vector<DynamicProbe> list(bool places = true) const;
  // Adds a uprobe in `binary` (an absolute path is made of it) or, with `binary` empty, a kprobe.
  // An existing name gets perf's _1, _2, ... suffix when `force`, else is an error that says so.
  // `dry_run`: the probe as it would be made, not made.
  DynamicProbe add(const ProbeRequest& request, const std::string& binary, bool force,
                   bool dry_run);
  // Removes the probes whose GROUP:EVENT matches `pattern` (a glob; "EVENT" alone matches any
  // group); the removed, in list order.
  std::vector<DynamicProbe> remove(const std::string& pattern);

 private:
  std::string root_;
};

// The functions of `binary` a uprobe can go on (its .symtab's, else .dynsym's), demangled as perf
// shows them, sorted, each once; perf's default --funcs filter leaves out names starting with '_'.
// Throws std::runtime_error when the file cannot be read.
std::vector<std::string> probe_functions(const std::string& binary);

// The probe's line in uprobe_events or kprobe_events ("p:probe_libc/syscall /path:0x...").
std::string probe_definition_line(const DynamicProbe& probe);

// perf's group of a binary's uprobes: "probe_" and its file name up to the first dot, other
// characters than letters, digits and '_' as '_' (libc.so.6: probe_libc).
std::string uprobe_group(const std::string& binary);

}  // namespace perfscope
