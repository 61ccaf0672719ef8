#include "analysis/symbols/debug_file_locator.hpp"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <filesystem>
#include <system_error>

#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

bool is_regular_file(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

}  // namespace

std::optional<std::uint32_t> debuglink_crc(const std::string& path) {
  int fd = sys::open_regular_file(path);
  if (fd < 0) return std::nullopt;
  std::array<unsigned char, 1 << 16> buffer;
  uLong crc = crc32(0L, Z_NULL, 0);
  bool ok = true;
  for (;;) {
    ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) ok = false;
    if (got <= 0) break;
    crc = crc32(crc, buffer.data(), static_cast<uInt>(got));
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  return static_cast<std::uint32_t>(crc);
}

DebugFileSearch find_debug_file(const ElfImage& file, const std::string& file_path,
                                const std::string& debug_root) {
  DebugFileSearch search;
  auto id = file.build_id();
  if (id.size() >= 2 && !debug_root.empty()) {
    std::string hex = build_id_hex(std::vector<std::uint8_t>(id.begin(), id.end()));
    std::string candidate =
        fmt::format("{}/.build-id/{}/{}.debug", debug_root, hex.substr(0, 2), hex.substr(2));
    if (is_regular_file(candidate)) {
      search.path = std::move(candidate);
      return search;
    }
  }

  GElf_Word crc = 0;
  const char* link = dwelf_elf_gnu_debuglink(file.elf(), &crc);
  if (!link || link[0] == '\0') return search;
  std::error_code error;
  std::filesystem::path real = std::filesystem::canonical(file_path, error);
  if (error) real = std::filesystem::absolute(file_path, error);
  std::filesystem::path directory = real.parent_path();
  std::vector<std::filesystem::path> candidates = {directory / link, directory / ".debug" / link};
  if (!debug_root.empty()) {
    candidates.push_back(std::filesystem::path(debug_root) / directory.relative_path() / link);
  }
  for (const auto& candidate : candidates) {
    std::string path = candidate.string();
    if (!is_regular_file(path)) continue;
    if (std::filesystem::equivalent(candidate, real, error)) continue;  // the file links itself
    auto actual = debuglink_crc(path);
    if (!actual || *actual != crc) {
      search.rejected.push_back(fmt::format(
          "ignoring {}: its CRC {:08x} differs from the .gnu_debuglink of {} ({:08x}), so it "
          "belongs to another build",
          path, actual.value_or(0), file_path, crc));
      continue;
    }
    search.path = std::move(path);
    return search;
  }
  return search;
}

}  // namespace perfscope
