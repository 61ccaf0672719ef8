// EventAttr: a perf_event_attr as a value type, with a builder, static validation and a readable
// dump in the style of `perf --debug`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

class PERFSCOPE_EXPORT EventAttr {
 public:
  EventAttr() = default;
  explicit EventAttr(const abi::PerfEventAttr& raw) : raw_(raw) {}

  static EventAttr hardware(abi::HardwareEvent event);
  static EventAttr software(abi::SoftwareEvent event);
  static EventAttr hw_cache(abi::CacheId id, abi::CacheOp op, abi::CacheResult result);
  static EventAttr raw_event(std::uint64_t config);
  static EventAttr tracepoint(std::uint64_t tracepoint_id);
  static EventAttr breakpoint(std::uint64_t address, std::uint64_t length, std::uint32_t bp_type);
  static EventAttr dynamic_pmu(std::uint32_t pmu_type, std::uint64_t config);

  const abi::PerfEventAttr& raw() const noexcept { return raw_; }
  abi::PerfEventAttr& raw() noexcept { return raw_; }

  std::uint32_t type() const noexcept { return raw_.type; }
  std::uint64_t config() const noexcept { return raw_.config; }
  bool has(std::uint64_t flag) const noexcept { return (raw_.flags & flag) != 0; }
  unsigned precise_ip() const noexcept {
    return static_cast<unsigned>((raw_.flags & abi::attr_flag::precise_ip_mask) >>
                                 abi::attr_flag::precise_ip_shift);
  }

  EventAttr& set_type(std::uint32_t type) noexcept;
  EventAttr& set_config(std::uint64_t config) noexcept;
  EventAttr& set_config1(std::uint64_t value) noexcept;
  EventAttr& set_config2(std::uint64_t value) noexcept;
  EventAttr& set_config3(std::uint64_t value) noexcept;
  EventAttr& set_sample_period(std::uint64_t period) noexcept;  // clears freq
  EventAttr& set_sample_freq(std::uint64_t hz) noexcept;        // sets freq
  EventAttr& set_sample_type(std::uint64_t bits) noexcept;
  EventAttr& set_read_format(std::uint64_t bits) noexcept;
  EventAttr& set_flag(std::uint64_t flag, bool on = true) noexcept;
  EventAttr& set_precise_ip(unsigned level) noexcept;
  EventAttr& set_wakeup_events(std::uint32_t events) noexcept;    // clears watermark
  EventAttr& set_wakeup_watermark(std::uint32_t bytes) noexcept;  // sets watermark
  EventAttr& set_breakpoint(std::uint64_t address, std::uint64_t length,
                            std::uint32_t bp_type) noexcept;
  EventAttr& set_branch_sample_type(std::uint64_t bits) noexcept;
  EventAttr& set_sample_regs_user(std::uint64_t mask) noexcept;
  EventAttr& set_sample_stack_user(std::uint32_t bytes) noexcept;
  EventAttr& set_clockid(int clockid) noexcept;  // sets use_clockid
  EventAttr& set_sample_regs_intr(std::uint64_t mask) noexcept;
  EventAttr& set_aux_watermark(std::uint32_t bytes) noexcept;
  EventAttr& set_sample_max_stack(std::uint16_t frames) noexcept;
  EventAttr& set_aux_sample_size(std::uint32_t bytes) noexcept;
  EventAttr& set_aux_action(std::uint32_t bits) noexcept;
  EventAttr& set_sig_data(std::uint64_t value) noexcept;
  // Only user space (:u), only kernel (:k), as perf's modifiers set the exclude bits.
  EventAttr& count_user_only() noexcept;
  EventAttr& count_kernel_only() noexcept;
  // arm64 only: lets the task read the counter with mrs (UserPage) once kernel.perf_user_access
  // is 1, as a 64-bit counter or a 32-bit one. On other PMUs config1 means something else.
  enum class CounterWidth { bits32, bits64 };
  EventAttr& request_arm64_user_read(CounterWidth width) noexcept;

  // Problems the kernel would reject with EINVAL (or E2BIG/EOVERFLOW) that can be seen without
  // asking it, each a sentence naming the field and the fix. Empty when none are known.
  std::vector<std::string> validate() const;

  // One line per nonzero field, `perf --debug`-style, with symbolic names for types and bits.
  std::string dump() const;

  // Names of the fields set to nonzero values at or beyond `size` bytes: what a kernel that
  // knows only `size` bytes of the attr would not see.
  std::vector<std::string_view> fields_set_beyond(std::uint32_t size) const;

  friend bool operator==(const EventAttr& a, const EventAttr& b) noexcept;

 private:
  abi::PerfEventAttr raw_{};
};

// Symbolic names for dumps and messages.
PERFSCOPE_EXPORT std::string_view event_type_name(
    std::uint32_t type) noexcept;                                  // "PERF_TYPE_SOFTWARE", or ""
PERFSCOPE_EXPORT std::string describe_flags(std::uint64_t flags);  // "disabled|inherit|..."
PERFSCOPE_EXPORT std::string describe_sample_type(std::uint64_t bits);  // "IP|TID|..."
PERFSCOPE_EXPORT std::string describe_read_format(std::uint64_t bits);  // "TOTAL_TIME_ENABLED|..."

}  // namespace perfscope
