#include "analysis/symbols/mini_debug_info.hpp"

#include <fmt/format.h>
#include <lzma.h>

#include <cstdint>
#include <vector>

namespace perfscope {

namespace {

// Bounds the decoded size: MiniDebugInfo is a symbol table, a few MiB for the largest programs.
constexpr std::uint64_t memory_limit = 512ull << 20;

}  // namespace

std::optional<ElfImage> open_mini_debug_info(const ElfImage& file, std::string& error) {
  Elf_Scn* section = file.section(".gnu_debugdata");
  if (!section) return std::nullopt;
  auto packed = file.section_bytes(section);
  if (packed.empty()) {
    error = ".gnu_debugdata is empty";
    return std::nullopt;
  }
  lzma_stream stream = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&stream, memory_limit, LZMA_CONCATENATED) != LZMA_OK) {
    error = "liblzma cannot start a decoder";
    return std::nullopt;
  }
  std::vector<unsigned char> out(packed.size() * 4 + 4096);
  stream.next_in = reinterpret_cast<const std::uint8_t*>(packed.data());
  stream.avail_in = packed.size();
  stream.next_out = out.data();
  stream.avail_out = out.size();
  lzma_ret status = LZMA_OK;
  while (status == LZMA_OK) {
    if (stream.avail_out == 0) {
      std::size_t used = out.size();
      out.resize(used * 2);
      stream.next_out = out.data() + used;
      stream.avail_out = out.size() - used;
    }
    status = lzma_code(&stream, stream.avail_in == 0 ? LZMA_FINISH : LZMA_RUN);
  }
  std::size_t decoded = static_cast<std::size_t>(stream.total_out);
  lzma_end(&stream);
  if (status != LZMA_STREAM_END) {
    error = fmt::format(".gnu_debugdata does not decode as xz (liblzma error {})",
                        static_cast<int>(status));
    return std::nullopt;
  }
  out.resize(decoded);
  auto image = ElfImage::from_bytes(std::move(out));
  if (!image) error = ".gnu_debugdata does not hold an ELF file";
  return image;
}

}  // namespace perfscope
