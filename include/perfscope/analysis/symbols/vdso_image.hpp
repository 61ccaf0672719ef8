// The vDSO: the kernel's small shared object mapped into every process as "[vdso]". It has no
// file, so a recording carries a copy (perfscope's embedded-files feature) and reports name its
// code from that copy, or from this process's own when the recording was made on this kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope {

inline constexpr std::string_view vdso_mapping_name = "[vdso]";
inline constexpr std::string_view vdso_embedded_kind = "vdso";

// This process's vDSO image (its ELF header through its section headers); empty when the kernel
// maps none.
std::vector<std::byte> this_process_vdso_image();

// This process's vDSO as a recording carries it: kind "vdso", name "[vdso]", its build id.
// Nullopt when there is none.
std::optional<EmbeddedFile> this_process_vdso_file();

// The GNU build id in an ELF image's notes; empty when it has none or is not ELF.
std::vector<std::uint8_t> elf_image_build_id(std::span<const std::byte> image);

}  // namespace perfscope
