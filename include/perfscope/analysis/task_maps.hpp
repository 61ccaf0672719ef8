// TaskMaps: what a recording says about its tasks, replayed record by record: the command name
// of each thread (COMM, inherited on FORK) and the files mapped in each process (MMAP/MMAP2,
// copied on FORK, dropped on exec), so that a sample's address can be named by its file (DSO).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"

namespace perfscope {

class TaskMaps {
 public:
  // Feeds one record; anything but COMM, FORK, MMAP and MMAP2 is ignored.
  void observe(const RecordView& view, const ParseConfig& config);

  // The file mapped at `address`: in the kernel's map for kernel cpumodes, else in process
  // `pid`. Null when nothing recorded maps it.
  const std::string* dso_of(std::uint32_t pid, std::uint64_t address,
                            std::uint16_t cpumode) const noexcept;
  // The command name of a thread; empty when no record named it.
  std::string_view comm_of(std::uint32_t tid) const noexcept;

  // Every file a lookup has returned, with the cpumode it was found under.
  struct Hit {
    std::string filename;
    bool kernel = false;
  };
  // The files that dso_of found at least once (for build ids of the DSOs samples hit).
  std::vector<Hit> hit_files() const;

 private:
  struct Mapping {
    std::uint64_t end = 0;
    std::uint64_t pgoff = 0;
    std::uint32_t name = 0;  // index into names_
  };
  using AddressMap = std::map<std::uint64_t, Mapping>;  // by start address
  void insert(AddressMap& maps, std::uint64_t start, std::uint64_t length, std::uint64_t pgoff,
              std::string_view filename);
  const Mapping* find(const AddressMap& maps, std::uint64_t address) const noexcept;
  std::uint32_t intern(std::string_view filename);

  std::unordered_map<std::uint32_t, AddressMap> processes_;
  AddressMap kernel_;
  std::unordered_map<std::uint32_t, std::string> comms_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> name_index_;
  mutable std::vector<std::uint8_t> name_hit_;  // 1: user hit, 2: kernel hit
};

}  // namespace perfscope
