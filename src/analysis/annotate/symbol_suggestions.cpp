#include "analysis/annotate/symbol_suggestions.hpp"

#include <elf.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "analysis/symbols/debug_file_locator.hpp"
#include "analysis/symbols/elf_symbol_table.hpp"
#include "analysis/symbols/short_function_name.hpp"
#include "perfscope/analysis/symbols/elf_image.hpp"

namespace perfscope {

namespace {

// Levenshtein distance, stopping early past `limit` (the answer is then limit + 1).
std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
  if (a.size() > b.size()) std::swap(a, b);
  if (b.size() - a.size() > limit) return limit + 1;
  std::vector<std::size_t> row(a.size() + 1);
  for (std::size_t i = 0; i <= a.size(); ++i) row[i] = i;
  for (std::size_t j = 1; j <= b.size(); ++j) {
    std::size_t diagonal = row[0];
    row[0] = j;
    std::size_t best = row[0];
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t up = row[i];
      row[i] = std::min({row[i] + 1, row[i - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
      best = std::min(best, row[i]);
    }
    if (best > limit) return limit + 1;
  }
  return row[a.size()];
}

// The function names an ELF file defines (its .symtab, else its debug file's, and .dynsym),
// short forms.
std::vector<std::string> file_function_names(const std::string& path,
                                             const std::string& debug_root) {
  std::string error;
  std::optional<ElfImage> image = ElfImage::open(path, error);
  if (!image) return {};
  ElfSymbolTable table;
  if (table.add(*image, SHT_SYMTAB) == 0) {
    DebugFileSearch search = find_debug_file(*image, path, debug_root);
    if (search.path) {
      if (auto debug = ElfImage::open(*search.path, error)) table.add(*debug, SHT_SYMTAB);
    }
  }
  table.add(*image, SHT_DYNSYM);
  table.finish();
  std::vector<std::string> names;
  names.reserve(table.size());
  for (std::uint32_t i = 0; i < table.size(); ++i) {
    names.emplace_back(short_function_name(table.name(i, true)));
  }
  return names;
}

}  // namespace

bool symbol_names_match(std::string_view shown, std::string_view asked) {
  if (shown == asked) return true;
  return short_function_name(shown) == short_function_name(asked);
}

namespace {

std::string explain_by_name(const Profile& profile, std::string_view asked,
                            const std::string& debug_root) {
  // Each candidate with whether a sample hit it: those are the likelier meaning.
  std::map<std::string, bool> candidates;
  for (const ProfileFunction& function : profile.functions) {
    if (function.resolved) candidates[std::string(short_function_name(function.name))] = true;
  }
  // Every sampled file that defines it (_init and _fini are in each one), in the order the
  // samples met them.
  std::vector<std::string_view> defined_in;
  for (const ProfileDso& dso : profile.dsos) {
    if (dso.kernel || dso.path.empty() || dso.path.front() == '[') continue;
    for (std::string& name : file_function_names(dso.path, debug_root)) {
      if (symbol_names_match(name, asked)) {
        if (defined_in.empty() || defined_in.back() != dso.path) defined_in.push_back(dso.path);
        continue;
      }
      candidates.try_emplace(std::move(name), false);
    }
  }
  if (!defined_in.empty()) {
    constexpr std::size_t listed = 4;
    std::string files;
    for (std::size_t i = 0; i < std::min(defined_in.size(), listed); ++i) {
      files += i == 0 ? "" : ", ";
      files += defined_in[i];
    }
    if (defined_in.size() > listed) {
      files += fmt::format(" and {} more files", defined_in.size() - listed);
    }
    return fmt::format(
        "{} has no samples: it is defined in {}, but none of the samples that passed the "
        "filters fell in it",
        asked, files);
  }
  std::string_view wanted = short_function_name(asked);
  std::size_t limit = std::max<std::size_t>(2, wanted.size() / 3);
  // By edit distance (a name holding the asked one counts as the largest accepted), then sampled
  // before not, a name starting with the asked one first, shorter first.
  std::vector<std::tuple<std::size_t, bool, bool, std::size_t, std::string_view>> close;
  for (const auto& [name, sampled] : candidates) {
    std::size_t distance = edit_distance(name, wanted, limit);
    if (distance > limit && name.find(wanted) != std::string::npos) distance = limit;
    if (distance <= limit) {
      close.emplace_back(distance, !sampled, !name.starts_with(wanted), name.size(), name);
    }
  }
  std::sort(close.begin(), close.end());
  if (close.size() > 5) close.resize(5);
  if (close.empty()) {
    return fmt::format(
        "no function named {} in the recording's sampled files (`perfscope report` lists the "
        "sampled ones)",
        asked);
  }
  std::string names;
  for (const auto& candidate : close) {
    names += names.empty() ? "" : ", ";
    names += std::get<4>(candidate);
  }
  return fmt::format("no function named {}; did you mean: {}?", asked, names);
}

}  // namespace

std::string explain_unknown_symbol(const Profile& profile, std::string_view asked,
                                   const std::string& debug_root) {
  std::string text = explain_by_name(profile, asked, debug_root);
  // A sampled file that changed since the recording had its samples named from other code: the
  // function may well have been sampled, at addresses that now lie elsewhere.
  for (const MissingSymbolFile& file : profile.summary.missing_files) {
    if (file.reason != missing_file_build_id_mismatch) continue;
    text += fmt::format(
        ". {}: build id mismatch: the recording has {}, and the file changed since the "
        "recording: its samples were named from other code (annotate with the binary that was "
        "recorded, or record again)",
        file.path, file.build_id.empty() ? std::string("another") : file.build_id);
  }
  return text;
}

}  // namespace perfscope
