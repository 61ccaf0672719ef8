// The kernel's symbols from a vmlinux image (perf's -k/--vmlinux, and the vmlinux files perf looks
// for by itself), as KernelSymbols holds them: the text symbols of its symbol table, moved to
// where the recording's kernel had them (KASLR), so that they answer the same questions as
// kallsyms does.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analysis/symbols/kernel_symbols.hpp"

namespace perfscope {

struct VmlinuxSymbols {
  KernelSymbols symbols;
  std::vector<std::uint8_t> build_id;  // the image's own; empty when it has none
  std::string problem;                 // why no symbols could be read; empty when read
};

// Reads the text symbols of the vmlinux image at `path`. `reference_address`, when not 0, is
// where the recording's kernel had _text (the pgoff of its kernel MMAP record): the symbols are
// moved by the distance between it and the image's _text (or _stext), as perf relocates them.
VmlinuxSymbols read_vmlinux_symbols(const std::string& path, std::uint64_t reference_address);

// The files perf looks for a vmlinux in, for a kernel of release `release` ("6.1.0-13-amd64";
// empty: the paths without a release), in perf's order.
std::vector<std::string> vmlinux_search_paths(const std::string& release);

}  // namespace perfscope
