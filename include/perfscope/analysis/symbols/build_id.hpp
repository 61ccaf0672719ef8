// GNU build ids: of ELF files (their .note.gnu.build-id) and of the running kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope {

// The build id of an ELF file; nullopt when it cannot be read or has none.
std::optional<std::vector<std::uint8_t>> read_build_id(const std::string& path);
// The running kernel's, from /sys/kernel/notes.
std::optional<std::vector<std::uint8_t>> kernel_build_id();
// The NT_GNU_BUILD_ID descriptor in a buffer of ELF notes.
std::optional<std::vector<std::uint8_t>> find_build_id_note(std::span<const std::byte> notes);
// Lowercase hex, as perf and `file` print it.
std::string build_id_hex(std::span<const std::uint8_t> build_id);
// The bytes of a hex build id; empty when `hex` is not an even number of hex digits.
std::vector<std::uint8_t> build_id_from_hex(std::string_view hex);
// A recorded build id as build-id directories spell it (perf's ~/.debug layout), most likely
// first. perf.data keeps ids in 20-byte slots of 24-byte fields, so zeros past the 20th byte are
// padding. Zeros up to it are either the id's own last bytes (a 20-byte SHA-1 id ends in 00 in one
// build of 256) or the padding of a shorter id (16 bytes: MD5, UUID): both spellings are given,
// the slot's first. Empty for an id of zeros alone.
std::vector<std::string> build_id_hex_spellings(std::span<const std::uint8_t> build_id);
// Whether two build ids are the same: one may be the other padded with zeros (perf.data stores
// them in 20-byte slots of 24-byte fields).
bool same_build_id(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) noexcept;

}  // namespace perfscope
