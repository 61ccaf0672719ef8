#include "perfscope/analysis/trace/probe_arguments.hpp"

#include <fmt/format.h>

#include <string_view>

#include "analysis/trace/probe_dwarf.hpp"

namespace perfscope {

namespace {

constexpr std::string_view params_keyword = "$params";
constexpr std::string_view vars_keyword = "$vars";

// The kernel's text of a fetch argument: "name=+0(+16(-64(%bp))):string", "gs=@gs+104:s32".
std::string fetch_text(const std::string& name, const Fetch& fetch, const std::string& type) {
  std::string out = name.empty() ? std::string() : name + "=";
  const auto& dereferences = fetch.dereferences;
  std::size_t folded = fetch.symbol && !dereferences.empty() ? 1 : 0;
  for (std::size_t i = dereferences.size(); i-- > folded;) {
    out += fmt::format("{:+d}(", dereferences[i]);
  }
  out += folded != 0 ? fmt::format("{}{:+d}", fetch.base, dereferences[0]) : fetch.base;
  out.append(dereferences.size() - folded, ')');
  if (!type.empty()) out += ":" + type;
  return out;
}

// The parameters (and with `all`, the variables) in scope at `address` whose location can be
// fetched there, in DIE order: perf's $params and $vars.
void collect_variables(ProbeDwarf& dwarf, Dwarf_Die* root, Dwarf_Die* function, Dwarf_Addr address,
                       bool all, std::vector<std::string>& names) {
  Dwarf_Die child;
  if (dwarf_child(root, &child) != 0) return;
  do {
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_formal_parameter || (all && tag == DW_TAG_variable)) {
      Fetch fetch;
      unsigned register_number = 0;
      LocationResult result = dwarf.locate(&child, function, address, fetch, register_number);
      const char* name = dwarf_diename(&child);
      if (name != nullptr &&
          (result == LocationResult::found || result == LocationResult::unknown_register)) {
        names.emplace_back(name);
      }
    }
    if (dwarf_haspc(&child, address) == 1) {
      collect_variables(dwarf, &child, function, address, all, names);
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

}  // namespace

ProbePlacement place_uprobe(const std::string& binary, const std::string& function,
                            std::uint64_t offset, bool return_probe,
                            const std::vector<ProbeArgument>& arguments, bool hex_types) {
  if (return_probe) {
    throw std::runtime_error(
        "Semantic error :You can't specify local variable for kretprobe. (a return probe "
        "fetches $retval and raw arguments)");
  }
  ProbeDwarf dwarf(binary);
  Dwarf_Die definition, unit;
  if (!dwarf.find_function(function, definition, unit)) {
    fail_probe(fmt::format("Probe point '{}' not found in the DWARF of {}.", function, binary));
  }
  ProbePlacement placement;
  Dwarf_Addr address = 0;
  dwarf_entrypc(&definition, &address);
  if (offset == 0 && !has_location_lists(&unit)) {
    placement.notice = fmt::format(
        "Target program is compiled without optimization. Skipping prologue.\n"
        "Probe on address {:#x} to force probing at the function entry.\n\n",
        address);
    address = after_prologue(&definition, &unit, address);
  }
  address += offset;
  if (offset != 0 && dwarf_haspc(&definition, address) != 1) {
    fail_probe(fmt::format("{}+{} is outside {}: give an offset inside the function", function,
                           offset, function));
  }
  dwarf.set_frame_base(&definition, address);

  std::vector<ProbeArgument> expanded;
  for (const ProbeArgument& argument : arguments) {
    if (argument.variable != params_keyword && argument.variable != vars_keyword) {
      expanded.push_back(argument);
      continue;
    }
    std::vector<std::string> names;
    collect_variables(dwarf, &definition, &definition, address, argument.variable == vars_keyword,
                      names);
    for (std::string& name : names) {
      ProbeArgument variable;
      variable.variable = std::move(name);
      expanded.push_back(std::move(variable));
    }
  }
  for (const ProbeArgument& argument : expanded) {
    if (!argument.is_c_variable()) {
      std::string raw = argument.name.empty() ? std::string() : argument.name + "=";
      raw += argument.variable;
      if (!argument.type.empty()) raw += ":" + argument.type;
      placement.fetch_arguments.push_back(std::move(raw));
      continue;
    }
    Dwarf_Die variable;
    std::string not_found = fmt::format(
        "Failed to find the location of the '{}' variable at this address.\n Perhaps it has "
        "been optimized out.",
        argument.variable);
    if (!find_variable(&definition, argument.variable, address, variable) &&
        !find_variable(&unit, argument.variable, 0, variable)) {
      fail_probe(not_found);
    }
    Fetch fetch;
    unsigned register_number = 0;
    switch (dwarf.locate(&variable, &definition, address, fetch, register_number)) {
      case LocationResult::found: break;
      case LocationResult::not_found: fail_probe(not_found);
      case LocationResult::unsupported:
        fail_probe("Sorry, we don't support this variable location yet.");
      case LocationResult::unknown_register:
        fail_probe(fmt::format(
            "Mapping for the register number {} missing on this architecture.\nSorry, we don't "
            "support this variable location yet.",
            register_number));
    }
    Dwarf_Die holder = variable;
    dwarf.follow_fields(argument, fetch, holder);
    std::string type = dwarf.fetch_type(&holder, argument.type, fetch, hex_types, placement.notice);
    std::string name = argument.name;
    if (name.empty()) {
      name = argument.text();
      if (std::size_t colon = name.find(':'); colon != std::string::npos) name[colon] = '_';
    }
    placement.fetch_arguments.push_back(fetch_text(name, fetch, type));
  }
  placement.file_offset = dwarf.file_offset(address);
  return placement;
}

}  // namespace perfscope
