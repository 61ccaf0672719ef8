// The DWARF of a binary as perf probe reads it for uprobes: functions, scopes, the locations of
// variables at an address (registers, frame-base slots through the CFA, globals), their fields and
// types; shared by the probe's placement, its arguments and its source views.
#pragma once

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/analysis/symbols/elf_image.hpp"
#include "perfscope/analysis/trace/probe_arguments.hpp"

namespace perfscope {

// Throws std::runtime_error(message): perf's words for what cannot be probed.
[[noreturn]] void fail_probe(const std::string& message);

// A DIE's name; "(null)" without one, as perf's messages print it.
std::string name_of(Dwarf_Die* die);

// perf's die_get_real_type: the type without typedefs and qualifiers.
bool real_type_of(Dwarf_Die* die, Dwarf_Die& type);

// perf's die_is_optimized_target: a unit whose variables have location lists was optimized.
bool has_location_lists(Dwarf_Die* die);

// perf's die_skip_prologue: the address of the line-table row after the function's first, the
// first address where the arguments are in their stack slots at -O0.
Dwarf_Addr after_prologue(Dwarf_Die* function, Dwarf_Die* unit, Dwarf_Addr entry);

// perf's die_find_variable_at: the first parameter or variable of that name, in DIE order,
// in the scopes under `root` that hold `address`.
bool find_variable(Dwarf_Die* root, const std::string& name, Dwarf_Addr address, Dwarf_Die& found);

// perf's die_find_realfunc: the function (not an inlined copy) whose code holds `address`.
bool function_holding(Dwarf_Die* unit, Dwarf_Addr address, Dwarf_Die& found);

// A value as the kernel fetches it: `base` (a register, "@symbol" or "\immediate") read through
// `dereferences`, innermost first ("+0(+16(-64(%bp)))": -64, then 16, then 0).
struct Fetch {
  std::string base;
  std::vector<std::int64_t> dereferences;
  bool symbol = false;
};

enum class LocationResult { found, not_found, unsupported, unknown_register };

class ProbeDwarf {
 public:
  // Throws std::runtime_error when `binary` cannot be read, is not x86-64 code or has no DWARF.
  explicit ProbeDwarf(const std::string& binary);
  ~ProbeDwarf();
  ProbeDwarf(const ProbeDwarf&) = delete;
  ProbeDwarf& operator=(const ProbeDwarf&) = delete;

  // The out-of-line definition of `function` and its unit; false when the DWARF has none.
  bool find_function(const std::string& function, Dwarf_Die& found, Dwarf_Die& unit);

  // The frame base of `function` at `address`: its DW_AT_frame_base, the call frame's CFA
  // (from .eh_frame, else .debug_frame) where it is DW_OP_call_frame_cfa.
  void set_frame_base(Dwarf_Die* function, Dwarf_Addr address);

  // perf's convert_variable_location: where `variable` is at `address`.
  LocationResult locate(Dwarf_Die* variable, Dwarf_Die* function, Dwarf_Addr address, Fetch& fetch,
                        unsigned& register_number);

  // perf's convert_variable_fields: `fetch` and `holder` (the DIE whose type is the value's)
  // moved along the fields.
  void follow_fields(const ProbeArgument& argument, Fetch& fetch, Dwarf_Die& holder);

  // perf's convert_variable_type: the fetch type, which for a string on a pointer adds the
  // dereference of the pointer.
  std::string fetch_type(Dwarf_Die* holder, const std::string& cast, Fetch& fetch, bool hex_types,
                         std::string& notice);

  // The loaded address of a file offset: through the section that holds it.
  std::optional<Dwarf_Addr> address_of_offset(std::uint64_t offset) const;

  // The file offset of a loaded address: through the section that holds it.
  std::uint64_t file_offset(Dwarf_Addr address) const;

  Dwarf* dwarf() const noexcept { return dwarf_; }

 private:
  // The first section with file bytes that is loaded and that `holds` accepts.
  std::optional<GElf_Shdr> loaded_section(const std::function<bool(const GElf_Shdr&)>& holds) const;

  static Dwarf* open_dwarf(const ElfImage& image);

  // perf's die_find_member, anonymous structures and unions searched through: the member and
  // its offset in `type`.
  static bool find_member(Dwarf_Die& type, const std::string& name, Dwarf_Die& member,
                          std::int64_t& offset);

  static bool member_offset(Dwarf_Die* member, std::int64_t& offset);

  struct FreeFrame {
    void operator()(Dwarf_Frame* frame) const { std::free(frame); }
  };

  std::string binary_;
  std::optional<ElfImage> image_, debug_image_;
  Dwarf* dwarf_ = nullptr;
  Dwarf_CFI* cfi_ = nullptr;
  Dwarf_CFI* elf_cfi_ = nullptr;
  Dwarf_Op* frame_base_ = nullptr;
  std::size_t frame_base_count_ = 0;
  std::unique_ptr<Dwarf_Frame, FreeFrame> frame_;
};

}  // namespace perfscope
