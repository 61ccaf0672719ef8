// libFuzzer target for what `perfscope report` does with a file from elsewhere: arbitrary bytes
// as a perf.data file, through the reader, build_profile (maps, symbols, call chains) and every
// exporter. Bad input must end in a PerfDataError or in a profile every exporter writes; nothing
// else may be thrown, and nothing may read out of bounds. Symbols come from the files the
// recording names (the seeds name this machine's), never from this machine's kernel or JIT maps,
// so that a run does not depend on who runs it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/analysis/exporters/profile_exporters.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::byte> bytes(size);
  if (size != 0) std::memcpy(bytes.data(), data, size);
  perfscope::ProfileOptions options;
  options.symbols.kallsyms_path = "/nonexistent/kallsyms";
  options.symbols.jit_map_dir = "/nonexistent";
  options.symbols.debug_root = "/nonexistent";
  try {
    auto reader = perfscope::PerfDataReader::from_bytes(std::move(bytes));
    perfscope::Profile profile = perfscope::build_profile(reader, options);
    for (auto format : {perfscope::ExportFormat::folded, perfscope::ExportFormat::speedscope,
                        perfscope::ExportFormat::gecko, perfscope::ExportFormat::pprof,
                        perfscope::ExportFormat::json, perfscope::ExportFormat::svg}) {
      std::ostringstream out;
      perfscope::write_profile(profile, format, out);
    }
  } catch (const perfscope::PerfDataError&) {
  }
  return 0;
}
