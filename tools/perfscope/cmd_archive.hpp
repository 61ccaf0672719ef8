// perfscope archive: packs the files a recording's samples reach (ELF files and their debug
// files, the kernel's kallsyms, JIT maps) so that report, script and annotate --archive name
// everything on a machine that has none of them, and perf report does once it is unpacked in
// ~/.debug.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "command_line.hpp"

namespace perfscope::cli {

struct ArchiveCommandOptions {
  std::string input = "perf.data";
  std::string output;  // empty: INPUT.tar.zst
  std::string debug_root;
  SymbolSourceOptions symbol_sources;
};

class ArchiveCommand {
 public:
  explicit ArchiveCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  // 0 when the archive was written (what it lacks is listed on stderr), 1 when nothing the
  // samples reach could be packed.
  int run();

 private:
  CLI::App* app_;
  ArchiveCommandOptions options_;
};

}  // namespace perfscope::cli
