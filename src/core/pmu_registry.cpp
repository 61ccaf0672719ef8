#include "perfscope/core/pmu_registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

std::string trimmed(std::string_view text) {
  auto begin = text.find_first_not_of(" \t\n");
  if (begin == std::string_view::npos) return {};
  auto end = text.find_last_not_of(" \t\n");
  return std::string(text.substr(begin, end - begin + 1));
}

bool parse_unsigned(std::string_view text, unsigned& value) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} && ptr == text.data() + text.size();
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

constexpr std::uint64_t bits_mask(unsigned low, unsigned high) {
  unsigned count = high - low + 1;
  return (count >= 64 ? ~0ULL : ((1ULL << count) - 1)) << low;
}

}  // namespace

unsigned PmuFormatField::width() const noexcept {
  unsigned total = 0;
  for (const auto& range : ranges) total += range.high - range.low + 1;
  return total;
}

std::string PmuFormatField::layout() const {
  std::string text = word == 0 ? "config" : fmt::format("config{}", word);
  char separator = ':';
  for (const auto& range : ranges) {
    text += separator;
    text += range.low == range.high ? fmt::format("{}", range.low)
                                    : fmt::format("{}-{}", range.low, range.high);
    separator = ',';
  }
  return text;
}

std::uint64_t PmuFormatField::mask() const noexcept {
  std::uint64_t bits = 0;
  for (const auto& range : ranges) bits |= bits_mask(range.low, range.high);
  return bits;
}

std::uint64_t PmuFormatField::extract(const abi::PerfEventAttr& attr) const noexcept {
  std::uint64_t source = attr_config_word(attr, word);
  std::uint64_t value = 0;
  unsigned shift = 0;
  for (const auto& range : ranges) {
    unsigned count = range.high - range.low + 1;
    std::uint64_t part = (source & bits_mask(range.low, range.high)) >> range.low;
    if (shift < 64) value |= part << shift;
    shift += count;
  }
  return value;
}

std::optional<PmuFormatField> parse_pmu_format(std::string name, std::string_view text) {
  std::string content = trimmed(text);
  auto colon = content.find(':');
  if (colon == std::string::npos) return std::nullopt;
  PmuFormatField field;
  field.name = std::move(name);
  std::string_view word = std::string_view(content).substr(0, colon);
  if (word == "config") {
    field.word = 0;
  } else if (word == "config1") {
    field.word = 1;
  } else if (word == "config2") {
    field.word = 2;
  } else if (word == "config3") {
    field.word = 3;
  } else {
    return std::nullopt;
  }
  std::string_view ranges = std::string_view(content).substr(colon + 1);
  while (!ranges.empty()) {
    auto comma = ranges.find(',');
    std::string_view piece = ranges.substr(0, comma);
    ranges = comma == std::string_view::npos ? std::string_view{} : ranges.substr(comma + 1);
    if (comma != std::string_view::npos && ranges.empty()) return std::nullopt;  // "0-7,"
    auto dash = piece.find('-');
    PmuFormatField::BitRange range{};
    if (!parse_unsigned(piece.substr(0, dash), range.low)) return std::nullopt;
    range.high = range.low;
    if (dash != std::string_view::npos && !parse_unsigned(piece.substr(dash + 1), range.high)) {
      return std::nullopt;
    }
    if (range.high < range.low || range.high > 63) return std::nullopt;
    field.ranges.push_back(range);
  }
  if (field.ranges.empty()) return std::nullopt;
  return field;
}

std::uint64_t& attr_config_word(abi::PerfEventAttr& attr, unsigned word) noexcept {
  switch (word) {
    case 1: return attr.config1;
    case 2: return attr.config2;
    case 3: return attr.config3;
    default: return attr.config;
  }
}

std::uint64_t attr_config_word(const abi::PerfEventAttr& attr, unsigned word) noexcept {
  return attr_config_word(const_cast<abi::PerfEventAttr&>(attr), word);
}

std::string apply_pmu_format(const PmuFormatField& field, std::uint64_t value,
                             abi::PerfEventAttr& attr) {
  unsigned width = field.width();
  if (width < 64 && (value >> width) != 0) {
    return fmt::format("value {:#x} is too wide for term '{}' ({} bit{}: {})", value, field.name,
                       width, width == 1 ? "" : "s", field.layout());
  }
  std::uint64_t& target = attr_config_word(attr, field.word);
  target &= ~field.mask();
  unsigned shift = 0;
  for (const auto& range : field.ranges) {
    unsigned count = range.high - range.low + 1;
    std::uint64_t part = shift < 64 ? value >> shift : 0;
    target |= (part << range.low) & bits_mask(range.low, range.high);
    shift += count;
  }
  return {};
}

const PmuFormatField* Pmu::find_term(std::string_view term) const noexcept {
  for (const auto& field : format) {
    if (field.name == term) return &field;
  }
  return nullptr;
}

// As perf, a name matches whatever its case; an alias spelled exactly so comes first, so that
// two aliases differing only in case (sysfs allows it) each name their own event.
const PmuAlias* Pmu::find_alias(std::string_view alias) const noexcept {
  const PmuAlias* folded = nullptr;
  for (const auto& entry : aliases) {
    if (entry.name == alias) return &entry;
    if (!folded && equal_ignoring_case(entry.name, alias)) folded = &entry;
  }
  return folded;
}

struct PmuRegistry::Entry {
  std::string name;
  std::once_flag once;
  std::unique_ptr<Pmu> pmu;  // null after loading when the PMU has no readable type
};

struct PmuRegistry::CoreNames {
  std::once_flag once;
  std::vector<std::string> names;
};

