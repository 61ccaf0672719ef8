// Where the user part of a profile's stacks came from: the StackResolver counts each sample it
// walks under one of these, and the profile's summary (report's header) says them.
#pragma once

#include <cstdint>

namespace perfscope {

struct StackSources {
  std::uint64_t frame_pointers = 0;         // the kernel's call chain (perf -g, perfscope -g)
  std::uint64_t dwarf_unwound_here = 0;     // stack copies unwound by this reader
  std::uint64_t dwarf_while_recording = 0;  // unwound at record time: frames in the call chain
  std::uint64_t lbr = 0;                    // the LBR call stack
};

}  // namespace perfscope
