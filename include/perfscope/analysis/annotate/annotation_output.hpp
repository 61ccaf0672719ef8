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

// Source text is read from the files the debug info names; a file that cannot be read is said
// once per function and its lines are shown by number. Names from the recording and the binaries
// (functions, files, paths, source text) are escaped for a terminal (core/safe_text.hpp; tabs
// in source lines are kept) unless `raw_names`.
std::string render_annotation(const Annotation& annotation, AnnotateView view,
                              bool raw_names = false);

// The JSON document of docs/ANNOTATE_JSON.md (every view's data at once).
std::string annotation_json(const Annotation& annotation);

}  // namespace perfscope
