// perf probe's views of a binary's source from its DWARF: where a probe is (probe -l's
// "work:1@file.c"), the lines a probe can go on (--line) and the variables it can fetch (--vars).
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/trace/probe_dwarf.hpp"
#include "perfscope/analysis/trace/probe_arguments.hpp"

namespace perfscope {

std::optional<std::string> probe_source_point(const std::string& binary,
                                              std::uint64_t file_offset) {
  try {
    ProbeDwarf dwarf(binary);
    std::optional<Dwarf_Addr> address = dwarf.address_of_offset(file_offset);
    Dwarf_Die unit, function;
    if (!address || dwarf_addrdie(dwarf.dwarf(), *address, &unit) == nullptr) return std::nullopt;
    int line = 0;
    const char* file = nullptr;
    // perf's cu_find_lineinfo: a line only where a line-table row starts at the address.
    if (Dwarf_Line* row = dwarf_getsrc_die(&unit, *address)) {
      Dwarf_Addr row_address = 0;
      if (dwarf_lineaddr(row, &row_address) == 0 && row_address == *address &&
          dwarf_lineno(row, &line) == 0) {
        file = dwarf_linesrc(row, nullptr, nullptr);
        if (file == nullptr) line = 0;
      }
    }
    std::string name;
    std::uint64_t offset = 0;
    int base_line = 0;
    if (function_holding(&unit, *address, function)) {
      Dwarf_Addr entry = 0;
      const char* function_name = dwarf_diename(&function);
      if (function_name == nullptr || dwarf_entrypc(&function, &entry) != 0 ||
          dwarf_decl_line(&function, &base_line) != 0) {
        line = 0;
      } else {
        name = function_name;
        file = dwarf_decl_file(&function);
        if (*address == entry) line = base_line;
        if (line == 0) offset = *address - entry;
      }
    }
    if (name.empty()) return std::nullopt;
    std::string point = name;
    if (line != 0) {
      if (line != base_line) point += fmt::format(":{}", line - base_line);
    } else if (offset != 0) {
      point += fmt::format("+{}", offset);
    }
    if (file != nullptr) {
      // perf shortens a long path to its last 30 characters, from a directory boundary.
      std::string_view path = file;
      if (path.size() > 30) {
        std::string_view tail = path.substr(path.size() - 30);
        std::size_t slash = tail.find('/');
        path = slash == std::string_view::npos ? tail : tail.substr(slash + 1);
      }
      point += fmt::format("@{}", path);
    }
    return point;
  } catch (const std::runtime_error&) {
    return std::nullopt;  // no DWARF to say it with: the caller names the symbol
  }
}

namespace {

// perf's die_get_typename: typedef names kept, qualifiers dropped, "*" after a pointer's or an
// array's element; false when the DIE has no type.
bool type_name(Dwarf_Die* die, std::string& out) {
  Dwarf_Attribute attribute;
  Dwarf_Die type;
  if (dwarf_attr_integrate(die, DW_AT_type, &attribute) == nullptr ||
      dwarf_formref_die(&attribute, &type) == nullptr) {
    return false;
  }
  for (int tag = dwarf_tag(&type); tag == DW_TAG_const_type || tag == DW_TAG_volatile_type ||
                                   tag == DW_TAG_restrict_type || tag == DW_TAG_shared_type;
       tag = dwarf_tag(&type)) {
    Dwarf_Die next;
    if (dwarf_attr_integrate(&type, DW_AT_type, &attribute) == nullptr ||
        dwarf_formref_die(&attribute, &next) == nullptr) {
      return false;
    }
    type = next;
  }
  int tag = dwarf_tag(&type);
  if (tag == DW_TAG_subroutine_type) {
    out += "(function_type)";
    return true;
  }
  if (tag != DW_TAG_array_type && tag != DW_TAG_pointer_type) {
    const char* name = dwarf_diename(&type);
    const char* kind = tag == DW_TAG_union_type         ? "union "
                       : tag == DW_TAG_structure_type   ? "struct "
                       : tag == DW_TAG_enumeration_type ? "enum "
                                                        : "";
    if (*kind == '\0' && name == nullptr) return false;
    out += kind;
    out += name != nullptr ? name : "";
    return true;
  }
  if (!type_name(&type, out)) {
    if (tag != DW_TAG_pointer_type) return false;
    out += "void";  // a void pointer's type names nothing
  }
  out += "*";
  return true;
}

// perf's collect_variables_cb: "TYPE\tNAME" of each parameter and variable under `root` whose
// location at `address` can be fetched, descending into the scopes that hold it when `nested`.
void available_variables(ProbeDwarf& dwarf, Dwarf_Die* root, Dwarf_Die* function,
                         Dwarf_Addr address, bool nested, std::set<std::string>& out) {
  Dwarf_Die child;
  if (dwarf_child(root, &child) != 0) return;
  do {
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_formal_parameter || tag == DW_TAG_variable) {
      Fetch fetch;
      unsigned register_number = 0;
      LocationResult result = dwarf.locate(&child, function, address, fetch, register_number);
      if (result == LocationResult::found || result == LocationResult::unknown_register) {
        std::string entry;
        if (!type_name(&child, entry)) entry = "(unknown_type)";
        out.insert(entry + "\t" + name_of(&child));
      }
    }
    if (nested && dwarf_haspc(&child, address) == 1) {
      available_variables(dwarf, &child, function, address, nested, out);
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

// perf's strtailcmp: one path ends with the other.
bool same_file_tail(std::string_view a, std::string_view b) {
  std::size_t n = std::min(a.size(), b.size());
  return a.substr(a.size() - n) == b.substr(b.size() - n);
}

}  // namespace

std::string probe_variables_view(const std::string& binary, const std::string& function,
                                 std::uint64_t offset, bool externs) {
  ProbeDwarf dwarf(binary);
  Dwarf_Die definition, unit;
  if (!dwarf.find_function(function, definition, unit)) {
    fail_probe(fmt::format("Probe point '{}' not found in the DWARF of {}.", function, binary));
  }
  Dwarf_Addr address = 0;
  dwarf_entrypc(&definition, &address);
  address += offset;
  dwarf.set_frame_base(&definition, address);
  std::set<std::string> variables;
  available_variables(dwarf, &definition, &definition, address, true, variables);
  if (externs) available_variables(dwarf, &unit, &definition, address, false, variables);
  std::string point = offset != 0 ? fmt::format("{}+{}", function, offset) : function;
  std::string out =
      fmt::format("Available variables at {}\n\t@<{}+{}>\n", point, name_of(&definition), offset);
  for (const std::string& variable : variables) out += "\t\t" + variable + "\n";
  if (variables.empty()) out += "\t\t(No matched variables)\n";
  return out;
}

std::string probe_lines_view(const std::string& binary, const std::string& function) {
  ProbeDwarf dwarf(binary);
  Dwarf_Die definition, unit;
  if (!dwarf.find_function(function, definition, unit)) {
    fail_probe(fmt::format("Specified source line is not found: '{}' is in no unit of {}.",
                           function, binary));
  }
  int first_line = 0;
  const char* declared_in = dwarf_decl_file(&definition);
  if (dwarf_decl_line(&definition, &first_line) != 0 || declared_in == nullptr) {
    fail_probe(fmt::format("Failed to get the declared place of {}.", function));
  }
  std::string file = declared_in;
  Dwarf_Attribute attribute;
  const char* directory = dwarf_formstring(dwarf_attr(&unit, DW_AT_comp_dir, &attribute));
  if (file.front() != '/' && directory != nullptr) file = std::string(directory) + "/" + file;
  // perf's die_walk_lines on the function: each statement row whose address is the function's,
  // of its file and at or after its declaration, that the address maps back to: the first
  // statement row at the address has the same line (cu_find_lineinfo).
  struct Statement {
    int line;
    const char* file;
  };
  std::vector<std::pair<Dwarf_Addr, Statement>> statements;
  std::map<Dwarf_Addr, Statement> first_statement;
  Dwarf_Lines* rows = nullptr;
  std::size_t count = 0;
  if (dwarf_getsrclines(&unit, &rows, &count) == 0) {
    for (std::size_t i = 0; i < count; ++i) {
      Dwarf_Line* row = dwarf_onesrcline(rows, i);
      Dwarf_Addr address = 0;
      int line = 0;
      bool statement = false, end = false;
      const char* row_file = dwarf_linesrc(row, nullptr, nullptr);
      if (row_file == nullptr || dwarf_lineno(row, &line) != 0 ||
          dwarf_lineaddr(row, &address) != 0 || dwarf_linebeginstatement(row, &statement) != 0 ||
          dwarf_lineendsequence(row, &end) != 0 || !statement || end) {
        continue;
      }
      first_statement.try_emplace(address, Statement{line, row_file});
      statements.emplace_back(address, Statement{line, row_file});
    }
  }
  std::set<int> lines;
  for (const auto& [address, statement] : statements) {
    if (dwarf_haspc(&definition, address) != 1 || !same_file_tail(statement.file, file) ||
        statement.line < first_line) {
      continue;
    }
    const Statement& back = first_statement.at(address);
    if (back.line != statement.line || std::string_view(back.file) != statement.file) continue;
    lines.insert(statement.line);
  }
  // The declaration's line: the function's entry (perf's __die_walk_funclines).
  Dwarf_Addr entry = 0;
  if (dwarf_entrypc(&definition, &entry) == 0) lines.insert(first_line);

  std::ifstream source(file);
  if (!source) fail_probe(fmt::format("Failed to find source file path: {}.", file));
  std::string out = fmt::format("<{}@{}:0>\n", function, file);
  std::string text;
  int line = 1;
  for (; line < first_line && std::getline(source, text); ++line) {
  }
  int last = lines.empty() ? first_line : *lines.rbegin();
  // Three more lines after the last numbered one, as perf shows them.
  for (; line <= last + 3 && std::getline(source, text); ++line) {
    bool numbered = lines.count(line) != 0;
    out += numbered ? fmt::format("{:>7}  ", line - first_line) : std::string(9, ' ');
    out += text + "\n";
  }
  return out;
}

}  // namespace perfscope
