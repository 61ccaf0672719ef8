#include "perfscope/analysis/symbols/build_id.hpp"

#include <algorithm>
#include <cstring>

#include "perfscope/analysis/symbols/elf_image.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

constexpr std::uint32_t gnu_build_id_type = 3;  // NT_GNU_BUILD_ID

std::size_t align4(std::size_t size) { return (size + 3) & ~std::size_t{3}; }

}  // namespace

std::optional<std::vector<std::uint8_t>> find_build_id_note(std::span<const std::byte> notes) {
  std::size_t at = 0;
  while (notes.size() - at >= 12) {
    std::uint32_t name_size, desc_size, type;
    std::memcpy(&name_size, notes.data() + at, 4);
    std::memcpy(&desc_size, notes.data() + at + 4, 4);
    std::memcpy(&type, notes.data() + at + 8, 4);
    at += 12;
    std::size_t name_span = align4(name_size);
    std::size_t desc_span = align4(desc_size);
    if (name_span > notes.size() - at || desc_span > notes.size() - at - name_span) break;
    const char* name = reinterpret_cast<const char*>(notes.data() + at);
    if (type == gnu_build_id_type && name_size == 4 && std::memcmp(name, "GNU", 4) == 0 &&
        desc_size > 0) {
      const auto* desc = reinterpret_cast<const std::uint8_t*>(notes.data() + at + name_span);
      return std::vector<std::uint8_t>(desc, desc + desc_size);
    }
    at += name_span + desc_span;
  }
  return std::nullopt;
}

std::optional<std::vector<std::uint8_t>> read_build_id(const std::string& path) {
  std::string error;
  auto image = ElfImage::open(path, error);
  if (!image) return std::nullopt;
  auto id = image->build_id();
  if (id.empty()) return std::nullopt;
  return std::vector<std::uint8_t>(id.begin(), id.end());
}

std::optional<std::vector<std::uint8_t>> kernel_build_id() {
  auto notes = sys::read_text_file("/sys/kernel/notes");
  if (!notes) return std::nullopt;
  return find_build_id_note(std::as_bytes(std::span(notes->data(), notes->size())));
}

std::string build_id_hex(std::span<const std::uint8_t> build_id) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (auto byte : build_id) {
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

std::vector<std::uint8_t> build_id_from_hex(std::string_view hex) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::vector<std::uint8_t> bytes;
  if (hex.size() % 2 != 0) return bytes;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int high = digit(hex[i]), low = digit(hex[i + 1]);
    if (high < 0 || low < 0) return {};
    bytes.push_back(static_cast<std::uint8_t>(high * 16 + low));
  }
  return bytes;
}

std::vector<std::string> build_id_hex_spellings(std::span<const std::uint8_t> build_id) {
  constexpr std::size_t slot_size = 20;
  std::span<const std::uint8_t> stripped = build_id;
  while (!stripped.empty() && stripped.back() == 0) stripped = stripped.first(stripped.size() - 1);
  if (stripped.empty()) return {};
  std::span<const std::uint8_t> slot =
      stripped.size() > slot_size ? stripped : build_id.first(std::min(build_id.size(), slot_size));
  std::vector<std::string> spellings{build_id_hex(slot)};
  if (slot.size() != stripped.size()) spellings.push_back(build_id_hex(stripped));
  return spellings;
}

bool same_build_id(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) noexcept {
  if (a.size() > b.size()) std::swap(a, b);
  if (!std::equal(a.begin(), a.end(), b.begin())) return false;
  return std::all_of(b.begin() + static_cast<std::ptrdiff_t>(a.size()), b.end(),
                     [](std::uint8_t byte) { return byte == 0; });
}

}  // namespace perfscope
