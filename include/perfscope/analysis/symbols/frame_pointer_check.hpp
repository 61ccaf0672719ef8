// Whether a binary's functions set up frame pointers (so that --call-graph fp can walk its
// stacks), and what else profiling it needs: symbols, .eh_frame or debug info, a build-id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace perfscope {

struct FunctionFramePointer {
  std::string name;
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  bool sets_frame_pointer = false;
};

struct FramePointerReport {
  std::string path;
  std::string machine;                  // "x86-64", "aarch64", or the ELF e_machine number
  bool architecture_supported = false;  // prologues are only recognised on x86-64 and aarch64
  std::string symbol_table;             // ".symtab", ".dynsym" (stripped), or "" (none)
  bool stripped = false;                // no .symtab
  bool has_debug_info = false;          // .debug_info (or compressed .zdebug_info)
  bool has_eh_frame = false;
  std::string build_id;  // hex, empty when there is no NT_GNU_BUILD_ID note
  // One entry per distinct function address with code in the file.
  std::vector<FunctionFramePointer> functions;
  std::size_t functions_with_frame_pointer = 0;
  // What to do about it, one sentence each; never empty.
  std::vector<std::string> advice;

  // Share of the functions that set up frame pointers, 0 when there are none.
  double fraction() const noexcept;
  // True when at least half do: compilers leave frameless leaf functions without one even in
  // a frame-pointer build, and a build without frame pointers has almost none.
  bool frame_pointers_usable() const noexcept;
};

// Reads the ELF file at `path`. Throws perfscope::Error when it cannot be read or is not ELF.
FramePointerReport check_frame_pointers(const std::string& path);

// The prologue test on a function's first bytes, exposed for tests and other tools.
bool x86_64_sets_frame_pointer(const std::uint8_t* code, std::size_t size) noexcept;
bool aarch64_sets_frame_pointer(const std::uint8_t* code, std::size_t size) noexcept;

}  // namespace perfscope
