// libFuzzer target: arbitrary bytes as a symbol archive (report --archive FILE). They must be
// refused with a SymbolArchiveError or unpacked inside their private directory, which goes with
// the object; never a crash, a leak or a write elsewhere.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "perfscope/analysis/archive/symbol_archive.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/perfscope-archive-fuzz-" + std::to_string(::getpid());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  bool written = size == 0 || ::write(fd, data, size) == static_cast<ssize_t>(size);
  ::close(fd);
  if (written) {
    perfscope::SymbolArchiveLimits limits;
    limits.max_bytes = 1 << 20;
    limits.max_members = 1000;
    try {
      perfscope::ExtractedSymbolArchive::extract(path, limits);
    } catch (const perfscope::SymbolArchiveError&) {
    }
  }
  ::unlink(path.c_str());
  return 0;
}
