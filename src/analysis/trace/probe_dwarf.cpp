#include "analysis/trace/probe_dwarf.hpp"

#include <fmt/format.h>

#include <array>
#include <stdexcept>

#include "analysis/symbols/debug_file_locator.hpp"

namespace perfscope {

namespace {

// The kernel fetches at most 64 bits of a basic type (perf's MAX_BASIC_TYPE_BITS).
constexpr int widest_fetch_bits = 64;

bool has_attribute(Dwarf_Die* die, unsigned attribute) {
  Dwarf_Attribute holder;
  return dwarf_attr_integrate(die, attribute, &holder) != nullptr;
}

// The type a DIE's DW_AT_type names; false when it names none (void).
bool type_of(Dwarf_Die* die, Dwarf_Die& type) {
  Dwarf_Attribute attribute;
  return dwarf_attr_integrate(die, DW_AT_type, &attribute) != nullptr &&
         dwarf_formref_die(&attribute, &type) != nullptr;
}

bool is_signed(Dwarf_Die* type) {
  Dwarf_Attribute attribute;
  Dwarf_Word encoding = 0;
  if (dwarf_attr(type, DW_AT_encoding, &attribute) == nullptr ||
      dwarf_formudata(&attribute, &encoding) != 0) {
    return false;
  }
  return encoding == DW_ATE_signed || encoding == DW_ATE_signed_char ||
         encoding == DW_ATE_signed_fixed;
}

// x86-64's DWARF register numbers as the kernel's fetch arguments name them.
constexpr std::array<const char*, 16> x86_64_registers{
    "%ax", "%dx", "%cx",  "%bx",  "%si",  "%di",  "%bp",  "%sp",
    "%r8", "%r9", "%r10", "%r11", "%r12", "%r13", "%r14", "%r15"};

}  // namespace

void fail_probe(const std::string& message) { throw std::runtime_error(message); }

std::string name_of(Dwarf_Die* die) {
  const char* name = dwarf_diename(die);
  return name != nullptr ? name : "(null)";
}

// perf's die_get_real_type: the type without typedefs and qualifiers.
bool real_type_of(Dwarf_Die* die, Dwarf_Die& type) {
  if (!type_of(die, type)) return false;
  for (;;) {
    int tag = dwarf_tag(&type);
    if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
        tag != DW_TAG_restrict_type && tag != DW_TAG_shared_type && tag != DW_TAG_atomic_type) {
      return true;
    }
    Dwarf_Die next;
    if (!type_of(&type, next)) return false;
    type = next;
  }
}

