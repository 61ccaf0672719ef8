#include "perfscope/sys/kernel_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace perfscope::sys {

namespace {
std::optional<std::string> read_all(int fd) {
  // Reads straight into the string in 64 KiB steps: /proc/kallsyms is 5 MB, and seq_file
  // files fill whatever a read asks for.
  constexpr std::size_t step = 1 << 16;
  std::string text;
  std::size_t filled = 0;
  // A regular file (a saved kallsyms copy) says its size: one allocation instead of doublings.
  struct stat status {};
  if (::fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && status.st_size > 0) {
    text.resize(static_cast<std::size_t>(status.st_size) + step);
  }
  for (;;) {
    if (text.size() < filled + step) text.resize(std::max(text.size() * 2, filled + step));
    ssize_t n = ::read(fd, text.data() + filled, step);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    filled += static_cast<std::size_t>(n);
  }
  ::close(fd);
  text.resize(filled);
  return text;
}
}  // namespace

std::optional<std::string> read_text_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  return read_all(fd);
}

std::optional<std::string> read_regular_file(const std::string& path) {
  int fd = open_regular_file(path);
  if (fd < 0) {
    errno = -fd;
    return std::nullopt;
  }
  return read_all(fd);
}

std::optional<std::string> read_text_file_head(const std::string& path, std::size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text(max_bytes, '\0');
  std::size_t filled = 0;
  while (filled < max_bytes) {
    ssize_t n = ::read(fd, text.data() + filled, max_bytes - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    filled += static_cast<std::size_t>(n);
  }
  ::close(fd);
  text.resize(filled);
  return text;
}

std::optional<std::int64_t> read_integer_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return std::nullopt;
  const char* begin = text->data();
  const char* end = begin + text->size();
  while (begin < end && (*begin == ' ' || *begin == '\t')) ++begin;
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc{} || ptr == begin) return std::nullopt;
  return value;
}

int write_text_file(const std::string& path, std::string_view text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = ::write(fd, text.data(), text.size());
  int error = n < 0 ? errno : 0;
  ::close(fd);
  return error ? -error : 0;
}

const std::vector<Sysctl>& perf_sysctls() {
  static const std::vector<Sysctl> table = {
      {"perf_event_paranoid",
       "who may measure what: -1 all, 0 no raw tracepoints for users, 1 no kernel-wide CPU events "
       "for users, 2 user-space only for users"},
      {"perf_event_max_sample_rate", "highest sampling frequency in Hz"},
      {"perf_event_max_stack", "deepest callchain a sample may carry"},
      {"perf_event_max_contexts_per_stack", "most context markers in one callchain"},
      {"perf_event_mlock_kb", "ring-buffer memory a user may lock beyond RLIMIT_MEMLOCK, per CPU"},
      {"perf_cpu_time_max_percent", "CPU share the sampling interrupt may use before throttling"},
      {"perf_user_access", "arm64: whether user space may read counters directly"},
      {"kptr_restrict", "whether kernel addresses are shown to users"},
      {"nmi_watchdog", "whether the NMI watchdog holds a hardware counter"},
  };
  return table;
}

std::string sysctl_path(std::string_view name) {
  return std::string("/proc/sys/kernel/").append(name);
}

std::optional<std::int64_t> read_sysctl(std::string_view name) {
  return read_integer_file(sysctl_path(name));
}

int write_sysctl(std::string_view name, std::int64_t value) {
  return write_text_file(sysctl_path(name), std::to_string(value));
}

std::optional<std::int64_t> perf_user_access() { return read_sysctl("perf_user_access"); }

int set_perf_user_access(bool enabled) { return write_sysctl("perf_user_access", enabled ? 1 : 0); }

std::optional<std::int64_t> rdpmc_mode(std::string_view pmu) {
  return read_integer_file(std::string(pmu_devices_dir) + "/" + std::string(pmu) + "/rdpmc");
}

int set_rdpmc_mode(std::int64_t mode, std::string_view pmu) {
  return write_text_file(std::string(pmu_devices_dir) + "/" + std::string(pmu) + "/rdpmc",
                         std::to_string(mode));
}

std::vector<std::string> list_directory(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (!dir) return names;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.' &&
        (entry->d_name[1] == 0 || (entry->d_name[1] == '.' && entry->d_name[2] == 0))) {
      continue;
    }
    names.emplace_back(entry->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

bool path_exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

std::optional<std::string> online_cpu_list() {
  auto text = read_text_file("/sys/devices/system/cpu/online");
  if (!text) return std::nullopt;
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  return text;
}

std::vector<pid_t> list_threads(pid_t pid) {
  std::vector<pid_t> tids;
  for (const auto& name : list_directory("/proc/" + std::to_string(pid) + "/task")) {
    pid_t tid = 0;
    auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), tid);
    if (ec == std::errc{} && ptr == name.data() + name.size()) tids.push_back(tid);
  }
  std::sort(tids.begin(), tids.end());
  return tids;
}

