// libFuzzer target: arbitrary bytes as a jitdump (jit-PID.dump, read by report, script and
// annotate through the recording's MMAP of it). They must be refused with perfscope::Error or
// read into code regions whose names, bytes and lines lie inside the input; lookups at any
// address and time never crash.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "perfscope/analysis/symbols/jitdump.hpp"
#include "perfscope/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    perfscope::Jitdump dump =
        perfscope::Jitdump::parse(std::vector<std::uint8_t>(data, data + size), "fuzz.dump");
    std::size_t total = 0;
    for (const perfscope::JitCode& code : dump.code()) {
      total += code.name.size() + code.bytes.size() + code.unwinding.size();
      for (const perfscope::JitLine& line : code.lines) total += line.file.size();
      if (const perfscope::JitLine* line = code.line_of(code.start + code.size / 2)) {
        total += line->line;
      }
      if (const perfscope::JitCode* found = dump.find(code.start, code.from)) total += found->size;
      if (const perfscope::JitCode* found = dump.find(code.start + 1, 0)) total += found->size;
    }
    volatile std::size_t sink = total;
    (void)sink;
  } catch (const perfscope::Error&) {
  }
  return 0;
}
