#include "analysis/symbols/kernel_symbols.hpp"

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace perfscope {

namespace {

constexpr std::uint64_t page_size = 4096;

// A hand loop: find_first_of with a character set calls memchr once per character, which made
// it the largest cost of reading kallsyms (120k lines).
bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view next_field(std::string_view& line) {
  const char* p = line.data();
  const char* end = p + line.size();
  while (p != end && is_blank(*p)) ++p;
  const char* begin = p;
  while (p != end && !is_blank(*p)) ++p;
  line = std::string_view(p, static_cast<std::size_t>(end - p));
  return std::string_view(begin, static_cast<std::size_t>(p - begin));
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The kernel prints every line as "%px %c %s" with an optional "\t[module]": 16 hex digits, a
// space, the type, a space, the name. Lines of that shape are cut at fixed places (a third of
// the time of scanning them field by field); anything else goes the general way.
bool fixed_layout_line(std::string_view line, std::uint64_t& address, std::string_view& type,
                       std::string_view& name, std::string_view& module) {
  constexpr std::size_t digits = 16;
  if (line.size() < digits + 4 || line[digits] != ' ' || line[digits + 2] != ' ') return false;
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    int digit = hex_digit(line[i]);
    if (digit < 0) return false;
    value = value << 4 | static_cast<std::uint64_t>(digit);
  }
  std::string_view rest = line.substr(digits + 3);
  std::size_t tab = rest.find('\t');
  name = rest.substr(0, tab);
  if (name.find(' ') != std::string_view::npos) return false;
  module = tab == std::string_view::npos ? std::string_view() : rest.substr(tab + 1);
  while (!module.empty() && is_blank(module.back())) module.remove_suffix(1);
  if (module.find_first_of(" \t") != std::string_view::npos) return false;
  address = value;
  type = line.substr(digits + 1, 1);
  return true;
}

}  // namespace

void KernelSymbols::parse(std::string_view text) {
  names_.clear();
  dsos_.clear();
  entries_.clear();
  reference_address_ = 0;
  std::uint64_t stext_address = 0;
  dsos_.emplace_back(kernel_dso_name);
  std::unordered_map<std::string_view, std::uint32_t> module_index;
  // About 24 bytes of names per symbol: reserve once instead of doubling through 3 MB.
  names_.reserve(text.size() / 2);
  entries_.reserve(text.size() / 40);
  bool any_nonzero = false;
  bool any_line = false;
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    std::uint64_t address = 0;
    std::string_view type, name, module;
    if (!fixed_layout_line(line, address, type, name, module)) {
      std::string_view address_text = next_field(line);
      type = next_field(line);
      name = next_field(line);
      module = next_field(line);
      auto parsed = std::from_chars(address_text.data(), address_text.data() + address_text.size(),
                                    address, 16);
      if (parsed.ec != std::errc()) continue;
    }
    if (type.size() != 1 || name.empty()) continue;
    any_line = true;
    any_nonzero |= address != 0;
    char kind = type[0];
    if (module.empty()) {
      if (name == "_text") reference_address_ = address;
      if (name == "_stext") stext_address = address;
    }
    // Absolute symbols (per-CPU offsets and the like) are no places in the code.
    if (kind == 'a' || kind == 'A') continue;
    Entry entry;
    entry.start = address;
    entry.text = kind == 't' || kind == 'T' || kind == 'w' || kind == 'W';
    entry.binding = kind == 'W' ? 2 : (kind >= 'A' && kind <= 'Z') ? 1 : 0;
    if (module.size() > 2 && module.front() == '[' && module.back() == ']') {
      auto [where, inserted] =
          module_index.try_emplace(module, static_cast<std::uint32_t>(dsos_.size()));
      if (inserted) dsos_.emplace_back(module);
      entry.dso = where->second;
    }
    entry.name_offset = static_cast<std::uint32_t>(names_.size());
    entry.name_size = static_cast<std::uint32_t>(name.size());
    names_.append(name);
    entries_.push_back(entry);
  }
  hidden_ = any_line && !any_nonzero;
  if (reference_address_ == 0) reference_address_ = stext_address;
  if (hidden_) entries_.clear();
  // Stable: of symbols at one address, the first listed (kallsyms lists the kernel's own first).
  // The kernel's own symbols come in address order: checking first skips the sort's merge
  // passes when nothing (a module, BPF) is out of order.
  auto before = [](const Entry& a, const Entry& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.text && !b.text;
  };
  if (!std::is_sorted(entries_.begin(), entries_.end(), before)) {
    bool by_address =
        std::is_sorted(entries_.begin(), entries_.end(),
                       [](const Entry& a, const Entry& b) { return a.start < b.start; });
    if (by_address) {
      // Only symbols sharing an address are out of place (a data symbol listed before a
      // function there): put each such run in order instead of sorting everything.
      for (auto run = entries_.begin(); run != entries_.end();) {
        auto run_end = std::find_if(run, entries_.end(),
                                    [&](const Entry& e) { return e.start != run->start; });
        if (run_end - run > 1) std::stable_sort(run, run_end, before);
        run = run_end;
      }
    } else {
      std::stable_sort(entries_.begin(), entries_.end(), before);
    }
  }
  entries_.shrink_to_fit();
}

bool KernelSymbols::find_by_name(std::string_view name, Hit& hit) const noexcept {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& entry = entries_[i];
    if (std::string_view(names_.data() + entry.name_offset, entry.name_size) != name) continue;
    auto after = std::upper_bound(
        entries_.begin() + static_cast<std::ptrdiff_t>(i), entries_.end(), entry.start,
        [](std::uint64_t value, const Entry& e) { return value < e.start; });
    hit.name = name;
    hit.dso = dsos_[entry.dso];
    hit.start = entry.start;
    hit.end = after != entries_.end() ? after->start : entry.start;
    hit.binding = entry.binding;
    return true;
  }
  return false;
}

bool KernelSymbols::find(std::uint64_t address, Hit& hit) const noexcept {
  auto after =
      std::upper_bound(entries_.begin(), entries_.end(), address,
                       [](std::uint64_t value, const Entry& e) { return value < e.start; });
  if (after == entries_.begin()) return false;
  // The first of the symbols sharing the covering address (aliases of one function).
  std::uint64_t start = std::prev(after)->start;
  auto covering =
      std::lower_bound(entries_.begin(), after, start,
                       [](const Entry& e, std::uint64_t value) { return e.start < value; });
  // Of aliases at one address, perf names it by the one listed last in kallsyms, whatever its
  // binding or underscores: perf gives every alias but the last an end equal to its start
  // (symbols__fixup_end runs before symbols__fixup_duplicate), and choose_best_symbol prefers a
  // symbol with a length (memcpy, __pi_memcpy -> __pi_memcpy; T clkdev_hw_create,
  // t __clk_register_clkdev -> __clk_register_clkdev). Sorting kept the file's order in a run.
  auto text = after;
  for (auto candidate = covering; candidate != after; ++candidate) {
    if (candidate->text) text = candidate;
  }
  if (text == after) return false;
  std::uint64_t end =
      after != entries_.end() ? after->start : (start + page_size) & ~(page_size - 1);
  if (address >= end) return false;
  hit.name = std::string_view(names_.data() + text->name_offset, text->name_size);
  hit.dso = dsos_[text->dso];
  hit.start = start;
  hit.end = end;
  hit.binding = text->binding;
  return true;
}

}  // namespace perfscope