// perf's die_is_optimized_target: a unit whose variables have location lists was optimized.
bool has_location_lists(Dwarf_Die* die) {
  Dwarf_Attribute attribute;
  if (dwarf_attr(die, DW_AT_location, &attribute) != nullptr) {
    unsigned form = dwarf_whatform(&attribute);
    if (form == DW_FORM_sec_offset || form == DW_FORM_loclistx) return true;
  }
  Dwarf_Die child;
  if (dwarf_child(die, &child) != 0) return false;
  do {
    if (has_location_lists(&child)) return true;
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

// perf's die_skip_prologue: the address of the line-table row after the function's first, the
// first address where the arguments are in their stack slots at -O0.
Dwarf_Addr after_prologue(Dwarf_Die* function, Dwarf_Die* unit, Dwarf_Addr entry) {
  Dwarf_Addr high = 0;
  Dwarf_Lines* lines = nullptr;
  std::size_t count = 0;
  if (dwarf_highpc(function, &high) != 0 || dwarf_getsrclines(unit, &lines, &count) != 0 ||
      count == 0) {
    return entry;
  }
  auto address_of = [&](std::size_t i) {
    Dwarf_Addr address = 0;
    dwarf_lineaddr(dwarf_onesrcline(lines, i), &address);
    return address;
  };
  auto line_of = [&](std::size_t i) {
    int line = 0;
    dwarf_lineno(dwarf_onesrcline(lines, i), &line);
    return line;
  };
  std::size_t first = 0;
  while (first < count && address_of(first) != entry) ++first;
  if (first == count) return entry;
  std::size_t i = first;
  for (; i < count; ++i) {
    bool prologue_end = false;
    dwarf_lineprologueend(dwarf_onesrcline(lines, i), &prologue_end);
    if (address_of(i) >= high || prologue_end || line_of(i) != line_of(first) || i != first) {
      break;
    }
  }
  if (i == count) --i;
  Dwarf_Addr after = address_of(i);
  if (after >= high && i > 0) after = address_of(i - 1);
  return after;
}

// perf's die_find_variable_at: the first parameter or variable of that name, in DIE order,
// in the scopes under `root` that hold `address`.
bool find_variable(Dwarf_Die* root, const std::string& name, Dwarf_Addr address, Dwarf_Die& found) {
  Dwarf_Die child;
  if (dwarf_child(root, &child) != 0) return false;
  do {
    int tag = dwarf_tag(&child);
    const char* child_name = dwarf_diename(&child);
    if ((tag == DW_TAG_formal_parameter || tag == DW_TAG_variable) && child_name != nullptr &&
        name == child_name &&
        (has_attribute(&child, DW_AT_external) || has_attribute(&child, DW_AT_location) ||
         has_attribute(&child, DW_AT_const_value))) {
      found = child;
      return true;
    }
    if (dwarf_haspc(&child, address) == 1 && find_variable(&child, name, address, found)) {
      return true;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

// perf's die_find_realfunc: the function (not an inlined copy) whose code holds `address`.
bool function_holding(Dwarf_Die* unit, Dwarf_Addr address, Dwarf_Die& found) {
  struct Search {
    Dwarf_Addr address;
    Dwarf_Die* found;
    bool any = false;
  } search{address, &found};
  dwarf_getfuncs(
      unit,
      [](Dwarf_Die* candidate, void* argument) -> int {
        auto& state = *static_cast<Search*>(argument);
        if (dwarf_haspc(candidate, state.address) != 1) return DWARF_CB_OK;
        *state.found = *candidate;
        state.any = true;
        return DWARF_CB_ABORT;
      },
      &search, 0);
  return search.any;
}

ProbeDwarf::ProbeDwarf(const std::string& binary) : binary_(binary) {
  std::string error;
  image_ = ElfImage::open(binary, error);
  if (!image_) fail_probe(fmt::format("cannot read {}: {}", binary, error));
  if (image_->machine() != EM_X86_64) {
    fail_probe(
        fmt::format("{}: arguments by name are fetched from x86-64 code only (give raw "
                    "arguments: %REG, +OFFSET(%REG))",
                    binary));
  }
  dwarf_ = open_dwarf(*image_);
  if (dwarf_ == nullptr) {
    DebugFileSearch search = find_debug_file(*image_, binary, "/usr/lib/debug");
    if (search.path) {
      debug_image_ = ElfImage::open(*search.path, error);
      if (debug_image_) dwarf_ = open_dwarf(*debug_image_);
    }
  }
  if (dwarf_ == nullptr) {
    fail_probe(fmt::format(
        "{} has no DWARF debug information, which arguments by name are read from: build it "
        "with -g or install its debug package (raw arguments such as %di or +8(%sp) need "
        "none)",
        binary));
  }
  // .eh_frame's is ours to end; .debug_frame's belongs to the Dwarf.
  elf_cfi_ = dwarf_getcfi_elf(image_->elf());
  cfi_ = elf_cfi_ != nullptr ? elf_cfi_ : dwarf_getcfi(dwarf_);
}

ProbeDwarf::~ProbeDwarf() {
  if (elf_cfi_ != nullptr) dwarf_cfi_end(elf_cfi_);
  if (dwarf_ != nullptr) dwarf_end(dwarf_);
}

// The out-of-line definition of `function` and its unit; false when the DWARF has none.
bool ProbeDwarf::find_function(const std::string& function, Dwarf_Die& found, Dwarf_Die& unit) {
  struct Search {
    const std::string* name;
    Dwarf_Die* found;
    bool any = false;
  } search{&function, &found};
  Dwarf_Off offset = 0, next = 0;
  std::size_t header_size = 0;
  while (dwarf_nextcu(dwarf_, offset, &next, &header_size, nullptr, nullptr, nullptr) == 0) {
    if (dwarf_offdie(dwarf_, offset + header_size, &unit) != nullptr) {
      dwarf_getfuncs(
          &unit,
          [](Dwarf_Die* candidate, void* argument) -> int {
            auto& state = *static_cast<Search*>(argument);
            const char* name = dwarf_diename(candidate);
            Dwarf_Addr entry = 0;
            if (name == nullptr || *state.name != name || dwarf_entrypc(candidate, &entry) != 0) {
              return DWARF_CB_OK;
            }
            *state.found = *candidate;
            state.any = true;
            return DWARF_CB_ABORT;
          },
          &search, 0);
      if (search.any) return true;
    }
    offset = next;
  }
  return false;
}

void ProbeDwarf::set_frame_base(Dwarf_Die* function, Dwarf_Addr address) {
  frame_base_ = nullptr;
  frame_base_count_ = 0;
  Dwarf_Attribute attribute;
  if (dwarf_attr(function, DW_AT_frame_base, &attribute) == nullptr ||
      dwarf_getlocation_addr(&attribute, address, &frame_base_, &frame_base_count_, 1) <= 0 ||
      frame_base_count_ == 0) {
    frame_base_ = nullptr;
    return;
  }
  if (frame_base_count_ == 1 && frame_base_[0].atom == DW_OP_call_frame_cfa) {
    Dwarf_Frame* frame = nullptr;
    if (cfi_ == nullptr || dwarf_cfi_addrframe(cfi_, address, &frame) != 0 ||
        dwarf_frame_cfa(frame, &frame_base_, &frame_base_count_) != 0) {
      std::free(frame);
      fail_probe(fmt::format("Failed to get call frame on {:#x}", address));
    }
    frame_.reset(frame);
  }
}

LocationResult ProbeDwarf::locate(Dwarf_Die* variable, Dwarf_Die* function, Dwarf_Addr address,
                                  Fetch& fetch, unsigned& register_number) {
  fetch = Fetch{};
  Dwarf_Attribute attribute;
  if (dwarf_attr(variable, DW_AT_external, &attribute) != nullptr) {
    fetch.base = "@" + name_of(variable);
    fetch.dereferences.push_back(0);
    fetch.symbol = true;
    return LocationResult::found;
  }
  if (dwarf_attr(variable, DW_AT_const_value, &attribute) != nullptr) {
    Dwarf_Sword value = 0;
    dwarf_formsdata(&attribute, &value);
    fetch.base = fmt::format("\\{}", static_cast<long>(value));
    return LocationResult::found;
  }
  if (dwarf_attr(variable, DW_AT_location, &attribute) == nullptr) {
    return LocationResult::not_found;
  }
  Dwarf_Op* ops = nullptr;
  std::size_t count = 0;
  if (dwarf_getlocation_addr(&attribute, address, &ops, &count, 1) <= 0) {
    // A parameter at the function's entry, where an mcount call can come first: its location
    // at the earliest address that has one.
    Dwarf_Addr entry = 0, high = 0;
    if (dwarf_entrypc(function, &entry) != 0 || address != entry ||
        dwarf_tag(variable) != DW_TAG_formal_parameter || dwarf_highpc(function, &high) != 0) {
      return LocationResult::not_found;
    }
    bool any = false;
    for (Dwarf_Addr later = address + 1; later <= high && !any; ++later) {
      any = dwarf_getlocation_addr(&attribute, later, &ops, &count, 1) > 0;
    }
    if (!any) return LocationResult::not_found;
  }
  if (count == 0) return LocationResult::not_found;
  const Dwarf_Op* op = &ops[0];
  if (op->atom == DW_OP_addr) {
    fetch.base = "@" + name_of(variable);
    fetch.dereferences.push_back(0);
    fetch.symbol = true;
    return LocationResult::found;
  }
  std::int64_t offset = 0;
  bool dereference = false;
  if (op->atom == DW_OP_fbreg) {
    if (frame_base_ == nullptr) return LocationResult::unsupported;
    dereference = true;
    offset = static_cast<std::int64_t>(op->number);
    op = &frame_base_[0];
  }
  if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
    register_number = op->atom - DW_OP_breg0;
    offset += static_cast<std::int64_t>(op->number);
    dereference = true;
  } else if (op->atom >= DW_OP_reg0 && op->atom <= DW_OP_reg31) {
    register_number = op->atom - DW_OP_reg0;
  } else if (op->atom == DW_OP_bregx) {
    register_number = static_cast<unsigned>(op->number);
    offset += static_cast<std::int64_t>(op->number2);
    dereference = true;
  } else if (op->atom == DW_OP_regx) {
    register_number = static_cast<unsigned>(op->number);
  } else {
    return LocationResult::unsupported;
  }
  if (register_number >= x86_64_registers.size()) return LocationResult::unknown_register;
  fetch.base = x86_64_registers[register_number];
  if (dereference) fetch.dereferences.push_back(offset);
  return LocationResult::found;
}

void ProbeDwarf::follow_fields(const ProbeArgument& argument, Fetch& fetch, Dwarf_Die& holder) {
  std::string owner = argument.variable;
  for (const ProbeArgument::Field& field : argument.fields) {
    Dwarf_Die type;
    if (!real_type_of(&holder, type))
      fail_probe(fmt::format("Failed to get the type of {}.", owner));
    int tag = dwarf_tag(&type);
    if (field.index && (tag == DW_TAG_array_type || tag == DW_TAG_pointer_type)) {
      Dwarf_Die element;
      if (!real_type_of(&type, element)) {
        fail_probe(fmt::format("Failed to get the type of {}.", owner));
      }
      if (tag == DW_TAG_pointer_type) fetch.dereferences.push_back(0);
      if (fetch.dereferences.empty()) fail_probe("Structure on a register is not supported yet.");
      fetch.dereferences.back() += dwarf_bytesize(&element) * field.position;
      holder = type;  // its DW_AT_type is the element's
      owner = field.name;
      continue;
    }
    if (tag == DW_TAG_pointer_type) {
      if (!field.arrow) {
        fail_probe(fmt::format("Semantic error: {} must be referred by '->'", field.name));
      }
      if (!real_type_of(&type, type))
        fail_probe(fmt::format("Failed to get the type of {}.", owner));
      tag = dwarf_tag(&type);
      if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type) {
        fail_probe(fmt::format("{} is not a data structure nor a union.", owner));
      }
      fetch.dereferences.push_back(0);
    } else {
      if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type) {
        fail_probe(fmt::format("{} is not a data structure nor a union.", owner));
      }
      if (field.index)
        fail_probe(fmt::format("Semantic error: {} is not a pointer nor array.", owner));
      if (field.arrow) {
        fail_probe(fmt::format("Semantic error: {} must be referred by '.'", field.name));
      }
      if (fetch.dereferences.empty()) fail_probe("Structure on a register is not supported yet.");
    }
    std::int64_t offset = 0;
    if (!find_member(type, field.name, holder, offset)) {
      fail_probe(fmt::format("{}(type:{}) has no member {}.", owner, name_of(&type), field.name));
    }
    fetch.dereferences.back() += offset;
    owner = field.name;
  }
}

std::string ProbeDwarf::fetch_type(Dwarf_Die* holder, const std::string& cast, Fetch& fetch,
                                   bool hex_types, std::string& notice) {
  if (!cast.empty() && cast != "string" && cast != "ustring" && cast != "x" && cast != "s" &&
      cast != "u") {
    return cast;
  }
  Dwarf_Attribute attribute;
  Dwarf_Word bits = 0;
  if (dwarf_attr(holder, DW_AT_bit_size, &attribute) != nullptr &&
      dwarf_formudata(&attribute, &bits) == 0 && bits > 0) {
    Dwarf_Word bit_offset = 0;
    int total = dwarf_bytesize(holder);
    if (dwarf_attr(holder, DW_AT_bit_offset, &attribute) == nullptr ||
        dwarf_formudata(&attribute, &bit_offset) != 0 || total < 0) {
      fail_probe(fmt::format("Failed to get the offset of {}.", name_of(holder)));
    }
    return fmt::format("b{}@{}/{}", bits, bit_offset, total * 8);
  }
  Dwarf_Die type;
  if (!real_type_of(holder, type)) {
    fail_probe(fmt::format("Failed to get a type information of {}.", name_of(holder)));
  }
  if (cast == "string" || cast == "ustring") {
    int tag = dwarf_tag(&type);
    if (tag != DW_TAG_pointer_type && tag != DW_TAG_array_type) {
      fail_probe(fmt::format("Failed to cast into string: {}({}) is not a pointer nor array.",
                             name_of(holder), name_of(&type)));
    }
    Dwarf_Die element;
    if (!real_type_of(&type, element)) fail_probe("Failed to get a type information.");
    if (tag == DW_TAG_pointer_type) fetch.dereferences.push_back(0);
    std::string element_name = name_of(&element);
    if (element_name != "char" && element_name != "unsigned char") {
      fail_probe(
          fmt::format("Failed to cast into string: {} is not (unsigned) char *.", name_of(holder)));
    }
    return cast;
  }
  char prefix = cast == "u"                ? 'u'
                : cast == "s"              ? 's'
                : cast == "x" && hex_types ? 'x'
                : is_signed(&type)         ? 's'
                : hex_types                ? 'x'
                                           : 'u';
  int size = dwarf_bytesize(&type);
  if (size <= 0) return {};  // no size (an array): the kernel's default
  int width = size * 8;
  if (width > widest_fetch_bits) {
    notice += fmt::format("{} exceeds max-bitwidth. Cut down to {} bits.\n", name_of(&type),
                          widest_fetch_bits);
    width = widest_fetch_bits;
  }
  return fmt::format("{}{}", prefix, width);
}

std::optional<Dwarf_Addr> ProbeDwarf::address_of_offset(std::uint64_t offset) const {
  auto header = loaded_section([&](const GElf_Shdr& section) {
    return offset >= section.sh_offset && offset < section.sh_offset + section.sh_size;
  });
  if (!header) return std::nullopt;
  return offset - header->sh_offset + header->sh_addr;
}

std::uint64_t ProbeDwarf::file_offset(Dwarf_Addr address) const {
  auto header = loaded_section([&](const GElf_Shdr& section) {
    return address >= section.sh_addr && address < section.sh_addr + section.sh_size;
  });
  if (!header) fail_probe(fmt::format("{:#x} is in no section of {}", address, binary_));
  return address - header->sh_addr + header->sh_offset;
}

std::optional<GElf_Shdr> ProbeDwarf::loaded_section(
    const std::function<bool(const GElf_Shdr&)>& holds) const {
  Elf* elf = image_->elf();
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
       section = elf_nextscn(elf, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) != nullptr && (header.sh_flags & SHF_ALLOC) != 0 &&
        header.sh_type != SHT_NOBITS && holds(header)) {
      return header;
    }
  }
  return std::nullopt;
}

