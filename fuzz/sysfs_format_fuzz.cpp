// libFuzzer target for what PmuRegistry reads from sysfs: format/ files (bit layouts), events/
// files (alias term lists with .scale, .unit, .per-pkg and .snapshot), type, cpumask, cpus and
// caps/. The input is a fake PMU tree, one file a line: "PMU/RELATIVE/PATH=CONTENTS" (the
// contents written with a newline, as sysfs does), e.g. "cpu/format/event=config:0-7". The tree
// is written to a private directory and read through a fresh PmuRegistry, so the code under test
// is the one that reads the real /sys/bus/event_source/devices.
//
// Checks: every PMU loads; every format field prints a layout that parses back to itself, and
// writing a value through it touches only its bits and reads back (when its ranges are disjoint);
// every alias parses as pmu/alias/ (and as a bare name) or is refused with an EventSpecError, and
// a parsed one has the PMU's type and the alias's scale and unit.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/pmu_registry.hpp"

namespace {

namespace fs = std::filesystem;

constexpr std::size_t max_lines = 64;
constexpr std::size_t max_name = 48;

// Each input's fake tree: made fresh in tmpfs when there is one (a write per file per input) and
// removed when the input is done, so that nothing is left behind however the fuzzer exits
// (libFuzzer ends with _Exit: atexit handlers do not run).
class InputTree {
 public:
  InputTree() {
    std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path();
    std::string pattern = base + "/perfscope-sysfs-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    root_ = pattern;
  }
  ~InputTree() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  InputTree(const InputTree&) = delete;
  InputTree& operator=(const InputTree&) = delete;
  const fs::path& root() const { return root_; }

 private:
  fs::path root_;
};

bool valid_component(std::string_view name) {
  if (name.empty() || name.size() > max_name || name == "." || name == "..") return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// "PMU/type", "PMU/cpumask", "PMU/cpus", "PMU/format/NAME", "PMU/events/NAME[.ext]",
// "PMU/caps/NAME": the files PmuRegistry reads. Anything else is ignored.
bool valid_path(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    auto slash = path.find('/');
    parts.push_back(path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
  }
  for (auto part : parts) {
    if (!valid_component(part)) return false;
  }
  if (parts.size() == 2) return parts[1] == "type" || parts[1] == "cpumask" || parts[1] == "cpus";
  if (parts.size() == 3) return parts[1] == "format" || parts[1] == "events" || parts[1] == "caps";
  return false;
}

void write_file(const fs::path& path, std::string_view contents) {
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  if (error) return;  // a file where a directory should be: that line is left out
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::string text(contents);
  text += '\n';
  ssize_t written = ::write(fd, text.data(), text.size());
  (void)written;
  ::close(fd);
}

void check_format_field(const perfscope::PmuFormatField& field) {
  auto again = perfscope::parse_pmu_format(field.name, field.layout());
  if (!again || again->word != field.word || again->ranges.size() != field.ranges.size()) {
    std::abort();  // the printed layout is not the parsed one
  }
  for (std::size_t i = 0; i < field.ranges.size(); ++i) {
    if (again->ranges[i].low != field.ranges[i].low ||
        again->ranges[i].high != field.ranges[i].high) {
      std::abort();
    }
  }
  if (field.word > 3) std::abort();

  std::uint64_t mask = field.mask();
  bool disjoint = true;
  unsigned bits = 0;
  for (const auto& range : field.ranges) {
    if (range.low > range.high || range.high > 63) std::abort();
    bits += range.high - range.low + 1;
  }
  if (bits != static_cast<unsigned>(__builtin_popcountll(mask))) disjoint = false;
  if (field.width() != bits) std::abort();

  // Bits outside the field's mask must survive apply, whatever is written.
  constexpr std::uint64_t pattern = 0xa5a5'5a5a'c3c3'3c3cULL;
  std::uint64_t value = bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
  for (std::uint64_t candidate : {value, value & pattern, std::uint64_t{1}}) {
    perfscope::abi::PerfEventAttr attr{};
    perfscope::attr_config_word(attr, field.word) = pattern;
    if (!perfscope::apply_pmu_format(field, candidate, attr).empty()) std::abort();
    std::uint64_t word = perfscope::attr_config_word(attr, field.word);
    if ((word & ~mask) != (pattern & ~mask)) std::abort();
    if (disjoint && field.extract(attr) != candidate) std::abort();
  }
  // One bit too wide is refused, and leaves the attr as it was.
  if (bits < 64) {
    perfscope::abi::PerfEventAttr attr{};
    perfscope::attr_config_word(attr, field.word) = pattern;
    if (perfscope::apply_pmu_format(field, value + 1, attr).empty()) std::abort();
    if (perfscope::attr_config_word(attr, field.word) != pattern) std::abort();
  }
}

void check_alias(const perfscope::PmuRegistry& registry, const perfscope::Pmu& pmu,
                 const perfscope::PmuAlias& alias, const perfscope::EventParseOptions& options) {
  for (bool explicit_form : {true, false}) {
    std::string text = explicit_form ? pmu.name + "/" + alias.name + "/" : alias.name;
    std::vector<perfscope::EventGroupSpec> groups;
    try {
      groups = perfscope::parse_event_list(text, options);
    } catch (const perfscope::EventSpecError& error) {
      if (error.position() > text.size()) std::abort();
      (void)error.with_caret();
      continue;
    }
    if (groups.empty() || groups[0].events.empty()) std::abort();
    if (!explicit_form) continue;
    // pmu/alias/ names exactly this PMU and this alias (on a core PMU a generic name such as
    // cycles keeps its generic meaning instead, as with perf).
    if (groups.size() != 1 || groups[0].events.size() != 1) std::abort();
    const perfscope::EventSpec& spec = groups[0].events[0];
    if (!pmu.core) {
      if (spec.attr.type() != pmu.type) std::abort();
      if (alias.scale && spec.scale != *alias.scale) std::abort();
      if (spec.unit != alias.unit) std::abort();
    }
    (void)perfscope::canonical_event_string(spec, &registry);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  InputTree tree;
  const fs::path& root = tree.root();

  std::string_view input(reinterpret_cast<const char*>(data), size);
  for (std::size_t line = 0; !input.empty() && line < max_lines; ++line) {
    auto newline = input.find('\n');
    std::string_view text = input.substr(0, newline);
    input = newline == std::string_view::npos ? std::string_view{} : input.substr(newline + 1);
    auto equals = text.find('=');
    if (equals == std::string_view::npos) continue;
    std::string_view path = text.substr(0, equals);
    if (!valid_path(path) || text.find('\0') != std::string_view::npos) continue;
    write_file(root / std::string(path), text.substr(equals + 1));
  }

  const perfscope::PmuRegistry registry(root.string());
  perfscope::EventParseOptions options;
  options.pmus = &registry;
  options.tracefs_root = (root / "no-tracefs").string();
  for (const std::string& name : registry.names()) {
    const perfscope::Pmu* pmu = registry.find(name);
    if (pmu == nullptr) continue;  // no readable type: not a PMU
    if (pmu->name != name) std::abort();
    const perfscope::Pmu* by_type = registry.find_by_type(pmu->type);
    if (by_type == nullptr || by_type->type != pmu->type) std::abort();
    for (const auto& field : pmu->format) check_format_field(field);
    for (const auto& alias : pmu->aliases) {
      // A scale multiplies every count printed: NaN or infinity would turn them all into noise.
      if (alias.scale && !std::isfinite(*alias.scale)) std::abort();
      check_alias(registry, *pmu, alias, options);
    }
  }
  (void)registry.core_pmus();
  return 0;
}