bool process_exists(pid_t pid) {
  struct stat info {};
  return ::stat(("/proc/" + std::to_string(pid)).c_str(), &info) == 0;
}

namespace {

std::optional<std::string> find_mount_of_type(std::string_view type) {
  auto mounts = read_text_file("/proc/self/mounts");
  if (!mounts) return std::nullopt;
  std::istringstream lines(*mounts);
  std::string device, mount_point, fs_type;
  std::string rest;
  while (lines >> device >> mount_point >> fs_type) {
    std::getline(lines, rest);
    if (fs_type == type) return mount_point;
  }
  return std::nullopt;
}

bool has_tracing_events(const std::string& root) {
  struct stat info {};
  return ::stat((root + "/events").c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

}  // namespace

std::optional<std::string> tracefs_root() {
  if (const char* forced = std::getenv("PERFSCOPE_TRACEFS")) return std::string(forced);
  if (auto mounted = find_mount_of_type("tracefs"); mounted && has_tracing_events(*mounted)) {
    return mounted;
  }
  for (const char* candidate : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    if (has_tracing_events(candidate)) return std::string(candidate);
  }
  // Like perf, mount tracefs where the kernel expects it when nobody has (needs privilege).
  if (::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) == 0 &&
      has_tracing_events("/sys/kernel/tracing")) {
    return std::string("/sys/kernel/tracing");
  }
  return std::nullopt;
}

std::optional<std::string> tracefs_mount_point() { return find_mount_of_type("tracefs"); }

std::optional<std::string> cgroup2_root() { return find_mount_of_type("cgroup2"); }

int open_directory(const std::string& path) noexcept {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

bool is_special_file(const std::string& path) noexcept {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode);
}

int create_private_file(const std::string& path) noexcept {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -errno;
  struct stat info {};
  if (::fstat(fd, &info) == 0 && !S_ISREG(info.st_mode)) {
    ::close(fd);
    return 0;
  }
  int result = ::fchmod(fd, 0600) == 0 ? 0 : -errno;
  ::close(fd);
  return result;
}

int create_private_directories(const std::string& path) noexcept {
  std::string partial;
  partial.reserve(path.size());
  for (std::size_t at = 0; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    partial.assign(path, 0, at);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0700) < 0 && errno != EEXIST) return -errno;
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) < 0) return -errno;
  return S_ISDIR(info.st_mode) ? 0 : -ENOTDIR;
}

int replace_private_file(const std::string& path, std::string_view text) noexcept {
  std::string temporary = path + ".XXXXXX";
  int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
  if (fd < 0) return -errno;
  int result = ::fchmod(fd, 0600) == 0 ? 0 : -errno;
  const char* at = text.data();
  std::size_t left = text.size();
  while (result == 0 && left != 0) {
    ssize_t wrote = ::write(fd, at, left);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      result = wrote < 0 ? -errno : -EIO;
      break;
    }
    at += wrote;
    left -= static_cast<std::size_t>(wrote);
  }
  if (::close(fd) < 0 && result == 0) result = -errno;
  if (result == 0 && ::rename(temporary.c_str(), path.c_str()) < 0) result = -errno;
  if (result != 0) ::unlink(temporary.c_str());
  return result;
}

std::optional<std::uint64_t> regular_file_size(const std::string& path) noexcept {
  struct stat info {};
  if (::stat(path.c_str(), &info) < 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  return static_cast<std::uint64_t>(info.st_size);
}

int open_regular_file(const std::string& path) noexcept {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat info {};
  if (::fstat(fd, &info) < 0 || !S_ISREG(info.st_mode)) {
    int errnum = S_ISREG(info.st_mode) ? errno : ENODEV;
    ::close(fd);
    return -errnum;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

namespace {
Limit get_limit(int resource) {
  rlimit limit{};
  ::getrlimit(resource, &limit);
  return {static_cast<std::uint64_t>(limit.rlim_cur), static_cast<std::uint64_t>(limit.rlim_max)};
}
}  // namespace

Limit open_files_limit() { return get_limit(RLIMIT_NOFILE); }
Limit locked_memory_limit() { return get_limit(RLIMIT_MEMLOCK); }

int raise_open_files_limit(std::uint64_t wanted) noexcept {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) < 0) return -errno;
  if (limit.rlim_cur >= wanted) return 0;
  limit.rlim_cur = std::min<rlim_t>(wanted, limit.rlim_max);
  if (::setrlimit(RLIMIT_NOFILE, &limit) < 0) return -errno;
  return limit.rlim_cur >= wanted ? 0 : -EMFILE;
}

std::uint64_t effective_capabilities() {
  auto status = read_text_file("/proc/self/status");
  if (!status) return 0;
  auto at = status->find("CapEff:");
  if (at == std::string::npos) return 0;
  return std::strtoull(status->c_str() + at + 7, nullptr, 16);
}

}  // namespace perfscope::sys
