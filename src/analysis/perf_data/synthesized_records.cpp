#include "perfscope/analysis/perf_data/synthesized_records.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/perf_data_format.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

using abi::RecordType;

class RecordBuilder {
 public:
  RecordBuilder(RecordType type, std::uint16_t misc) {
    abi::RecordHeader header{static_cast<std::uint32_t>(type), misc, 0};
    put(&header, sizeof header);
  }
  void put(const void* data, std::size_t size) {
    // resize + memcpy: g++-12 misreads insert() of a raw range as an overflow.
    std::size_t at = bytes_.size();
    bytes_.resize(at + size);
    if (size != 0) std::memcpy(bytes_.data() + at, data, size);
  }
  template <typename T>
  void value(T number) {
    put(&number, sizeof number);
  }
  // NUL-terminated, padded to 8 bytes.
  void text(std::string_view value) {
    put(value.data(), value.size());
    std::size_t padded = (value.size() + 1 + 7) & ~std::size_t{7};
    bytes_.resize(bytes_.size() + padded - value.size());
  }
  void emit(std::size_t sample_id_size, const RecordSink& sink) {
    bytes_.resize(bytes_.size() + sample_id_size);
    auto size = static_cast<std::uint16_t>(bytes_.size());
    std::memcpy(bytes_.data() + 6, &size, sizeof size);
    sink(bytes_);
  }

 private:
  std::vector<std::byte> bytes_;
};

// Only the end: a comm or a mapped file's name may begin with a space.
std::string without_line_end(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// The kernel's namespace order (NET_NS_INDEX ... CGROUP_NS_INDEX), as perf synthesizes them.
constexpr const char* namespace_names[] = {"net", "uts", "ipc", "pid", "user", "mnt", "cgroup"};

// perf's synthesized NAMESPACES: each namespace's device and inode from /proc/TID/ns/NAME
// (zeros for one that cannot be read, as perf leaves them).
void synthesize_namespaces(pid_t pid, pid_t tid, std::size_t sample_id_size,
                           const RecordSink& sink) {
  RecordBuilder record(RecordType::namespaces, abi::record_misc::user);
  record.value<std::uint32_t>(static_cast<std::uint32_t>(pid));
  record.value<std::uint32_t>(static_cast<std::uint32_t>(tid));
  record.value<std::uint64_t>(std::size(namespace_names));
  for (const char* name : namespace_names) {
    struct stat status {};
    std::string link = "/proc/" + std::to_string(tid) + "/ns/" + name;
    bool known = ::stat(link.c_str(), &status) == 0;
    record.value<std::uint64_t>(known ? static_cast<std::uint64_t>(status.st_dev) : 0);
    record.value<std::uint64_t>(known ? static_cast<std::uint64_t>(status.st_ino) : 0);
  }
  record.emit(sample_id_size, sink);
}

}  // namespace

void synthesize_lost(std::uint64_t id, std::uint64_t lost, std::size_t sample_id_size,
                     const RecordSink& sink) {
  RecordBuilder record(RecordType::lost, 0);
  record.value<std::uint64_t>(id);
  record.value<std::uint64_t>(lost);
  record.emit(sample_id_size, sink);
}

void synthesize_lost_samples(std::uint64_t lost, std::size_t sample_id_size,
                             const RecordSink& sink) {
  RecordBuilder record(RecordType::lost_samples, 0);
  record.value<std::uint64_t>(lost);
  record.emit(sample_id_size, sink);
}

std::string cgroup2_mount() {
  auto mounts = sys::read_text_file("/proc/self/mounts");
  if (!mounts) return {};
  std::istringstream lines(*mounts);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string device, point, type;
    fields >> device >> point >> type;
    if (type == "cgroup2") return point;
  }
  return {};
}

std::size_t synthesize_cgroups(std::size_t sample_id_size, const RecordSink& sink,
                               const std::string& root) {
  // The kernel's cgroup id of a cgroup2 directory is its kernfs node's, which is the inode
  // number the directory shows.
  auto emit = [&](const std::string& path, const std::string& relative) {
    struct stat status {};
    if (::stat(path.c_str(), &status) != 0) return false;
    RecordBuilder record(RecordType::cgroup, 0);
    record.value<std::uint64_t>(static_cast<std::uint64_t>(status.st_ino));
    record.text(relative);
    record.emit(sample_id_size, sink);
    return true;
  };
  std::error_code error;
  if (root.empty() || !std::filesystem::exists(root + "/cgroup.controllers", error)) {
    // No cgroup2 hierarchy mounted: every task is in its root, whose id is 1.
    RecordBuilder record(RecordType::cgroup, 0);
    record.value<std::uint64_t>(1);
    record.text("/");
    record.emit(sample_id_size, sink);
    return 1;
  }
  std::size_t count = emit(root, "/") ? 1 : 0;
  namespace fs = std::filesystem;
  for (fs::recursive_directory_iterator
           it(root, fs::directory_options::skip_permission_denied, error),
       end;
       !error && it != end; it.increment(error)) {
    if (!it->is_directory(error) || it->is_symlink(error)) continue;
    std::string path = it->path().string();
    if (emit(path, path.substr(root.size()))) ++count;
  }
  return count;
}