Dwarf* ProbeDwarf::open_dwarf(const ElfImage& image) {
  Dwarf* dwarf = dwarf_begin_elf(image.elf(), DWARF_C_READ, nullptr);
  if (dwarf == nullptr) return nullptr;
  Dwarf_Off next = 0;
  std::size_t header_size = 0;
  if (dwarf_nextcu(dwarf, 0, &next, &header_size, nullptr, nullptr, nullptr) != 0) {
    dwarf_end(dwarf);
    return nullptr;
  }
  return dwarf;
}

bool ProbeDwarf::find_member(Dwarf_Die& type, const std::string& name, Dwarf_Die& member,
                             std::int64_t& offset) {
  bool in_union = dwarf_tag(&type) == DW_TAG_union_type;
  Dwarf_Die child;
  if (dwarf_child(&type, &child) != 0) return false;
  do {
    if (dwarf_tag(&child) != DW_TAG_member) continue;
    const char* child_name = dwarf_diename(&child);
    std::int64_t here = 0;
    if (!in_union && !member_offset(&child, here)) {
      if (child_name != nullptr && name == child_name) {
        fail_probe(fmt::format("Failed to get the offset of {}.", name));
      }
      continue;
    }
    if (child_name != nullptr) {
      if (name != child_name) continue;
      member = child;
      offset = here;
      return true;
    }
    Dwarf_Die inner;
    std::int64_t inner_offset = 0;
    if (real_type_of(&child, inner) && find_member(inner, name, member, inner_offset)) {
      offset = here + inner_offset;
      return true;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

bool ProbeDwarf::member_offset(Dwarf_Die* member, std::int64_t& offset) {
  Dwarf_Attribute attribute;
  if (dwarf_attr(member, DW_AT_data_member_location, &attribute) == nullptr) return false;
  Dwarf_Word value = 0;
  if (dwarf_formudata(&attribute, &value) == 0) {
    offset = static_cast<std::int64_t>(value);
    return true;
  }
  Dwarf_Op* ops = nullptr;
  std::size_t count = 0;
  if (dwarf_getlocation(&attribute, &ops, &count) == 0 && count == 1 &&
      ops[0].atom == DW_OP_plus_uconst) {
    offset = static_cast<std::int64_t>(ops[0].number);
    return true;
  }
  return false;
}

}  // namespace perfscope
