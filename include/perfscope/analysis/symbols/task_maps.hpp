// TaskMaps: what a recording says about its tasks, replayed record by record: the command name
// of each thread (COMM, inherited on FORK) and the files mapped in each process (MMAP/MMAP2,
// copied on FORK, dropped on exec), so that a sample's address can be named by its file (DSO).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

class TaskMaps {
 public:
  // Feeds one record; anything but COMM, FORK, MMAP and MMAP2 is ignored.
  void observe(const RecordView& view, const ParseConfig& config);
  // Whether records of this type change what observe() keeps (COMM, FORK, MMAP, MMAP2).
  static bool observes(std::uint32_t record_type) noexcept;

  // The file mapped at `address`: in the kernel's map for kernel cpumodes, else in process
  // `pid`. Null when nothing recorded maps it.
  const std::string* dso_of(std::uint32_t pid, std::uint64_t address,
                            std::uint16_t cpumode) const noexcept;
  // One mapped range of a process (or of the kernel): its file, the file offset of its start, and
  // the build id an MMAP2 record carried (empty when the record had none).
  struct MappingView {
    std::uint64_t start = 0, end = 0, pgoff = 0;
    const std::string* filename = nullptr;
    std::span<const std::uint8_t> build_id;
    // Code may run there: not a data mapping (PERF_RECORD_MISC_MMAP_DATA, or an MMAP2 whose
    // prot lacks PROT_EXEC). Only an executable anonymous mapping can hold JIT code.
    bool executable = true;
    // The file offset of `address` (inside the range).
    std::uint64_t file_offset(std::uint64_t address) const noexcept {
      return address - start + pgoff;
    }
  };
  // Like dso_of, with the whole mapping. The maps a process had before its last exec name a
  // user address only `of_kernel_sample`: a user frame of a sample taken in the kernel (a sample
  // inside execve, after its COMM, still holds the old image's pc and callers). A user-mode
  // sample's address in a gap of the new image's maps stays unmapped.
  std::optional<MappingView> mapping_of(std::uint32_t pid, std::uint64_t address,
                                        std::uint16_t cpumode,
                                        bool of_kernel_sample = false) const noexcept;
  // Whether any kernel mapping was recorded (one that maps something; a map at 0 of length 0
  // maps every address, as perf reads it). A kernel ip outside every kernel map, or in a
  // recording without any, is in no known map, which perf shows as [unknown]. Kernel module
  // maps are named "[module]" as perf names them.
  bool has_kernel_maps() const noexcept { return kernel_mapped_; }
  // Every mapping of process `pid` in address order.
  void for_each_mapping(std::uint32_t pid,
                        const std::function<void(const MappingView&)>& visit) const;
  // Changes whenever the mappings of `pid` change (exec, fork, mmap): caches keyed by process
  // (an unwinder's module list) compare it to know when to rebuild.
  std::uint64_t maps_generation(std::uint32_t pid) const noexcept;

  // The command name of a thread; empty when no record named it, "swapper" for tid 0 (the idle
  // task) unless a record named it otherwise.
  std::string_view comm_of(std::uint32_t tid) const noexcept;

  // Every file a lookup has returned, with the cpumode it was found under.
  struct Hit {
    std::string filename;
    bool kernel = false;
  };
  // The files that dso_of found at least once (for build ids of the DSOs samples hit).
  std::vector<Hit> hit_files() const;
  // Every file a mapping named, hit or not (perf record --buildid-all).
  std::vector<Hit> mapped_files() const;

  // Forgets a task that exited (its EXIT record): its thread name and, for the thread group
  // leader (tid == pid), its process's mappings. For long-running live consumers (top), whose
  // tasks come and go; replaying a file never needs it.
  void forget_task(std::uint32_t pid, std::uint32_t tid);

 private:
  struct Mapping {
    std::uint64_t end = 0;
    std::uint64_t pgoff = 0;
    std::uint32_t name = 0;      // index into names_
    std::uint32_t build_id = 0;  // index into build_ids_; 0 is "none"
    bool executable = true;
  };
  using AddressMap = std::map<std::uint64_t, Mapping>;  // by start address
  void insert(AddressMap& maps, std::uint64_t start, std::uint64_t length, std::uint64_t pgoff,
              std::string_view filename, std::span<const std::byte> build_id = {},
              bool executable = true);
  void insert_kernel(std::uint64_t start, std::uint64_t length, std::uint64_t pgoff,
                     std::string_view filename, std::span<const std::byte> build_id = {});
  MappingView view_of(std::uint64_t start, const Mapping& mapping) const noexcept;
  void touch(std::uint32_t pid);
  const Mapping* find(const AddressMap& maps, std::uint64_t address) const noexcept;
  std::uint32_t intern(std::string_view filename);

  std::unordered_map<std::uint32_t, AddressMap> processes_;
  // The maps a process had before its last exec: they name what its new maps do not cover.
  std::unordered_map<std::uint32_t, AddressMap> before_exec_;
  // A user address's mapping (its start in `start`): the process's maps, else, for a user frame
  // of a kernel-mode sample (mapping_of), those it had before its exec.
  const Mapping* find_user(std::uint32_t pid, std::uint64_t address, std::uint64_t& start,
                           bool of_kernel_sample) const noexcept;
  AddressMap kernel_;
  bool kernel_mapped_ = false;  // a kernel map that maps something was recorded
  std::unordered_map<std::uint32_t, std::string> comms_;
  std::unordered_map<std::uint32_t, std::uint64_t> generations_;
  std::uint64_t next_generation_ = 1;
  std::vector<std::vector<std::uint8_t>> build_ids_{std::vector<std::uint8_t>{}};
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> name_index_;
  // 1: user hit, 2: kernel hit; 4: a user mapping named it, 8: a kernel mapping.
  mutable std::vector<std::uint8_t> name_hit_;
};

// Mappings that hold no file a symbol table could come from (//anon, [heap], [stack], memfd,
// /dev/zero, SysV shared memory, ...): code there is JIT output, named by /tmp/perf-PID.map if
// anything, and its addresses are not offsets into a file.
bool is_anonymous_mapping(std::string_view filename) noexcept;

}  // namespace perfscope
