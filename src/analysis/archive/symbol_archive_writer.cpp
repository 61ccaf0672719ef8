// Which files a recording's samples reach (plan_symbol_archive) and the tar archive of them
// (write_symbol_archive), through libarchive.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <set>

#include "analysis/symbols/debug_file_locator.hpp"
#include "analysis/symbols/jit_symbol_map.hpp"
#include "analysis/symbols/kernel_symbols.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/archive/symbol_archive.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/elf_image.hpp"
#include "perfscope/analysis/symbols/jitdump.hpp"
#include "perfscope/analysis/symbols/kallsyms_cache.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

std::optional<std::uint64_t> size_of(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_size);
}

class Planner {
 public:
  Planner(const PerfDataReader& reader, const SymbolArchivePlanOptions& options)
      : reader_(reader), options_(options), locator_(options.lookup) {}

  SymbolArchivePlan plan(const Profile& profile) {
    for (const ProfileDso& dso : profile.dsos) {
      if (dso.path == kernel_dso_name) {
        add_kernel(dso);
      } else if (dso.path.empty() || dso.path.front() != '/') {
        continue;  // kernel modules (named by kallsyms), [vdso], //anon without a map
      } else if (is_jit_map_path(dso.path) || is_jitdump_path(dso.path)) {
        add_jit_file(dso.path);
      } else {
        add_elf(dso);
      }
    }
    return std::move(plan_);
  }

 private:
  void missing(const std::string& path, const std::string& build_id, std::string_view reason,
               std::string detail) {
    plan_.missing.push_back(
        MissingSymbolFile{path, build_id, std::string(reason), std::move(detail)});
  }

  void add_file(const std::string& member, const std::string& source,
                const std::string& recorded_path, std::uint64_t size) {
    if (!members_.insert(member).second) return;
    plan_.files.push_back(SymbolArchiveFile{member, source, recorded_path, size, std::nullopt});
  }

  void add_link(const std::string& hex, const std::string& directory) {
    std::string link = fmt::format(".build-id/{}/{}", hex.substr(0, 2), hex.substr(2));
    if (!members_.insert(link).second) return;
    plan_.links.emplace_back(link, "../../" + directory);
  }

  void add_elf(const ProfileDso& dso) {
    std::vector<std::uint8_t> id = build_id_from_hex(dso.build_id);
    if (id.empty()) {
      // Only call chains reach it: the recorder noted no build id. The file as it is now is the
      // best guess, keyed by its own build id (report finds it by path when the recording has
      // none); said, since it may have changed since the recording.
      auto now = read_build_id(dso.path);
      if (!now) {
        missing(dso.path, "", missing_file_no_build_id,
                "the recording has no build id for it and the file has none (or is gone), so "
                "an archive cannot key it");
        return;
      }
      id = *now;
      plan_.notes.push_back(fmt::format(
          "{}: the recording has no build id for it (only call chains reach it), so it is "
          "archived as it is now (build id {})",
          dso.path, build_id_hex(id)));
    }
    const std::string hex_id = build_id_hex(id);
    std::string relative = path_under_root(dso.path);
    if (relative.empty()) {
      missing(dso.path, hex_id, missing_file_not_found,
              "its recorded path is not an absolute path");
      return;
    }
    LocatedFile where = locator_.locate(dso.path, id);
    std::string error;
    auto image = ElfImage::open(where.path, error);
    if (!image) {
      missing(dso.path, hex_id,
              where.rejected.empty() ? missing_file_not_found : missing_file_build_id_mismatch,
              where.rejected.empty() ? error : where.rejected.front());
      return;
    }
    auto actual = image->build_id();
    if (!same_build_id(actual, id)) {
      missing(dso.path, hex_id, missing_file_build_id_mismatch,
              fmt::format("{} has build id {}, the recording {}: it changed since the recording "
                          "(rebuilt or upgraded), so it is not the code that was sampled",
                          where.path,
                          actual.empty() ? std::string("none")
                                         : build_id_hex({actual.begin(), actual.end()}),
                          hex_id));
      return;
    }
    auto size = size_of(where.path);
    if (!size) {
      missing(dso.path, hex_id, missing_file_not_found,
              fmt::format("{} is not a regular file", where.path));
      return;
    }
    std::string hex = build_id_hex(id);
    std::string directory = fmt::format("{}/{}", relative, hex);
    add_file(directory + "/elf", where.path, dso.path, *size);
    add_link(hex, directory);
    std::optional<std::string> debug = locator_.locate_debug(dso.path, id);
    for (const std::string& root : locator_.debug_roots(options_.debug_root)) {
      if (debug) break;
      debug = find_debug_file(*image, where.path, root).path;
    }
    if (debug) {
      if (auto debug_size = size_of(*debug)) {
        add_file(directory + "/debug", *debug, dso.path, *debug_size);
      }
    }
  }

