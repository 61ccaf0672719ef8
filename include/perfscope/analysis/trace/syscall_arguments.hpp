// The arguments of each system call, named and typed from its tracepoint's format under tracefs
// (events/syscalls/sys_enter_NAME/format), and printed from the six words raw_syscalls:sys_enter
// carries. The kernel's syscall tracepoints record pointers, never what they point to (a path is
// its address): pointers are printed in hex, as perf trace prints them without its BPF helper.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "perfscope/analysis/trace/syscall_table.hpp"

namespace perfscope {

class TracepointCatalog;

enum class SyscallArgumentKind {
  signed_number,    // int, long, pid_t, off_t ...: decimal, negative values as such
  unsigned_number,  // size_t, unsigned long ...: decimal
  int32,            // a 32-bit int: the low half, signed
  pointer,          // any T *: hex (NULL for 0)
  flags,            // *flags, prot, how: hex
  mode,             // umode_t: octal
  directory_fd,     // dfd: AT_FDCWD or the number
};

struct SyscallArgument {
  std::string name;
  std::string type;  // as the format gives it ("const char *")
  SyscallArgumentKind kind = SyscallArgumentKind::unsigned_number;
};

struct SyscallSignature {
  bool from_tracefs = false;  // false: no tracepoint here; six unnamed words
  std::vector<SyscallArgument> arguments;
};

// The kind of a tracepoint field of type `type` named `name`.
SyscallArgumentKind syscall_argument_kind(std::string_view type, std::string_view name);

class SyscallSignatures {
 public:
  explicit SyscallSignatures(SyscallTable table);
  ~SyscallSignatures();
  SyscallSignatures(const SyscallSignatures&) = delete;
  SyscallSignatures& operator=(const SyscallSignatures&) = delete;

  const SyscallTable& table() const noexcept { return table_; }
  // Read from tracefs the first time a call is asked for; never throws (a missing or unreadable
  // format gives the unnamed signature).
  const SyscallSignature& signature(long number);
  // "dfd: AT_FDCWD, filename: 0x7ffd1c2e, flags: 0x80000, mode: 0" appended to `out`.
  void append_arguments(std::string& out, long number, const std::array<std::uint64_t, 6>& args);
  // One argument's text, as append_arguments writes it.
  static void append_value(std::string& out, SyscallArgumentKind kind, std::uint64_t value);

 private:
  SyscallTable table_;
  std::unique_ptr<TracepointCatalog> catalog_;
  std::unordered_map<long, SyscallSignature> signatures_;
};

}  // namespace perfscope
