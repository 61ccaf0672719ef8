#include "perfscope/analysis/symbols/kernel_symbol_lookup.hpp"

#include <stdexcept>

#include "kernel_symbols.hpp"

namespace perfscope {

std::optional<KernelSymbolRange> find_kernel_symbol(std::string_view kallsyms,
                                                    std::string_view name) {
  KernelSymbols symbols;
  symbols.parse(kallsyms);
  if (symbols.addresses_hidden()) {
    throw std::runtime_error(
        "the kernel's symbol addresses read 0 (kernel.kptr_restrict hides them): run as root, or "
        "set it to 0 with 'sysctl kernel.kptr_restrict=0'");
  }
  KernelSymbols::Hit hit;
  if (!symbols.find_by_name(name, hit)) return std::nullopt;
  return KernelSymbolRange{std::string(hit.name), std::string(hit.dso), hit.start, hit.end};
}

}  // namespace perfscope
