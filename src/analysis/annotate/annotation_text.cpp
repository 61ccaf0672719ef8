// annotate's text views. Source text comes from disk, each file read once.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "perfscope/analysis/annotate/annotation_output.hpp"
#include "perfscope/core/safe_text.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

// The lines of the source files the debug info names, or why one cannot be read.
class SourceFiles {
 public:
  struct File {
    std::vector<std::string> lines;
    std::string problem;
  };
  const File& get(const std::string& path) {
    auto found = files_.find(path);
    if (found != files_.end()) return found->second;
    File& file = files_[path];
    std::optional<std::string> text = sys::read_regular_file(path);
    if (!text) {
      file.problem = fmt::format(
          "cannot read {}: {} (the path the debug info names, joined "
          "with its compilation directory; annotate where the sources "
          "are)",
          path, std::strerror(errno));
      return file;
    }
    std::size_t start = 0;
    while (start < text->size()) {
      std::size_t end = text->find('\n', start);
      if (end == std::string::npos) end = text->size();
      file.lines.push_back(text->substr(start, end - start));
      start = end + 1;
    }
    return file;
  }
  // The text of `line` with tabs kept as they are; empty when unknown.
  std::string_view line(const std::string& path, std::uint32_t number) {
    const File& file = get(path);
    if (number == 0 || number > file.lines.size()) return {};
    return file.lines[number - 1];
  }

 private:
  std::map<std::string, File> files_;
};

std::string_view base_name(std::string_view path) { return path.substr(path.rfind('/') + 1); }

// What the text shows of a name: escaped for a terminal unless the user asked for raw names.
class Shown {
 public:
  explicit Shown(bool raw) : raw_(raw) {}
  std::string operator()(std::string_view text) const {
    return raw_ || is_terminal_safe(text) ? std::string(text) : terminal_safe(text);
  }
  // A line of source text: as a name, but its tabs stay tabs.
  std::string source_line(std::string_view text) const {
    return raw_ || is_terminal_safe(text) ? std::string(text) : terminal_safe_lines(text);
  }

 private:
  bool raw_;
};

std::string location_text(const Shown& shown, const AnnotatedSource& source) {
  return fmt::format("{}:{}", shown(base_name(source.file)), source.line);
}

void header(std::string& out, const Shown& shown, const Annotation& annotation,
            const AnnotatedFunction& function) {
  fmt::format_to(std::back_inserter(out), "{} in {}", shown(function.name),
                 function.dso.empty() ? std::string("[unknown]") : shown(function.dso));
  if (function.architecture) {
    fmt::format_to(std::back_inserter(out), " ({}, {:#x}..{:#x})",
                   architecture_name(*function.architecture), function.start,
                   function.start + function.size);
  }
  fmt::format_to(std::back_inserter(out), "\n{} samples, {:.2f}% of the {} samples{}\n",
                 function.samples, function.percent_of_total, annotation.total_samples,
                 annotation.event.empty() ? std::string() : " of " + shown(annotation.event));
  if (!function.no_code_reason.empty()) {
    fmt::format_to(std::back_inserter(out), "note: {}\n", shown(function.no_code_reason));
  }
  if (function.unplaced_samples > 0) {
    fmt::format_to(std::back_inserter(out),
                   "note: {} samples at addresses where no instruction starts (code that is "
                   "data, or a file changed in place)\n",
                   function.unplaced_samples);
  }
}

// The source line heading a block of instructions: "file:line  text", with the inlined call.
std::string block_heading(SourceFiles& sources, const Shown& shown,
                          const AnnotatedFunction& function, const AnnotatedInstruction& entry) {
  std::string text = location_text(shown, entry.source);
  std::string_view source = sources.line(entry.source.file, entry.source.line);
  if (!entry.inlined.empty()) {
    const AnnotatedInline& inner = entry.inlined.front();
    std::string_view caller =
        entry.inlined.size() > 1 ? std::string_view(entry.inlined[1].function) : function.name;
    text += fmt::format("  [inlined {} into {} at {}]", shown(inner.function), shown(caller),
                        location_text(shown, inner.call_site));
  }
  if (!source.empty()) text += fmt::format("  {}", shown.source_line(source));
  return text;
}

