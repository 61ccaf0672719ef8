// The source-first view's numbers: instructions folded by the line (and inlined call) they came
// from.
#include <algorithm>
#include <map>
#include <tuple>

#include "perfscope/analysis/annotate/annotator.hpp"

namespace perfscope {

std::vector<AnnotatedSourceLine> source_lines(const AnnotatedFunction& function) {
  // Keyed so that the map's order is the output's: own lines first (empty caller), then each
  // inlined function by its call site.
  using Key = std::tuple<bool, std::string, std::string, std::uint32_t, std::string, std::string,
                         std::uint32_t>;
  std::map<Key, AnnotatedSourceLine> lines;
  auto add = [&](AnnotatedSourceLine line, const AnnotatedInstruction& entry) {
    if (line.file.empty() || line.line == 0) return;
    Key key{!line.caller.empty(),
            line.caller.empty() ? std::string() : line.function,
            line.call_site.file,
            line.call_site.line,
            line.file,
            line.caller,
            line.line};
    auto [it, inserted] = lines.try_emplace(std::move(key), std::move(line));
    it->second.samples += entry.samples;
    it->second.period += entry.period;
    it->second.callee_samples += entry.callee_samples;
    it->second.callee_period += entry.callee_period;
  };
  for (const AnnotatedInstruction& entry : function.instructions) {
    const std::vector<AnnotatedInline>& calls = entry.inlined;
    AnnotatedSourceLine own;
    own.function = function.name;
    const AnnotatedSource& outer = calls.empty() ? entry.source : calls.back().call_site;
    own.file = outer.file;
    own.line = outer.line;
    add(std::move(own), entry);
    for (std::size_t i = 0; i < calls.size(); ++i) {
      AnnotatedSourceLine inlined;
      inlined.function = calls[i].function;
      inlined.file = calls[i].location.file;
      inlined.line = calls[i].location.line;
      inlined.caller = i + 1 < calls.size() ? calls[i + 1].function : function.name;
      inlined.call_site = calls[i].call_site;
      add(std::move(inlined), entry);
    }
  }
  std::vector<AnnotatedSourceLine> out;
  out.reserve(lines.size());
  double total = static_cast<double>(function.period + function.callee_period);
  for (auto& [key, line] : lines) {
    line.percent = total == 0 ? 0.0 : 100.0 * static_cast<double>(line.period) / total;
    line.callee_percent =
        total == 0 ? 0.0 : 100.0 * static_cast<double>(line.callee_period) / total;
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace perfscope
