// perfscope inject --unwind: a `--call-graph dwarf` recording (perf's, or perfscope's with
// --keep-stacks) rewritten with its stack copies unwound into call chains, as record does while
// recording (analysis/unwinding/recording_unwinding.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace perfscope::cli {

struct InjectCommandOptions {
  std::string input = "perf.data";
  std::string output;
  bool unwind = false;
};

class InjectCommand {
 public:
  explicit InjectCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  int run();

 private:
  CLI::App* app_;
  InjectCommandOptions options_;
};

}  // namespace perfscope::cli
