// Finds the separate debug file of a stripped ELF file the way gdb does: by its build id under
// the debug root (<root>/.build-id/xx/yyyy.debug), then by its .gnu_debuglink name (next to the
// file, in its .debug/ subdirectory, and under <root>/<its directory>) with the CRC checked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "perfscope/analysis/symbols/elf_image.hpp"

namespace perfscope {

struct DebugFileSearch {
  std::optional<std::string> path;  // the debug file found
  // Candidates passed over, each with why (a .gnu_debuglink CRC that does not match).
  std::vector<std::string> rejected;
};

DebugFileSearch find_debug_file(const ElfImage& file, const std::string& file_path,
                                const std::string& debug_root);

// The .gnu_debuglink CRC (zlib's CRC-32) of a whole file; nullopt when it cannot be read.
std::optional<std::uint32_t> debuglink_crc(const std::string& path);

}  // namespace perfscope