void render_instructions(std::string& out, SourceFiles& sources, const Shown& shown,
                         const AnnotatedFunction& function, bool with_source) {
  out += " Percent  Samples          Address  Instruction\n";
  std::string last_heading;
  for (const AnnotatedInstruction& entry : function.instructions) {
    if (with_source && !entry.source.file.empty()) {
      std::string heading = block_heading(sources, shown, function, entry);
      if (heading != last_heading) {
        fmt::format_to(std::back_inserter(out), "{:>35}{}\n", "", heading);
        last_heading = std::move(heading);
      }
    }
    std::string percent =
        entry.samples == 0 ? std::string("") : fmt::format("{:.2f}", entry.percent);
    fmt::format_to(std::back_inserter(out), "{:>8} {:>8} {:>16x}  {}\n", percent, entry.samples,
                   entry.instruction.address, entry.text.empty() ? "?" : shown(entry.text));
  }
}

void render_source(std::string& out, SourceFiles& sources, const Shown& shown,
                   const AnnotatedFunction& function) {
  std::vector<AnnotatedSourceLine> lines = source_lines(function);
  if (lines.empty()) {
    out +=
        "note: no source lines (the file has no DWARF line table; build with -g, or install "
        "its debug file)\n";
    return;
  }
  // Blocks: one function's lines in one file from one call site, shown as a contiguous range.
  std::size_t begin = 0;
  while (begin < lines.size()) {
    std::size_t end = begin + 1;
    auto same_block = [&](const AnnotatedSourceLine& a, const AnnotatedSourceLine& b) {
      return a.function == b.function && a.file == b.file && a.caller == b.caller &&
             a.call_site.file == b.call_site.file && a.call_site.line == b.call_site.line;
    };
    while (end < lines.size() && same_block(lines[begin], lines[end])) ++end;
    const AnnotatedSourceLine& first = lines[begin];
    if (begin > 0) out += "\n";
    if (first.caller.empty()) {
      fmt::format_to(std::back_inserter(out), "{} ({}):\n", shown(first.function),
                     shown(first.file));
    } else {
      fmt::format_to(std::back_inserter(out), "{}, inlined into {} at {} ({}):\n",
                     shown(first.function), shown(first.caller),
                     location_text(shown, first.call_site), shown(first.file));
    }
    const SourceFiles::File& file = sources.get(first.file);
    if (!file.problem.empty()) {
      fmt::format_to(std::back_inserter(out), "note: {}\n", shown(file.problem));
    }
    out += " Percent  Samples   Line  Source\n";
    std::uint32_t from = lines[begin].line, to = lines[end - 1].line;
    std::size_t next = begin;
    for (std::uint32_t number = from; number <= to; ++number) {
      const AnnotatedSourceLine* line = nullptr;
      if (next < end && lines[next].line == number) line = &lines[next++];
      if (!line && !file.problem.empty()) continue;  // no text to fill the gaps with
      std::string percent =
          line && line->samples > 0 ? fmt::format("{:.2f}", line->percent) : std::string();
      fmt::format_to(std::back_inserter(out), "{:>8} {:>8} {:>6}  {}\n", percent,
                     line ? fmt::format("{}", line->samples) : std::string(), number,
                     shown.source_line(sources.line(first.file, number)));
    }
    begin = end;
  }
}

}  // namespace

std::string render_annotation(const Annotation& annotation, AnnotateView view, bool raw_names) {
  std::string out;
  SourceFiles sources;
  Shown shown(raw_names);
  for (std::size_t i = 0; i < annotation.functions.size(); ++i) {
    const AnnotatedFunction& function = annotation.functions[i];
    if (i > 0) out += "\n";
    header(out, shown, annotation, function);
    out += "\n";
    if (view == AnnotateView::source && function.no_code_reason.empty()) {
      render_source(out, sources, shown, function);
    } else {
      render_instructions(out, sources, shown, function, view == AnnotateView::interleaved);
    }
  }
  return out;
}

}  // namespace perfscope
