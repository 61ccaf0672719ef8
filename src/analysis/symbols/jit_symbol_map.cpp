#include "analysis/symbols/jit_symbol_map.hpp"

#include <algorithm>
#include <charconv>

#include "analysis/path_names.hpp"

namespace perfscope {

namespace {

bool parse_hex(std::string_view& line, std::uint64_t& value) {
  std::size_t begin = line.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return false;
  line.remove_prefix(begin);
  if (line.size() > 2 && line[0] == '0' && (line[1] == 'x' || line[1] == 'X'))
    line.remove_prefix(2);
  auto parsed = std::from_chars(line.data(), line.data() + line.size(), value, 16);
  if (parsed.ec != std::errc() ||
      (parsed.ptr != line.data() + line.size() && *parsed.ptr != ' ' && *parsed.ptr != '\t')) {
    return false;
  }
  line.remove_prefix(static_cast<std::size_t>(parsed.ptr - line.data()));
  return true;
}

}  // namespace

bool is_jit_map_path(std::string_view path) noexcept {
  return !detail::pid_in_file_name(path, "perf-", ".map").empty();
}

void JitSymbolMap::parse(std::string_view text) {
  names_.clear();
  entries_.clear();
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::uint64_t start = 0, size = 0;
    if (!parse_hex(line, start) || !parse_hex(line, size) || size == 0) continue;
    std::size_t name_begin = line.find_first_not_of(" \t");
    if (name_begin == std::string_view::npos) continue;
    std::string_view name = line.substr(name_begin);
    entries_.push_back({start, start + size, static_cast<std::uint32_t>(names_.size()),
                        static_cast<std::uint32_t>(name.size())});
    names_.append(name);
  }
  // Stable, then the last of equal starts kept: the newest line describes the code now there.
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const Entry& a, const Entry& b) { return a.start < b.start; });
  std::vector<Entry> kept;
  kept.reserve(entries_.size());
  for (const auto& entry : entries_) {
    if (!kept.empty() && kept.back().start == entry.start) {
      kept.back() = entry;
    } else {
      kept.push_back(entry);
    }
  }
  entries_ = std::move(kept);
}

bool JitSymbolMap::find(std::uint64_t address, Hit& hit) const noexcept {
  auto after =
      std::upper_bound(entries_.begin(), entries_.end(), address,
                       [](std::uint64_t value, const Entry& e) { return value < e.start; });
  if (after == entries_.begin()) return false;
  const Entry& entry = *std::prev(after);
  if (address >= entry.end) return false;
  hit.name = std::string_view(names_.data() + entry.name_offset, entry.name_size);
  hit.start = entry.start;
  hit.end = entry.end;
  return true;
}

}  // namespace perfscope
