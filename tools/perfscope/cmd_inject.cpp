#include "cmd_inject.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/unwinding/recording_unwinding.hpp"
#include "perfscope/core/safe_text.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

InjectCommand::InjectCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "inject");
  app_->add_option("-i,--input", options_.input, "Input file (default perf.data; - reads stdin)");
  // Checked in run(), not by the parser: an unknown option is reported first, as perf does.
  app_->add_option("-o,--output", options_.output, "The rewritten recording (required)");
  app_->add_flag("--unwind", options_.unwind,
                 "Unwind the user stack copies of a --call-graph dwarf recording into call "
                 "chains (the copies are left out); samples that cannot be unwound keep theirs");
  app_->footer(
      "Examples:\n"
      "  perfscope inject --unwind -i perf.data -o small.data   (perf.data: perf record "
      "--call-graph dwarf)\n"
      "  perfscope inject --unwind -i big.data -o small.data && perf report -i small.data\n");
}

int InjectCommand::run() {
  if (options_.output.empty()) {
    throw std::invalid_argument(
        "--output is required: give the rewritten recording's file (-o FILE)");
  }
  if (!options_.unwind) {
    throw std::invalid_argument(
        "say what to inject: --unwind (the only rewrite inject does: stack copies into call "
        "chains)");
  }
  std::error_code same_error;
  if (options_.input != "-" &&
      std::filesystem::equivalent(options_.input, options_.output, same_error)) {
    throw std::invalid_argument(
        fmt::format("-o {}: that is the input; write the rewritten recording to another file",
                    options_.output));
  }
  auto start = std::chrono::steady_clock::now();
  PerfDataReader reader = PerfDataReader::open(options_.input);
  RecordingUnwinding result = unwind_recording(reader, options_.output);
  const StackCompletionStatistics& stacks = result.stacks;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr,
             "[ perfscope inject: {} samples unwound ({} reach a thread's first frame), {} kept "
             "their stack copies; {:.3f} MB of records became {:.3f} MB in {}, {:.2f} s ]\n",
             stacks.completed, stacks.reached_start, stacks.kept,
             static_cast<double>(result.bytes_in) / 1e6,
             static_cast<double>(result.bytes_out) / 1e6, terminal_safe_lines(options_.output),
             seconds);
  return 0;
}

}  // namespace perfscope::cli
