#include "cmd_inject.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/recording/recording_rewrite.hpp"
#include "perfscope/core/safe_text.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

InjectCommand::InjectCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "inject");
  app_->add_option("-i,--input", options_.input,
                   "Input file (default -: standard input, as perf inject)");
  app_->add_option("-o,--output", options_.output,
                   "The rewritten recording (default -: standard output in pipe mode, as perf)");
  app_->add_flag("--unwind", options_.unwind,
                 "Unwind the user stack copies of a --call-graph dwarf recording into call "
                 "chains (the copies are left out); samples that cannot be unwound keep theirs");
  app_->add_flag("-b,--build-ids", options_.build_ids,
                 "The BUILD_ID section made anew from the files the samples hit (read from "
                 "those files now), as perf inject -b");
  app_->add_flag("--buildid-all", options_.buildid_all,
                 "The BUILD_ID section made from every file a mapping named, hit or not");
  app_->footer(
      "Without an option the recording is copied as it is (a pipe's stream into a file).\n"
      "Examples:\n"
      "  perfscope inject --unwind -i perf.data -o small.data   (perf.data: perf record "
      "--call-graph dwarf)\n"
      "  perfscope inject --unwind -i big.data -o small.data && perf report -i small.data\n"
      "  perfscope record -o - -- ./app | perfscope inject -b -o app.data\n");
}

int InjectCommand::run() {
  if (options_.input == "-" && ::isatty(STDIN_FILENO)) {
    throw std::invalid_argument(
        "inject reads a recording from standard input, which is a terminal here: give the file "
        "with -i FILE, or pipe one in (perfscope record -o - -- COMMAND | perfscope inject ...)");
  }
  if (options_.output == "-" && ::isatty(STDOUT_FILENO)) {
    throw std::invalid_argument(
        "inject writes the recording to standard output, which is a terminal here: give the "
        "file with -o FILE, or pipe it on (... | perfscope report -i -)");
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
  RecordingRewrite rewrite;
  rewrite.unwind = options_.unwind;
  if (options_.buildid_all) {
    rewrite.build_ids = RecordingRewrite::BuildIds::every_mapped;
  } else if (options_.build_ids) {
    rewrite.build_ids = RecordingRewrite::BuildIds::hit;
  }
  RecordingRewriteResult result = rewrite_recording(reader, options_.output, rewrite);
  const StackCompletionStatistics& stacks = result.stacks;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string what = options_.unwind
                         ? fmt::format(
                               "{} samples unwound ({} reach a thread's first frame), {} "
                               "kept their stack copies; ",
                               stacks.completed, stacks.reached_start, stacks.kept)
                         : std::string();
  if (rewrite.build_ids != RecordingRewrite::BuildIds::kept) {
    what += fmt::format("{} build ids; ", result.build_ids);
  }
  fmt::print(
      stderr, "[ perfscope inject: {}{:.3f} MB of records became {:.3f} MB in {}, {:.2f} s ]\n",
      what, static_cast<double>(result.bytes_in) / 1e6, static_cast<double>(result.bytes_out) / 1e6,
      terminal_safe_lines(options_.output), seconds);
  return 0;
}

}  // namespace perfscope::cli
