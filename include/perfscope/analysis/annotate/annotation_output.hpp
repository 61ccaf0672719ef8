// An Annotation as text (perf annotate --stdio's layout: percent, address, instruction, with the
// source line of each block) or as JSON (docs/ANNOTATE_JSON.md).
#pragma once

#include <string>

#include "perfscope/analysis/annotate/annotator.hpp"

namespace perfscope {

enum class AnnotateView {
  interleaved,  // instructions under the source line they came from
  source,       // source lines with their summed percentages, inlined calls under their callers
  asm_only,     // instructions alone
};

// perf annotate's --percent-type: each line's share of the function's period (local-period, the
// default), of its samples (local-hits), or of the event's whole period or samples
// (global-period, global-hits).
enum class AnnotatePercent { local_period, local_hits, global_period, global_hits };

struct AnnotateTextOptions {
  // Names from the recording and the binaries (functions, files, paths, source text) as they
  // are; by default escaped for a terminal (core/safe_text.hpp; tabs in source lines are kept).
  bool raw_names = false;
  bool raw_bytes = false;     // perf's --asm-raw: each instruction's encoding beside it
  bool full_paths = false;    // perf's --full-paths: source files by their whole path
  bool show_period = false;   // perf's --show-total-period: a Period column
  bool skip_missing = false;  // perf's --skip-missing: functions with no code are left out
  AnnotatePercent percent = AnnotatePercent::local_period;
  // perf's --prefix and --prefix-strip: source files are read at PREFIX/ followed by their path
  // without its first `prefix_strip` directories.
  std::string prefix;
  unsigned prefix_strip = 0;
};

// Source text is read from the files the debug info names; a file that cannot be read is said
// once per function and its lines are shown by number.
std::string render_annotation(const Annotation& annotation, AnnotateView view,
                              const AnnotateTextOptions& options = {});

// The JSON document of docs/ANNOTATE_JSON.md (every view's data at once).
std::string annotation_json(const Annotation& annotation);

}  // namespace perfscope
