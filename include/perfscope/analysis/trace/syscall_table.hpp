// System call numbers and names (x86-64 and aarch64), the tracepoint each one has under tracefs
// (events/syscalls/sys_enter_NAME, named after the kernel's function, which is not always the
// call's name: fstat's is newfstat), and the closest names to a misspelt one.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope {

class SyscallTable {
 public:
  // The table of the machine this process runs on (uname's machine). Throws std::runtime_error
  // on an architecture without a table (the message names the ones there are).
  static SyscallTable for_this_machine();
  // "x86_64" or "aarch64"; nullopt for others.
  static std::optional<SyscallTable> for_architecture(std::string_view architecture);

  std::string_view architecture() const noexcept { return architecture_; }
  // "" for a number without a call (a hole in the table, or beyond it).
  std::string_view name(long number) const noexcept;
  std::optional<long> number(std::string_view name) const noexcept;
  long size() const noexcept { return static_cast<long>(names_.size()); }
  // The names of tracepoint `syscalls:sys_enter_X` to try for this call, best first.
  static std::vector<std::string> tracepoint_names(std::string_view name);
  // The calls this kernel has tracepoints for (tracefs's events/syscalls/sys_enter_*, under
  // `tracefs_root`) that this table has no number for: a kernel newer than the table. Their
  // calls print as syscall_NUMBER. Empty when tracefs has no syscalls/ directory.
  std::vector<std::string> calls_missing_from_table(const std::string& tracefs_root) const;
  // Up to `limit` known names closest to `name` (edit distance, then a shared prefix), best first.
  std::vector<std::string> closest_names(std::string_view name, std::size_t limit = 3) const;

 private:
  SyscallTable(std::string_view architecture, std::span<const std::string_view> names)
      : architecture_(architecture), names_(names) {}
  std::string_view architecture_;
  std::span<const std::string_view> names_;  // indexed by number; "" for holes
};

}  // namespace perfscope
