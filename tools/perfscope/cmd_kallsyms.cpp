// perfscope kallsyms: where kernel symbols are, as perf kallsyms prints them:
// "NAME: [kernel] [kernel.kallsyms] 0xSTART-0xEND (0xSTART-0xEND)", "NAME: not found".
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "commands.hpp"
#include "perfscope/analysis/symbols/kernel_symbol_lookup.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

KallsymsCommand::KallsymsCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "kallsyms");
  app_->add_option("symbol", names_, "Kernel symbols to look up")->required();
  app_->footer("Example:\n  perfscope kallsyms schedule do_sys_openat2");
}

int KallsymsCommand::run() {
  auto text = sys::read_text_file("/proc/kallsyms");
  if (!text) throw std::runtime_error("cannot read /proc/kallsyms");
  std::string out;
  for (const std::string& name : names_) {
    auto symbol = find_kernel_symbol(*text, name);
    if (!symbol) {
      out += name + ": not found\n";
      continue;
    }
    // perf's short and long DSO names: "[kernel] [kernel.kallsyms]", a module's "[ext4] [ext4]".
    std::string short_name = symbol->dso == "[kernel.kallsyms]" ? "[kernel]" : symbol->dso;
    out += fmt::format("{}: {} {} {:#x}-{:#x} ({:#x}-{:#x})\n", name, short_name, symbol->dso,
                       symbol->start, symbol->end, symbol->start, symbol->end);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace perfscope::cli