bool synthesize_kernel_map(std::size_t sample_id_size, const RecordSink& sink) {
  // _text is among the first symbols; the whole file is read only if it is not.
  auto kallsyms = sys::read_text_file_head("/proc/kallsyms", 1 << 20);
  for (int attempt = 0; attempt < 2 && kallsyms; ++attempt) {
    std::istringstream lines(*kallsyms);
    for (std::string line; std::getline(lines, line);) {
      auto end = line.size();
      if (!(line.ends_with(" _text") || line.ends_with(" _stext"))) continue;
      std::uint64_t address = std::strtoull(line.c_str(), nullptr, 16);
      if (address == 0) return false;  // kptr_restrict hides the addresses
      std::string_view symbol(line.data() + line.rfind(' ', end) + 1);
      RecordBuilder record(RecordType::mmap, abi::record_misc::kernel);
      record.value<std::int32_t>(perf_data::host_kernel_pid);
      record.value<std::uint32_t>(0);
      record.value<std::uint64_t>(address);
      record.value<std::uint64_t>(~std::uint64_t{0} - address);
      record.value<std::uint64_t>(address);  // pgoff: the reference symbol's address
      record.text("[kernel.kallsyms]" + std::string(symbol));
      record.emit(sample_id_size, sink);
      return true;
    }
    if (attempt == 0) kallsyms = sys::read_text_file("/proc/kallsyms");
  }
  return false;
}

namespace {

// FORK, NAMESPACES, COMM per thread as perf's full synthesis orders them; `comm_first`: COMM,
// then NAMESPACES, as perf's synthesis of a launched command's thread.
bool synthesize_threads(pid_t pid, std::size_t sample_id_size, const RecordSink& sink,
                        const SynthesisOptions& options, bool comm_first) {
  std::string base = "/proc/" + std::to_string(pid);
  auto threads = sys::list_threads(pid);
  if (threads.empty()) return false;
  for (pid_t tid : threads) {
    auto comm = sys::read_text_file(base + "/task/" + std::to_string(tid) + "/comm");
    if (!comm) continue;
    if (tid != pid) {
      RecordBuilder fork(RecordType::fork, 0);
      fork.value<std::uint32_t>(static_cast<std::uint32_t>(pid));
      fork.value<std::uint32_t>(static_cast<std::uint32_t>(pid));
      fork.value<std::uint32_t>(static_cast<std::uint32_t>(tid));
      fork.value<std::uint32_t>(static_cast<std::uint32_t>(pid));
      fork.value<std::uint64_t>(0);
      fork.emit(sample_id_size, sink);
    }
    if (options.namespaces && !comm_first) synthesize_namespaces(pid, tid, sample_id_size, sink);
    RecordBuilder record(RecordType::comm, 0);
    record.value<std::uint32_t>(static_cast<std::uint32_t>(pid));
    record.value<std::uint32_t>(static_cast<std::uint32_t>(tid));
    record.text(without_line_end(*comm));
    record.emit(sample_id_size, sink);
    if (options.namespaces && comm_first) synthesize_namespaces(pid, tid, sample_id_size, sink);
  }
  return true;
}

}  // namespace

bool synthesize_process_threads(pid_t pid, std::size_t sample_id_size, const RecordSink& sink,
                                const SynthesisOptions& options) {
  return synthesize_threads(pid, sample_id_size, sink, options, true);
}

bool synthesize_process(pid_t pid, std::size_t sample_id_size, const RecordSink& sink,
                        const SynthesisOptions& options) {
  auto maps = sys::read_text_file("/proc/" + std::to_string(pid) + "/maps");
  if (!maps || !synthesize_threads(pid, sample_id_size, sink, options, false)) return false;
  if (!options.mmaps) return true;
  std::istringstream lines(*maps);
  for (std::string line; std::getline(lines, line);) {
    // start-end perms offset maj:min inode [path]
    unsigned long long start = 0, end = 0, offset = 0, inode = 0;
    unsigned major = 0, minor = 0;
    char perms[5] = {};
    int consumed = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &offset,
                    &major, &minor, &inode, &consumed) < 7) {
      continue;
    }
    if (perms[2] != 'x') continue;  // code only, as perf record synthesizes by default
    std::string path =
        consumed > 0 ? without_line_end(line.substr(static_cast<std::size_t>(consumed))) : "";
    if (path.empty()) path = "//anon";
    std::uint32_t prot =
        (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
    std::uint32_t flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
    RecordBuilder record(RecordType::mmap2, abi::record_misc::user);
    record.value<std::uint32_t>(static_cast<std::uint32_t>(pid));
    record.value<std::uint32_t>(static_cast<std::uint32_t>(pid));
    record.value<std::uint64_t>(start);
    record.value<std::uint64_t>(end - start);
    record.value<std::uint64_t>(offset);
    record.value<std::uint32_t>(major);
    record.value<std::uint32_t>(minor);
    record.value<std::uint64_t>(inode);
    record.value<std::uint64_t>(0);  // inode generation: not in /proc
    record.value<std::uint32_t>(prot);
    record.value<std::uint32_t>(flags);
    record.text(path);
    record.emit(sample_id_size, sink);
  }
  return true;
}

std::size_t synthesize_all_processes(std::size_t sample_id_size, const RecordSink& sink,
                                     const SynthesisOptions& options) {
  std::size_t count = 0;
  for (const auto& name : sys::list_directory("/proc")) {
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (synthesize_process(static_cast<pid_t>(std::stol(name)), sample_id_size, sink, options)) {
      ++count;
    }
  }
  return count;
}

}  // namespace perfscope
