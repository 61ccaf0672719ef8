// perfscope inject: a recording rewritten into another (analysis/recording/recording_rewrite.hpp):
// copied as it is (a pipe's stream into a file), with --unwind a `--call-graph dwarf` recording's
// stack copies unwound into call chains as record does while recording, with -b/--build-ids or
// --buildid-all its BUILD_ID section made from the files the samples hit or every mapped file.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace perfscope::cli {

struct InjectCommandOptions {
  std::string input = "-";   // perf's: standard input
  std::string output = "-";  // and standard output
  bool unwind = false;
  bool build_ids = false;    // -b: of the files the samples hit
  bool buildid_all = false;  // --buildid-all: of every mapped file
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
