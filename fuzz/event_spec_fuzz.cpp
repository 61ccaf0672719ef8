// libFuzzer target for the event-string parser. The first byte picks the fake sysfs tree (plain
// or hybrid) under tests/core/data, the rest is the event list. Every input must either parse or
// throw EventSpecError with a position inside the input; a parsed event's canonical string must
// parse again to the same attr.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/pmu_registry.hpp"

namespace {

const std::string data_dir = PERFSCOPE_FUZZ_DATA_DIR;
const perfscope::PmuRegistry plain(data_dir + "/fake_sysfs/plain");
const perfscope::PmuRegistry hybrid(data_dir + "/fake_sysfs/hybrid");

perfscope::EventParseOptions options_for(const perfscope::PmuRegistry& registry) {
  perfscope::EventParseOptions options;
  options.pmus = &registry;
  options.tracefs_root = data_dir + "/fake_tracefs";
  return options;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const perfscope::PmuRegistry& registry = (data[0] & 1) ? hybrid : plain;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto options = options_for(registry);
  std::vector<perfscope::EventGroupSpec> groups;
  try {
    groups = perfscope::parse_event_list(text, options);
  } catch (const perfscope::EventSpecError& error) {
    if (error.position() > text.size()) std::abort();
    (void)error.with_caret();
    return 0;
  }
  for (const auto& group : groups) {
    if (group.events.empty()) std::abort();
    for (const auto& event : group.events) {
      std::string canonical = perfscope::canonical_event_string(event, &registry);
      std::vector<perfscope::EventGroupSpec> again;
      try {
        again = perfscope::parse_event_list(canonical, options);
      } catch (const perfscope::EventSpecError&) {
        std::abort();  // a canonical string the parser refuses
      }
      if (again.size() != 1 || again[0].events.size() != 1) std::abort();
      auto a = event.attr.raw();
      auto b = again[0].events[0].attr.raw();
      if (event.probe_target) a.config1 = b.config1 = 0;
      if (std::memcmp(&a, &b, sizeof a) != 0) std::abort();
    }
  }
  return 0;
}