  void add_kernel(const ProfileDso& dso) {
    std::vector<std::uint8_t> id = build_id_from_hex(dso.build_id);
    if (id.empty()) {
      for (const auto& entry : reader_.features().build_ids) {
        if (entry.filename.starts_with(kernel_dso_name)) id = entry.build_id;
      }
    }
    std::vector<std::string> spellings = build_id_hex_spellings(id);
    if (spellings.empty()) {
      missing(std::string(kernel_dso_name), "", missing_file_no_build_id,
              "the recording has no build id for the kernel, so its kallsyms cannot be keyed");
      return;
    }
    // Keyed as perf keys it: the id in its 20-byte slot.
    const std::string& hex = spellings.front();
    id = build_id_from_hex(hex);
    std::string directory = fmt::format("{}/{}", kernel_dso_name, hex);
    std::vector<std::string> candidates = locator_.kallsyms_candidates(id);
    candidates.push_back(kallsyms_cache_path(options_.build_id_cache_dir.empty()
                                                 ? default_build_id_cache_dir()
                                                 : options_.build_id_cache_dir,
                                             id));
    for (const std::string& candidate : candidates) {
      if (auto size = size_of(candidate); size && *size > 0) {
        add_file(directory + "/kallsyms", candidate, std::string(kernel_dso_name), *size);
        add_link(hex, directory);
        return;
      }
    }
    // No copy saved at recording time: the running kernel's, if it is the recorded one (its
    // addresses are those of this boot: right unless the recording is of an earlier boot).
    auto running = kernel_build_id();
    if (running && same_build_id(*running, id)) {
      auto text = sys::read_text_file("/proc/kallsyms");
      std::size_t reference = text ? text->find(" _text\n") : std::string::npos;
      std::size_t line = reference == std::string::npos ? 0 : text->rfind('\n', reference) + 1;
      if (reference != std::string::npos && std::strtoull(text->c_str() + line, nullptr, 16) != 0) {
        std::string member = directory + "/kallsyms";
        if (members_.insert(member).second) {
          auto size = static_cast<std::uint64_t>(text->size());
          plan_.files.push_back(SymbolArchiveFile{
              member, "/proc/kallsyms", std::string(kernel_dso_name), size, std::move(*text)});
        }
        add_link(hex, directory);
        return;
      }
      missing(std::string(kernel_dso_name), hex, missing_file_not_found,
              "no kallsyms copy in the build-id cache, and kptr_restrict hides the addresses "
              "of /proc/kallsyms (run as root)");
      return;
    }
    missing(std::string(kernel_dso_name), hex, missing_file_not_found,
            fmt::format("no kallsyms copy of that kernel in the build-id cache ({}), and the "
                        "running kernel is another one",
                        candidates.back()));
  }

  // A perf map or jitdump: nothing to add when the recording carries its copy (perfscope
  // record's embedded files), else the file as the locator finds it.
  void add_jit_file(const std::string& path) {
    const auto& carried = reader_.features().embedded_files;
    if (std::any_of(carried.begin(), carried.end(), [&](const EmbeddedFile& file) {
          return file.name == path &&
                 (file.kind == perf_map_embedded_kind || file.kind == jitdump_embedded_kind);
        })) {
      return;
    }
    std::string source = locator_.jit_file_path(path);
    std::string relative = path_under_root(path);
    auto size = size_of(source);
    if (!size || relative.empty()) {
      missing(path, "", missing_file_not_found,
              fmt::format("{}: {}", source,
                          relative.empty() ? "not an absolute path" : std::strerror(ENOENT)));
      return;
    }
    add_file(relative, source, path, *size);
  }

  const PerfDataReader& reader_;
  const SymbolArchivePlanOptions& options_;
  SymbolFileLocator locator_;
  SymbolArchivePlan plan_;
  std::set<std::string> members_;
};

struct ArchiveDeleter {
  void operator()(struct archive* a) const noexcept { archive_write_free(a); }
};
struct EntryDeleter {
  void operator()(archive_entry* e) const noexcept { archive_entry_free(e); }
};

void check(struct archive* a, int status, const std::string& what) {
  if (status < ARCHIVE_WARN) {
    const char* text = archive_error_string(a);
    throw SymbolArchiveError(fmt::format("{}: {}", what, text ? text : "libarchive error"));
  }
}

void set_compression(struct archive* a, const std::string& path) {
  auto ends = [&](std::string_view suffix) { return std::string_view(path).ends_with(suffix); };
  int status = ARCHIVE_OK;
  if (ends(".tar.bz2") || ends(".tbz2")) {
    status = archive_write_add_filter_bzip2(a);
  } else if (ends(".tar.gz") || ends(".tgz")) {
    status = archive_write_add_filter_gzip(a);
  } else if (ends(".tar.xz")) {
    status = archive_write_add_filter_xz(a);
  } else if (ends(".tar")) {
    status = archive_write_add_filter_none(a);
  } else {
    status = archive_write_add_filter_zstd(a);
  }
  check(a, status, fmt::format("cannot compress {}", path));
}

