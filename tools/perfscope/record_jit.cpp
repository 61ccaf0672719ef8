#include "record_jit.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <iterator>
#include <stdexcept>

#include "perfscope/analysis/recording/jit_runtimes.hpp"

namespace perfscope::cli {

void set_jit_switches(const RecordOptions& options) {
  if (options.command.empty()) {
    throw std::invalid_argument(
        "--jit tells a runtime perfscope starts to describe its JIT code: give the command "
        "(perfscope record --jit -- node app.js); a running process must have been started with "
        "the switches (doctor lists them)");
  }
  JitRuntimeSwitches switches = jit_switches_for(options.command);
  for (const auto& [name, value] : switches.environment) {
    ::setenv(name.c_str(), value.c_str(), 1);
    fmt::print(stderr, "perfscope: --jit: set {}=\"{}\"\n", name, value);
  }
  fmt::print(
      stderr, "perfscope: --jit: {}{}\n",
      switches.runtime.empty() ? "" : fmt::format("{} ({}): ", switches.runtime, switches.path),
      switches.note);
}

void carry_jit_files(PerfDataSink& sink, PerfDataFeatures& features) {
  std::vector<EmbeddedFile> files = sink.jit_files();
  for (const std::string& warning : sink.jit_file_warnings()) {
    fmt::print(stderr, "perfscope: warning: {}\n", warning);
  }
  if (files.empty()) return;
  std::size_t bytes = 0;
  std::string names;
  for (const EmbeddedFile& file : files) {
    bytes += file.bytes.size();
    names += fmt::format("{}{}", names.empty() ? "" : ", ", file.name);
  }
  fmt::print(stderr, "[ perfscope record: carried {} JIT symbol file{} ({:.3f} MB): {} ]\n",
             files.size(), files.size() == 1 ? "" : "s", static_cast<double>(bytes) / 1e6, names);
  features.embedded_files.insert(features.embedded_files.end(),
                                 std::make_move_iterator(files.begin()),
                                 std::make_move_iterator(files.end()));
}

}  // namespace perfscope::cli
