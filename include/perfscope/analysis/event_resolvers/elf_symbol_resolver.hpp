// Finds a function's file offset in an ELF file with libelf, for uprobe:/path:symbol events.
#pragma once

#include <string>
#include <string_view>

#include "perfscope/core/event_resolvers.hpp"

namespace perfscope {

class ElfSymbolResolver final : public SymbolOffsetResolver {
 public:
  // Looks in .symtab, then .dynsym, for a defined function or object named `symbol` (a global
  // binding before a local one) and maps its address through the section holding it to a file
  // offset, as the kernel's uprobe wants it.
  SymbolOffset file_offset(const std::string& path, std::string_view symbol) const override;
};

// Makes parse_event_list resolve uprobe symbols with an ElfSymbolResolver.
void install_elf_symbol_resolver();

}  // namespace perfscope