PmuRegistry::PmuRegistry(std::string root)
    : root_(std::move(root)), core_names_(std::make_unique<CoreNames>()) {
  for (auto& name : sys::list_directory(root_)) {
    auto entry = std::make_unique<Entry>();
    entry->name = std::move(name);
    entries_.push_back(std::move(entry));
  }
}

PmuRegistry::~PmuRegistry() = default;

std::string PmuRegistry::default_root() {
  // Like PERFSCOPE_TRACEFS: lets tests and users describe PMUs the kernel does not (a copy of
  // sysfs with an extra .scale file, a hybrid layout on a non-hybrid machine).
  if (const char* forced = std::getenv("PERFSCOPE_PMU_ROOT")) return forced;
  return std::string(sys::pmu_devices_dir);
}

const PmuRegistry& PmuRegistry::system() {
  static const PmuRegistry registry;
  return registry;
}

std::vector<std::string> PmuRegistry::names() const {
  std::vector<std::string> result;
  for (const auto& entry : entries_) result.push_back(entry->name);
  return result;
}

const Pmu* PmuRegistry::load(Entry& entry) const {
  std::call_once(entry.once, [&] {
    std::string dir = root_ + "/" + entry.name;
    auto type = sys::read_integer_file(dir + "/type");
    if (!type || *type < 0) return;
    auto pmu = std::make_unique<Pmu>();
    pmu->name = entry.name;
    pmu->type = static_cast<std::uint32_t>(*type);
    for (const auto& term : sys::list_directory(dir + "/format")) {
      auto text = sys::read_text_file(dir + "/format/" + term);
      if (!text) continue;
      // A layout this code cannot read is left out rather than guessed; using the term then
      // fails as an unknown term, which names the PMU's terms.
      if (auto field = parse_pmu_format(term, *text)) pmu->format.push_back(std::move(*field));
    }
    auto event_files = sys::list_directory(dir + "/events");
    auto has_file = [&](const std::string& name) {
      return std::binary_search(event_files.begin(), event_files.end(), name);
    };
    for (const auto& file : event_files) {
      if (file.find('.') != std::string::npos) continue;  // .scale, .unit, ... of an alias
      auto text = sys::read_text_file(dir + "/events/" + file);
      if (!text) continue;
      PmuAlias alias;
      alias.name = file;
      alias.terms = trimmed(*text);
      if (has_file(file + ".scale")) {
        if (auto scale = sys::read_text_file(dir + "/events/" + file + ".scale")) {
          std::string value = trimmed(*scale);
          char* end = nullptr;
          double parsed = std::strtod(value.c_str(), &end);
          // "nan" and "inf" parse too, and would turn every printed count into noise.
          if (end && *end == '\0' && !value.empty() && std::isfinite(parsed)) alias.scale = parsed;
        }
      }
      if (has_file(file + ".unit")) {
        alias.unit = trimmed(sys::read_text_file(dir + "/events/" + file + ".unit").value_or(""));
      }
      if (has_file(file + ".per-pkg")) {
        alias.per_pkg =
            sys::read_integer_file(dir + "/events/" + file + ".per-pkg").value_or(0) != 0;
      }
      if (has_file(file + ".snapshot")) {
        alias.snapshot =
            sys::read_integer_file(dir + "/events/" + file + ".snapshot").value_or(0) != 0;
      }
      pmu->aliases.push_back(std::move(alias));
    }
    pmu->cpumask = trimmed(sys::read_text_file(dir + "/cpumask").value_or(""));
    pmu->cpus = trimmed(sys::read_text_file(dir + "/cpus").value_or(""));
    for (const auto& cap : sys::list_directory(dir + "/caps")) {
      pmu->caps[cap] = trimmed(sys::read_text_file(dir + "/caps/" + cap).value_or(""));
    }
    pmu->core = entry.name == "cpu" || sys::path_exists(dir + "/cpus");
    entry.pmu = std::move(pmu);
  });
  return entry.pmu.get();
}

const Pmu* PmuRegistry::find(std::string_view name) const {
  auto found =
      std::lower_bound(entries_.begin(), entries_.end(), name,
                       [](const auto& entry, std::string_view key) { return entry->name < key; });
  if (found == entries_.end() || (*found)->name != name) return nullptr;
  return load(**found);
}

const Pmu* PmuRegistry::find_by_type(std::uint32_t type) const {
  for (const auto& entry : entries_) {
    const Pmu* pmu = load(*entry);
    if (pmu && pmu->type == type) return pmu;
  }
  return nullptr;
}

std::vector<const Pmu*> PmuRegistry::all() const {
  std::vector<const Pmu*> result;
  for (const auto& entry : entries_) {
    if (const Pmu* pmu = load(*entry)) result.push_back(pmu);
  }
  return result;
}

std::vector<std::string> PmuRegistry::core_pmu_names() const {
  std::call_once(core_names_->once, [&] {
    for (const auto& entry : entries_) {
      if (entry->name == "cpu" || sys::path_exists(root_ + "/" + entry->name + "/cpus")) {
        core_names_->names.push_back(entry->name);
      }
    }
  });
  return core_names_->names;
}

std::vector<const Pmu*> PmuRegistry::core_pmus() const {
  // Only core PMUs are read in full: on a server most PMUs are uncore ones with many events.
  std::vector<const Pmu*> result;
  for (const auto& name : core_pmu_names()) {
    if (const Pmu* pmu = find(name)) result.push_back(pmu);
  }
  return result;
}

bool is_aux_tracing_pmu(std::string_view name) noexcept {
  return name == "intel_pt" || name == "intel_bts" || name == "cs_etm" ||
         name.starts_with("arm_spe") || name.starts_with("hisi_ptt");
}

}  // namespace perfscope
