// A kernel symbol by name, as perf kallsyms answers: where it starts and ends (the next symbol's
// start, as kallsyms carries no sizes) and the image it is in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace perfscope {

struct KernelSymbolRange {
  std::string name;
  std::string dso;  // "[kernel.kallsyms]", or a module's "[name]"
  std::uint64_t start = 0, end = 0;
};

// Looks `name` up in the kallsyms text `kallsyms`; nothing when no symbol has that name. Throws
// when the addresses read 0 (kptr_restrict hides them from this reader).
std::optional<KernelSymbolRange> find_kernel_symbol(std::string_view kallsyms,
                                                    std::string_view name);

}  // namespace perfscope
