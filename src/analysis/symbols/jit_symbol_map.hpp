// JitSymbolMap: the symbols a JIT compiler wrote for perf to /tmp/perf-PID.map, one
// "START SIZE name" line each (hex numbers, 0x optional; the name may hold spaces), sorted once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope {

// Whether a path names such a map: "perf-PID.map" with a numeric PID, in any directory.
bool is_jit_map_path(std::string_view path) noexcept;

class JitSymbolMap {
 public:
  void parse(std::string_view text);

  bool empty() const noexcept { return entries_.empty(); }
  std::size_t size() const noexcept { return entries_.size(); }

  struct Hit {
    std::string_view name;
    std::uint64_t start = 0, end = 0;
  };
  // The symbol covering `address`. Later lines win over earlier ones at the same start (a JIT
  // appends when it recompiles code into a freed range).
  bool find(std::uint64_t address, Hit& hit) const noexcept;

 private:
  struct Entry {
    std::uint64_t start = 0, end = 0;
    std::uint32_t name_offset = 0, name_size = 0;
  };
  std::string names_;
  std::vector<Entry> entries_;
};

}  // namespace perfscope
