// annotate's text views. Source text comes from disk, each file read once.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "analysis/path_names.hpp"
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
  explicit SourceFiles(const AnnotateTextOptions& options) : options_(options) {}
  const File& get(const std::string& path) {
    auto found = files_.find(path);
    if (found != files_.end()) return found->second;
    File& file = files_[path];
    std::string where = located(path);
    std::optional<std::string> text = sys::read_regular_file(where);
    if (!text) {
      file.problem = fmt::format(
          "cannot read {}: {} ({}; annotate where the sources are, or give --prefix and "
          "--prefix-strip)",
          where, std::strerror(errno),
          where == path ? "the path the debug info names, joined with its compilation directory"
                        : "--prefix and --prefix-strip applied to " + path);
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
  // Where a source file is read: --prefix-strip's directories off, --prefix's put in front.
  std::string located(const std::string& path) const {
    if (options_.prefix.empty() && options_.prefix_strip == 0) return path;
    std::string_view rest = path;
    for (unsigned i = 0; i < options_.prefix_strip; ++i) {
      std::size_t slash = rest.find('/', rest.starts_with('/') ? 1 : 0);
      if (slash == std::string_view::npos) break;
      rest.remove_prefix(slash);
    }
    while (rest.starts_with('/')) rest.remove_prefix(1);
    return options_.prefix.empty() ? "/" + std::string(rest)
                                   : options_.prefix + "/" + std::string(rest);
  }

  const AnnotateTextOptions& options_;
  std::map<std::string, File> files_;
};

using detail::file_name_of;

// What the text shows of a name: escaped for a terminal unless the user asked for raw names.
class Shown {
 public:
  explicit Shown(bool raw, bool full_paths = false) : raw_(raw), full_paths_(full_paths) {}
  bool full_paths() const noexcept { return full_paths_; }
  std::string operator()(std::string_view text) const {
    return raw_ || is_terminal_safe(text) ? std::string(text) : terminal_safe(text);
  }
  // A line of source text: as a name, but its tabs stay tabs.
  std::string source_line(std::string_view text) const {
    return raw_ || is_terminal_safe(text) ? std::string(text) : terminal_safe_lines(text);
  }

 private:
  bool raw_;
  bool full_paths_;
};

std::string location_text(const Shown& shown, const AnnotatedSource& source) {
  return fmt::format(
      "{}:{}",
      shown(shown.full_paths() ? std::string_view(source.file) : file_name_of(source.file)),
      source.line);
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
  std::string event = annotation.event.empty() ? std::string() : " of " + shown(annotation.event);
  if (annotation.callees) {
    fmt::format_to(std::back_inserter(out),
                   "\n{} samples in it and {} in the functions it called: {:.2f}% of the {} "
                   "samples{}\n",
                   function.samples, function.callee_samples, function.percent_of_total,
                   annotation.total_samples, event);
  } else {
    fmt::format_to(std::back_inserter(out), "\n{} samples, {:.2f}% of the {} samples{}\n",
                   function.samples, function.percent_of_total, annotation.total_samples, event);
  }
  if (!function.no_code_reason.empty()) {
    fmt::format_to(std::back_inserter(out), "note: {}\n", shown(function.no_code_reason));
  }
  if (function.unplaced_samples > 0) {
    fmt::format_to(std::back_inserter(out),
                   "note: {} samples at addresses where no instruction starts (code that is "
                   "data, or a file changed in place)\n",
                   function.unplaced_samples);
  }
  if (function.unplaced_callee_samples > 0) {
    fmt::format_to(std::back_inserter(out),
                   "note: {} callee samples return to addresses no instruction ends at (the "
                   "call chain and the code disagree)\n",
                   function.unplaced_callee_samples);
  }
}

// With callees: "   12.34     5678    80.00    36912", each pair blank when it counted nothing.
std::string callee_columns(std::uint64_t samples, double percent, std::uint64_t callee_samples,
                           double callee_percent) {
  auto pair = [](std::uint64_t count, double share) {
    return count == 0 ? fmt::format("{:>8} {:>8}", "", "")
                      : fmt::format("{:>8.2f} {:>8}", share, count);
  };
  return pair(samples, percent) + " " + pair(callee_samples, callee_percent);
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

// An instruction's or line's share as --percent-type asks.
double share(const AnnotateTextOptions& options, const Annotation& annotation,
             const AnnotatedFunction& function, std::uint64_t samples, std::uint64_t period,
             double local_period) {
  auto of = [](std::uint64_t part, std::uint64_t whole) {
    return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
  };
  switch (options.percent) {
    case AnnotatePercent::local_period: return local_period;
    case AnnotatePercent::local_hits: return of(samples, function.samples);
    case AnnotatePercent::global_period: return of(period, annotation.total_period);
    case AnnotatePercent::global_hits: return of(samples, annotation.total_samples);
  }
  return local_period;
}

// perf's --asm-raw: the encoding in hex, as objdump prints it beside the instruction.
std::string encoding(const Instruction& instruction) {
  std::string text;
  for (std::uint8_t byte : instruction.bytes) {
    fmt::format_to(std::back_inserter(text), "{}{:02x}", text.empty() ? "" : " ", byte);
  }
  return fmt::format("{:<21}  ", text);
}

void render_instructions(std::string& out, SourceFiles& sources, const Shown& shown,
                         const Annotation& annotation, const AnnotatedFunction& function,
                         bool with_source, const AnnotateTextOptions& options) {
  const bool callees = annotation.callees;
  std::string period_column = options.show_period ? fmt::format("{:>12} ", "Period") : "";
  out += callees ? "   Self%  Samples  Callee%  Samples " + period_column +
                       "         Address  Instruction\n"
                 : " Percent  Samples " + period_column + "         Address  Instruction\n";
  const std::size_t indent = (callees ? 53 : 35) + period_column.size();
  std::string last_heading;
  for (const AnnotatedInstruction& entry : function.instructions) {
    if (with_source && !entry.source.file.empty()) {
      std::string heading = block_heading(sources, shown, function, entry);
      if (heading != last_heading) {
        fmt::format_to(std::back_inserter(out), "{:>{}}{}\n", "", indent, heading);
        last_heading = std::move(heading);
      }
    }
    double percent =
        share(options, annotation, function, entry.samples, entry.period, entry.percent);
    std::string shares =
        callees ? callee_columns(entry.samples, percent, entry.callee_samples, entry.callee_percent)
                : fmt::format("{:>8} {:>8}",
                              entry.samples == 0 ? std::string() : fmt::format("{:.2f}", percent),
                              entry.samples);
    if (options.show_period) shares += fmt::format(" {:>12}", entry.period);
    fmt::format_to(std::back_inserter(out), "{} {:>16x}  {}{}\n", shares, entry.instruction.address,
                   options.raw_bytes ? encoding(entry.instruction) : std::string(),
                   entry.text.empty() ? "?" : shown(entry.text));
  }
}

void render_source(std::string& out, SourceFiles& sources, const Shown& shown,
                   const AnnotatedFunction& function, bool callees) {
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
    out += callees ? "   Self%  Samples  Callee%  Samples   Line  Source\n"
                   : " Percent  Samples   Line  Source\n";
    std::uint32_t from = lines[begin].line, to = lines[end - 1].line;
    std::size_t next = begin;
    for (std::uint32_t number = from; number <= to; ++number) {
      const AnnotatedSourceLine* line = nullptr;
      if (next < end && lines[next].line == number) line = &lines[next++];
      if (!line && !file.problem.empty()) continue;  // no text to fill the gaps with
      std::string shares;
      if (callees) {
        shares = line ? callee_columns(line->samples, line->percent, line->callee_samples,
                                       line->callee_percent)
                      : callee_columns(0, 0, 0, 0);
      } else {
        shares = fmt::format(
            "{:>8} {:>8}",
            line && line->samples > 0 ? fmt::format("{:.2f}", line->percent) : std::string(),
            line ? fmt::format("{}", line->samples) : std::string());
      }
      fmt::format_to(std::back_inserter(out), "{} {:>6}  {}\n", shares, number,
                     shown.source_line(sources.line(first.file, number)));
    }
    begin = end;
  }
}

}  // namespace

std::string render_annotation(const Annotation& annotation, AnnotateView view,
                              const AnnotateTextOptions& options) {
  std::string out;
  SourceFiles sources(options);
  Shown shown(options.raw_names, options.full_paths);
  bool first = true;
  for (const AnnotatedFunction& function : annotation.functions) {
    if (options.skip_missing && !function.no_code_reason.empty()) continue;
    if (!first) out += "\n";
    first = false;
    header(out, shown, annotation, function);
    out += "\n";
    if (view == AnnotateView::source && function.no_code_reason.empty()) {
      render_source(out, sources, shown, function, annotation.callees);
    } else {
      render_instructions(out, sources, shown, annotation, function,
                          view == AnnotateView::interleaved, options);
    }
  }
  return out;
}

}  // namespace perfscope
