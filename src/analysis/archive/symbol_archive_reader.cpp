// Unpacks a symbol archive (ours or perf archive's) into a private directory, refusing members
// whose names would leave it. Links are not recreated: the SymbolFileLocator finds members by
// their recorded paths, so no write ever follows a link the archive chose.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include "perfscope/analysis/archive/symbol_archive.hpp"

namespace perfscope {

namespace {

struct ReadDeleter {
  void operator()(struct archive* a) const noexcept { archive_read_free(a); }
};

// The member's name relative to the directory, "" for the directory itself. Throws for names
// that are absolute or climb out with "..".
std::string safe_member_name(const std::string& archive_path, const char* raw) {
  if (!raw) {
    throw SymbolArchiveError(fmt::format(
        "{}: a member has no name it can be read by: refusing the archive", archive_path));
  }
  std::string_view name(raw);
  auto refuse = [&](std::string_view why) {
    return SymbolArchiveError(fmt::format(
        "{}: member '{}' {}: refusing the archive (it would write outside the directory it is "
        "unpacked into; archives from perfscope archive and perf archive never do)",
        archive_path, name, why));
  };
  if (!name.empty() && name.front() == '/') throw refuse("has an absolute path");
  std::string out;
  std::size_t at = 0;
  while (at <= name.size()) {
    std::size_t slash = name.find('/', at);
    if (slash == std::string_view::npos) slash = name.size();
    std::string_view part = name.substr(at, slash - at);
    at = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") throw refuse("climbs out with '..'");
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

// Creates each directory of `relative` under `root` (0700); an existing one must be a real
// directory (nothing here creates links, so it always is unless the file system changed).
void make_directories(const std::string& root, const std::string& relative,
                      const std::string& archive_path) {
  std::size_t at = 0;
  while (at < relative.size()) {
    std::size_t slash = relative.find('/', at);
    if (slash == std::string::npos) slash = relative.size();
    std::string path = root + "/" + relative.substr(0, slash);
    at = slash + 1;
    if (::mkdir(path.c_str(), 0700) == 0) continue;
    struct stat st;
    if (errno != EEXIST || ::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw SymbolArchiveError(fmt::format("{}: cannot create {}: {}", archive_path, path,
                                           std::strerror(errno == EEXIST ? ENOTDIR : errno)));
    }
  }
}

std::string temporary_root() {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  std::string pattern = base + "/perfscope-archive-XXXXXX";
  if (!::mkdtemp(pattern.data())) {
    throw SymbolArchiveError(fmt::format("cannot create a private directory {} to unpack into: {}",
                                         pattern, std::strerror(errno)));
  }
  return pattern;
}

}  // namespace

ExtractedSymbolArchive::ExtractedSymbolArchive(ExtractedSymbolArchive&& other) noexcept
    : directory_(std::move(other.directory_)),
      summary_(other.summary_),
      reaper_pipe_(other.reaper_pipe_),
      reaper_(other.reaper_) {
  other.directory_.clear();
  other.reaper_pipe_ = -1;
  other.reaper_ = -1;
}

ExtractedSymbolArchive& ExtractedSymbolArchive::operator=(ExtractedSymbolArchive&& other) noexcept {
  if (this != &other) {
    release();
    directory_ = std::move(other.directory_);
    summary_ = other.summary_;
    reaper_pipe_ = other.reaper_pipe_;
    reaper_ = other.reaper_;
    other.directory_.clear();
    other.reaper_pipe_ = -1;
    other.reaper_ = -1;
  }
  return *this;
}

ExtractedSymbolArchive::~ExtractedSymbolArchive() { release(); }

void ExtractedSymbolArchive::release() noexcept {
  // remove_all never follows links; and none were made.
  std::error_code ignored;
  if (!directory_.empty()) std::filesystem::remove_all(directory_, ignored);
  directory_.clear();
  if (reaper_ > 0) {
    ::kill(reaper_, SIGKILL);  // its work is done
    while (::waitpid(reaper_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (reaper_pipe_ >= 0) ::close(reaper_pipe_);
  reaper_ = -1;
  reaper_pipe_ = -1;
}

void ExtractedSymbolArchive::start_reaper() noexcept {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;  // then only the destructor removes it
  // Everything the child needs is ready before fork: it only makes async-signal-safe calls.
  const char* argv[] = {"rm", "-rf", "--", directory_.c_str(), nullptr};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();  // Ctrl-C and a terminal hang-up reach the process group it leaves
    ::signal(SIGPIPE, SIG_IGN);
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    ::close(fds[1]);
    char byte;
    while (::read(fds[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::execv("/bin/rm", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(fds[0]);
  if (pid < 0) {
    ::close(fds[1]);
    return;
  }
  reaper_ = pid;
  reaper_pipe_ = fds[1];
}

ExtractedSymbolArchive ExtractedSymbolArchive::extract(const std::string& archive_path,
                                                       const SymbolArchiveLimits& limits) {
  auto start = std::chrono::steady_clock::now();
  struct stat st;
  if (::stat(archive_path.c_str(), &st) != 0) {
    throw SymbolArchiveError(
        fmt::format("cannot open {}: {} (make one with `perfscope archive -i perf.data`)",
                    archive_path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    throw SymbolArchiveError(fmt::format("{} is not a regular file", archive_path));
  }
  ExtractedSymbolArchive out;
  out.directory_ = temporary_root();  // removed by `out`'s destructor if this throws
  out.start_reaper();

  std::unique_ptr<struct archive, ReadDeleter> a(archive_read_new());
  if (!a) throw SymbolArchiveError("libarchive: out of memory");
  // The compressions perf archive and perfscope archive write, and the usual others.
  archive_read_support_filter_zstd(a.get());
  archive_read_support_filter_bzip2(a.get());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_xz(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK) {
    const char* text = archive_error_string(a.get());
    throw SymbolArchiveError(
        fmt::format("{}: not a tar archive compressed with zstd, bzip2, gzip or xz ({})",
                    archive_path, text ? text : "unknown format"));
  }
  std::uint64_t members = 0;
  std::array<char, 1 << 16> buffer;
  for (;;) {
    archive_entry* entry = nullptr;
    int status = archive_read_next_header(a.get(), &entry);
    if (status == ARCHIVE_EOF) break;
    if (status < ARCHIVE_WARN) {
      const char* text = archive_error_string(a.get());
      throw SymbolArchiveError(fmt::format("{}: damaged after {} members: {}", archive_path,
                                           members, text ? text : "unreadable header"));
    }
    if (++members > limits.max_members) {
      throw SymbolArchiveError(
          fmt::format("{}: more than {} members: refusing it (a symbol "
                      "archive of one recording has a few hundred at most)",
                      archive_path, limits.max_members));
    }
    std::string name = safe_member_name(archive_path, archive_entry_pathname(entry));
    auto type = archive_entry_filetype(entry);
    if (type == AE_IFLNK) {
      ++out.summary_.links;
      continue;
    }
    if (name.empty()) continue;
    if (type == AE_IFDIR) {
      make_directories(out.directory_, name, archive_path);
      continue;
    }
    if (type != AE_IFREG || archive_entry_hardlink(entry) != nullptr) {
      ++out.summary_.skipped;
      continue;
    }
    auto declared = static_cast<std::uint64_t>(std::max<la_int64_t>(archive_entry_size(entry), 0));
    if (declared > limits.max_bytes - out.summary_.bytes) {
      throw SymbolArchiveError(
          fmt::format("{}: member '{}' would make it unpack to more than {} bytes: refusing it",
                      archive_path, name, limits.max_bytes));
    }
    std::size_t slash = name.rfind('/');
    if (slash != std::string::npos)
      make_directories(out.directory_, name.substr(0, slash), archive_path);
    std::string path = out.directory_ + "/" + name;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      throw SymbolArchiveError(fmt::format("{}: cannot unpack '{}' to {}: {}", archive_path, name,
                                           path, std::strerror(errno)));
    }
    std::uint64_t written = 0;
    for (;;) {
      la_ssize_t got = archive_read_data(a.get(), buffer.data(), buffer.size());
      if (got == 0) break;
      if (got < 0) {
        ::close(fd);
        const char* text = archive_error_string(a.get());
        throw SymbolArchiveError(fmt::format("{}: member '{}' is damaged: {}", archive_path, name,
                                             text ? text : "unreadable data"));
      }
      written += static_cast<std::uint64_t>(got);
      if (written > declared || written > limits.max_bytes - out.summary_.bytes) {
        ::close(fd);
        throw SymbolArchiveError(
            fmt::format("{}: member '{}' holds more than its header says: refusing the archive",
                        archive_path, name));
      }
      const char* at = buffer.data();
      for (auto left = static_cast<std::size_t>(got); left > 0;) {
        ssize_t put = ::write(fd, at, left);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) {
          int error = errno;
          ::close(fd);
          throw SymbolArchiveError(fmt::format("{}: cannot unpack '{}' to {}: {}", archive_path,
                                               name, path, std::strerror(error)));
        }
        at += put;
        left -= static_cast<std::size_t>(put);
      }
    }
    ::close(fd);
    out.summary_.bytes += written;
    ++out.summary_.files;
  }
  out.summary_.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace perfscope