void write_member(struct archive* a, const SymbolArchiveFile& file, std::time_t now) {
  std::unique_ptr<archive_entry, EntryDeleter> entry(archive_entry_new());
  archive_entry_set_pathname(entry.get(), file.member.c_str());
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), 0644);
  archive_entry_set_mtime(entry.get(), now, 0);
  if (file.content) {
    archive_entry_set_size(entry.get(), static_cast<la_int64_t>(file.content->size()));
    check(a, archive_write_header(a, entry.get()), fmt::format("cannot add {}", file.member));
    if (archive_write_data(a, file.content->data(), file.content->size()) < 0) {
      check(a, ARCHIVE_FATAL, fmt::format("cannot add {}", file.member));
    }
    return;
  }
  int fd = sys::open_regular_file(file.source);
  if (fd < 0) {
    throw SymbolArchiveError(
        fmt::format("cannot read {}: {}", file.source, std::strerror(fd == -1 ? errno : -fd)));
  }
  struct stat st;
  // The size when it is read: the member holds exactly the bytes read.
  std::uint64_t size = ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : file.size;
  archive_entry_set_size(entry.get(), static_cast<la_int64_t>(size));
  try {
    check(a, archive_write_header(a, entry.get()), fmt::format("cannot add {}", file.member));
    std::array<char, 1 << 16> buffer;
    std::uint64_t left = size;
    while (left > 0) {
      ssize_t got = ::read(fd, buffer.data(), std::min<std::uint64_t>(left, buffer.size()));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        throw SymbolArchiveError(fmt::format("{} shrank while it was archived", file.source));
      }
      if (archive_write_data(a, buffer.data(), static_cast<std::size_t>(got)) < 0) {
        check(a, ARCHIVE_FATAL, fmt::format("cannot add {}", file.member));
      }
      left -= static_cast<std::uint64_t>(got);
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

}  // namespace

SymbolArchivePlan plan_symbol_archive(const PerfDataReader& reader, const Profile& profile,
                                      const SymbolArchivePlanOptions& options) {
  return Planner(reader, options).plan(profile);
}

SymbolArchiveSummary write_symbol_archive(const SymbolArchivePlan& plan, const std::string& path) {
  auto start = std::chrono::steady_clock::now();
  SymbolArchiveSummary summary;
  // A device or FIFO (-o /dev/null, a pipe) is written in place; a file is written beside its
  // path and renamed over it, so that a failed run leaves no half archive.
  const bool in_place = sys::is_special_file(path);
  std::string temporary = in_place ? path : path + ".XXXXXX";
  int fd = in_place ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC) : ::mkstemp(temporary.data());
  if (fd < 0) {
    throw SymbolArchiveError(fmt::format("cannot create {} (in the directory of -o): {}", temporary,
                                         std::strerror(errno)));
  }
  if (!in_place) ::fchmod(fd, 0600);
  try {
    std::unique_ptr<struct archive, ArchiveDeleter> a(archive_write_new());
    if (!a) throw SymbolArchiveError("libarchive: out of memory");
    set_compression(a.get(), path);
    check(a.get(), archive_write_set_format_pax_restricted(a.get()), "cannot write a tar archive");
    check(a.get(), archive_write_open_fd(a.get(), fd), fmt::format("cannot write {}", path));
    std::time_t now = std::time(nullptr);
    for (const auto& [name, target] : plan.links) {
      std::unique_ptr<archive_entry, EntryDeleter> entry(archive_entry_new());
      archive_entry_set_pathname(entry.get(), name.c_str());
      archive_entry_set_filetype(entry.get(), AE_IFLNK);
      archive_entry_set_perm(entry.get(), 0777);
      archive_entry_set_symlink(entry.get(), target.c_str());
      archive_entry_set_mtime(entry.get(), now, 0);
      check(a.get(), archive_write_header(a.get(), entry.get()),
            fmt::format("cannot add {}", name));
      ++summary.links;
    }
    for (const SymbolArchiveFile& file : plan.files) {
      write_member(a.get(), file, now);
      ++summary.files;
      summary.bytes_in += file.content ? file.content->size() : file.size;
    }
    check(a.get(), archive_write_close(a.get()), fmt::format("cannot finish {}", path));
  } catch (...) {
    ::close(fd);
    if (!in_place) ::unlink(temporary.c_str());
    throw;
  }
  int synced = in_place ? 0 : ::fsync(fd);
  int closed = ::close(fd);
  if (synced != 0 || closed != 0 || (!in_place && ::rename(temporary.c_str(), path.c_str()) != 0)) {
    int error = errno;
    if (!in_place) ::unlink(temporary.c_str());
    throw SymbolArchiveError(fmt::format("cannot write {}: {}", path, std::strerror(error)));
  }
  summary.bytes_out = size_of(path).value_or(0);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace perfscope
