#include "perfscope/analysis/symbols/kallsyms_cache.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

std::string default_build_id_cache_dir() {
  const char* home = std::getenv("HOME");
  if (!home || *home == '\0') return {};
  return std::string(home) + "/.debug";
}

std::string kallsyms_cache_path(const std::string& cache_dir,
                                std::span<const std::uint8_t> build_id) {
  if (build_id.empty() || cache_dir.empty()) return {};
  std::string hex = build_id_hex(std::vector<std::uint8_t>(build_id.begin(), build_id.end()));
  return fmt::format("{}/.build-id/{}/{}/kallsyms", cache_dir, hex.substr(0, 2), hex.substr(2));
}

KallsymsCacheSave save_kallsyms_copy(const std::string& cache_dir) {
  KallsymsCacheSave save;
  if (cache_dir.empty()) {
    save.problem = "no build-id cache directory (HOME is not set)";
    return save;
  }
  auto build_id = kernel_build_id();
  if (!build_id) {
    save.problem = "cannot read the running kernel's build id from /sys/kernel/notes";
    return save;
  }
  auto text = sys::read_text_file("/proc/kallsyms");
  if (!text) {
    save.problem = fmt::format("cannot read /proc/kallsyms: {}", std::strerror(errno));
    return save;
  }
  // kptr_restrict shows every address as 0 (absolute per-CPU symbols are 0 either way: look at
  // the reference symbol's).
  std::size_t reference = text->find(" _text\n");
  if (reference == std::string::npos) reference = text->find(" _stext\n");
  std::size_t line = reference == std::string::npos ? 0 : text->rfind('\n', reference) + 1;
  if (reference == std::string::npos || std::strtoull(text->c_str() + line, nullptr, 16) == 0) {
    save.problem = "kptr_restrict hides kernel addresses in /proc/kallsyms";
    return save;
  }
  std::string path = kallsyms_cache_path(cache_dir, *build_id);
  std::string link = path.substr(0, path.rfind('/'));
  // perf's layout: the copy in [kernel.kallsyms]/<build id>/, which the .build-id entry links
  // to (an entry that is a directory, as perfscope once made them, is used as it is).
  struct stat entry {};
  if (::lstat(link.c_str(), &entry) != 0) {
    std::string hex = build_id_hex(*build_id);
    std::string directory = fmt::format("{}/[kernel.kallsyms]/{}", cache_dir, hex);
    std::string parent = link.substr(0, link.rfind('/'));
    for (const std::string& needed : {directory, parent}) {
      if (int error = sys::create_private_directories(needed); error < 0) {
        save.problem = fmt::format("cannot create {}: {}", needed, std::strerror(-error));
        return save;
      }
    }
    std::string target = fmt::format("../../[kernel.kallsyms]/{}", hex);
    if (::symlink(target.c_str(), link.c_str()) != 0 && errno != EEXIST) {
      save.problem = fmt::format("cannot link {}: {}", link, std::strerror(errno));
      return save;
    }
  }
  save.path = path;
  // A copy of this boot with the same modules is kept (one of another boot has the same size
  // when the same modules are loaded: KASLR moved the addresses, not their widths).
  if (sys::regular_file_size(path) == text->size()) {
    if (auto existing = sys::read_regular_file(path); existing && *existing == *text) return save;
  }
  if (int error = sys::replace_private_file(path, *text); error < 0) {
    save.problem = fmt::format("cannot write {}: {}", path, std::strerror(-error));
    save.path.clear();
    return save;
  }
  save.written = true;
  return save;
}

}  // namespace perfscope
