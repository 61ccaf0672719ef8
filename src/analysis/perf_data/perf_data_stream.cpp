// Streams and paths that cannot be mapped (see the header).
#include "analysis/perf_data/perf_data_stream.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "perfscope/analysis/perf_data/perf_data_format.hpp"
#include "perfscope/core/error.hpp"

namespace perfscope {

std::vector<std::byte> read_perf_data_stream(std::FILE* file, const std::string& path) {
  std::vector<std::byte> bytes;
  std::size_t used = 0;
  // A regular file is read in one piece: growing by doubling copied and cleared the bytes of a
  // large file several times over.
  std::size_t initial = 1 << 20;
  if (std::fseek(file, 0, SEEK_END) == 0) {  // fails on pipes
    long size = std::ftell(file);
    if (size > 0) initial = static_cast<std::size_t>(size) + 1;  // + 1: sees the end at once
    std::fseek(file, 0, SEEK_SET);
  }
  bytes.resize(initial);
  for (;;) {
    std::size_t got = std::fread(bytes.data() + used, 1, bytes.size() - used, file);
    used += got;
    if (got == 0) break;
    // An endless device (/dev/zero) or any other stream that is no recording: its first eight
    // bytes say so, and reading stops there (parse() says what is wrong).
    if (used >= sizeof(std::uint64_t) && used - got < sizeof(std::uint64_t)) {
      std::uint64_t magic = 0;
      std::memcpy(&magic, bytes.data(), sizeof magic);
      if (magic != perf_data::file_magic && magic != perf_data::file_magic_swapped) break;
    }
    if (used == bytes.size()) bytes.resize(bytes.size() * 2);
  }
  if (std::ferror(file)) throw Error(errno, fmt::format("cannot read {}", path));
  bytes.resize(used);
  return bytes;
}

int read_perf_data_path(const std::string& path, std::vector<std::byte>& bytes) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) return -errno;
  bytes = read_perf_data_stream(file.get(), path);
  return 0;
}

void refuse_directory(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    throw Error(EISDIR, fmt::format("cannot read {}: it is a directory", path),
                fmt::format("give the recording in it: -i {}/perf.data", path));
  }
}

}  // namespace perfscope
