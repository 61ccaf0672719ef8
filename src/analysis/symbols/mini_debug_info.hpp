// MiniDebugInfo (Fedora, RHEL, ...): a small ELF file holding the .symtab of the local functions,
// xz-compressed into the stripped file's .gnu_debugdata section. Decoded with liblzma.
#pragma once

#include <optional>
#include <string>

#include "perfscope/analysis/symbols/elf_image.hpp"

namespace perfscope {

// The embedded ELF image; nullopt when `file` has no .gnu_debugdata. `error` says why a present
// section could not be decoded.
std::optional<ElfImage> open_mini_debug_info(const ElfImage& file, std::string& error);

}  // namespace perfscope
