// A uprobe's place and fetch arguments from the binary's DWARF, as perf probe makes them: C
// variables by name ("n", "p->name:string", "arr[2]", "$params", "$vars") turned into the
// kernel's fetch syntax ("n=-36(%bp):s32", "name=+0(+16(-64(%bp))):string"), and the probe moved
// past the prologue of code built without optimization, where the arguments are on the stack.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace perfscope {

// One argument of a probe definition, as perf probe parses it: "[NAME=]VAR[->F|.F|[N]]...[:TYPE]".
struct ProbeArgument {
  struct Field {
    std::string name;  // "x", or "[2]" for an index
    bool arrow = false;
    bool index = false;
    std::int64_t position = 0;  // an index's
  };
  std::string name;      // NAME= or, with fields, the last field's name; empty otherwise
  std::string variable;  // "p", "$params", or a raw fetch argument ("%di", "+8(%sp)", "$comm")
  std::vector<Field> fields;
  std::string type;  // after ':'

  // A C variable (its first character a letter or '_'): found in DWARF. Anything else goes to
  // the kernel as written.
  bool is_c_variable() const;
  // perf's text of the argument in its "Added new event" line: "x=p->x", "n:u8".
  std::string text() const;
};

// Throws std::invalid_argument saying what is wrong with `text`.
ProbeArgument parse_probe_argument(const std::string& text);

struct ProbePlacement {
  std::uint64_t file_offset = 0;
  // The kernel's fetch arguments, in order: "n=-36(%bp):s32", "$comm".
  std::vector<std::string> fetch_arguments;
  // perf's messages for the user, each ending in '\n' ("Target program is compiled without
  // optimization. Skipping prologue. ..."); empty when none.
  std::string notice;
};

// The place and fetch arguments of a uprobe on `function` (+`offset`) of `binary` (its DWARF
// from the file itself or its separate debug file). `hex_types`: the kernel takes x8..x64
// (tracefs README), else unsigned values are u8..u64 as in perf. Throws std::runtime_error with
// perf's words (and what to do) when the binary has no DWARF, the function or a variable is not
// there, or a variable's location or type is one perf cannot fetch either.
ProbePlacement place_uprobe(const std::string& binary, const std::string& function,
                            std::uint64_t offset, bool return_probe,
                            const std::vector<ProbeArgument>& arguments, bool hex_types);

// perf probe -l's place of a uprobe in a binary with DWARF: "work:1@data/target.c" (the line
// relative to the function's, the file shortened to its last 30 characters), "work+24@..." off a
// line's start, "work@..." at the entry; nullopt without DWARF for the place.
std::optional<std::string> probe_source_point(const std::string& binary, std::uint64_t file_offset);

// perf probe -V: the variables a probe on `function` (+`offset`, the prologue not skipped) can
// fetch by name, "TYPE\tNAME" sorted, under "Available variables at work" and "\t@<work+0>";
// `externs`: the unit's global variables too. Throws std::runtime_error as place_uprobe.
std::string probe_variables_view(const std::string& binary, const std::string& function,
                                 std::uint64_t offset, bool externs);

// perf probe -L: `function`'s source from its declaration, each line a probe can go on numbered
// relative to it, and three lines after the last. Throws std::runtime_error as place_uprobe, or
// when the source file cannot be read.
std::string probe_lines_view(const std::string& binary, const std::string& function);

}  // namespace perfscope
