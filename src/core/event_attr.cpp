#include "perfscope/core/event_attr.hpp"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <utility>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace flag = abi::attr_flag;

EventAttr EventAttr::hardware(abi::HardwareEvent event) {
  return EventAttr{}
      .set_type(static_cast<std::uint32_t>(abi::EventType::hardware))
      .set_config(static_cast<std::uint64_t>(event));
}

EventAttr EventAttr::software(abi::SoftwareEvent event) {
  return EventAttr{}
      .set_type(static_cast<std::uint32_t>(abi::EventType::software))
      .set_config(static_cast<std::uint64_t>(event));
}

EventAttr EventAttr::hw_cache(abi::CacheId id, abi::CacheOp op, abi::CacheResult result) {
  return EventAttr{}
      .set_type(static_cast<std::uint32_t>(abi::EventType::hw_cache))
      .set_config(abi::hw_cache_config(id, op, result));
}

EventAttr EventAttr::raw_event(std::uint64_t config) {
  return EventAttr{}.set_type(static_cast<std::uint32_t>(abi::EventType::raw)).set_config(config);
}

EventAttr EventAttr::tracepoint(std::uint64_t tracepoint_id) {
  return EventAttr{}
      .set_type(static_cast<std::uint32_t>(abi::EventType::tracepoint))
      .set_config(tracepoint_id);
}

EventAttr EventAttr::breakpoint(std::uint64_t address, std::uint64_t length,
                                std::uint32_t bp_type) {
  return EventAttr{}
      .set_type(static_cast<std::uint32_t>(abi::EventType::breakpoint))
      .set_breakpoint(address, length, bp_type);
}

EventAttr EventAttr::dynamic_pmu(std::uint32_t pmu_type, std::uint64_t config) {
  return EventAttr{}.set_type(pmu_type).set_config(config);
}

EventAttr& EventAttr::set_type(std::uint32_t type) noexcept {
  raw_.type = type;
  return *this;
}
EventAttr& EventAttr::set_config(std::uint64_t config) noexcept {
  raw_.config = config;
  return *this;
}
EventAttr& EventAttr::set_config1(std::uint64_t value) noexcept {
  raw_.config1 = value;
  return *this;
}
EventAttr& EventAttr::request_arm64_user_read(CounterWidth width) noexcept {
  raw_.config1 |= abi::arm64_config1::user_read;
  if (width == CounterWidth::bits64) {
    raw_.config1 |= abi::arm64_config1::long_counter;
  } else {
    raw_.config1 &= ~abi::arm64_config1::long_counter;
  }
  return *this;
}
EventAttr& EventAttr::set_config2(std::uint64_t value) noexcept {
  raw_.config2 = value;
  return *this;
}
EventAttr& EventAttr::set_config3(std::uint64_t value) noexcept {
  raw_.config3 = value;
  return *this;
}
EventAttr& EventAttr::set_sample_period(std::uint64_t period) noexcept {
  raw_.sample_period_or_freq = period;
  raw_.flags &= ~flag::freq;
  return *this;
}
EventAttr& EventAttr::set_sample_freq(std::uint64_t hz) noexcept {
  raw_.sample_period_or_freq = hz;
  raw_.flags |= flag::freq;
  return *this;
}
EventAttr& EventAttr::set_sample_type(std::uint64_t bits) noexcept {
  raw_.sample_type = bits;
  return *this;
}
EventAttr& EventAttr::set_read_format(std::uint64_t bits) noexcept {
  raw_.read_format = bits;
  return *this;
}
EventAttr& EventAttr::set_flag(std::uint64_t bit, bool on) noexcept {
  raw_.flags = on ? (raw_.flags | bit) : (raw_.flags & ~bit);
  return *this;
}
EventAttr& EventAttr::set_precise_ip(unsigned level) noexcept {
  raw_.flags =
      (raw_.flags & ~flag::precise_ip_mask) |
      ((static_cast<std::uint64_t>(level) << flag::precise_ip_shift) & flag::precise_ip_mask);
  return *this;
}
EventAttr& EventAttr::set_wakeup_events(std::uint32_t events) noexcept {
  raw_.wakeup_events_or_watermark = events;
  raw_.flags &= ~flag::watermark;
  return *this;
}
EventAttr& EventAttr::set_wakeup_watermark(std::uint32_t bytes) noexcept {
  raw_.wakeup_events_or_watermark = bytes;
  raw_.flags |= flag::watermark;
  return *this;
}
EventAttr& EventAttr::set_breakpoint(std::uint64_t address, std::uint64_t length,
                                     std::uint32_t bp_type) noexcept {
  raw_.bp_type = bp_type;
  raw_.config1 = address;
  raw_.config2 = length;
  return *this;
}
EventAttr& EventAttr::set_branch_sample_type(std::uint64_t bits) noexcept {
  raw_.branch_sample_type = bits;
  return *this;
}
EventAttr& EventAttr::set_sample_regs_user(std::uint64_t mask) noexcept {
  raw_.sample_regs_user = mask;
  return *this;
}
EventAttr& EventAttr::set_sample_stack_user(std::uint32_t bytes) noexcept {
  raw_.sample_stack_user = bytes;
  return *this;
}
EventAttr& EventAttr::set_clockid(int clockid) noexcept {
  raw_.clockid = clockid;
  raw_.flags |= flag::use_clockid;
  return *this;
}
EventAttr& EventAttr::set_sample_regs_intr(std::uint64_t mask) noexcept {
  raw_.sample_regs_intr = mask;
  return *this;
}
EventAttr& EventAttr::set_aux_watermark(std::uint32_t bytes) noexcept {
  raw_.aux_watermark = bytes;
  return *this;
}
EventAttr& EventAttr::set_sample_max_stack(std::uint16_t frames) noexcept {
  raw_.sample_max_stack = frames;
  return *this;
}
EventAttr& EventAttr::set_aux_sample_size(std::uint32_t bytes) noexcept {
  raw_.aux_sample_size = bytes;
  return *this;
}
EventAttr& EventAttr::set_aux_action(std::uint32_t bits) noexcept {
  raw_.aux_action = bits;
  return *this;
}
EventAttr& EventAttr::set_sig_data(std::uint64_t value) noexcept {
  raw_.sig_data = value;
  return *this;
}
EventAttr& EventAttr::count_user_only() noexcept {
  raw_.flags = (raw_.flags & ~flag::exclude_user) | flag::exclude_kernel | flag::exclude_hv;
  return *this;
}
EventAttr& EventAttr::count_kernel_only() noexcept {
  raw_.flags = (raw_.flags & ~flag::exclude_kernel) | flag::exclude_user | flag::exclude_hv;
  return *this;
}

bool operator==(const EventAttr& a, const EventAttr& b) noexcept {
  return std::memcmp(&a.raw_, &b.raw_, sizeof a.raw_) == 0;
}

namespace {

struct NamedBit {
  std::uint64_t bit;
  std::string_view name;
};

constexpr std::array flag_names{
    NamedBit{flag::disabled, "disabled"},
    NamedBit{flag::inherit, "inherit"},
    NamedBit{flag::pinned, "pinned"},
    NamedBit{flag::exclusive, "exclusive"},
    NamedBit{flag::exclude_user, "exclude_user"},
    NamedBit{flag::exclude_kernel, "exclude_kernel"},
    NamedBit{flag::exclude_hv, "exclude_hv"},
    NamedBit{flag::exclude_idle, "exclude_idle"},
    NamedBit{flag::mmap, "mmap"},
    NamedBit{flag::comm, "comm"},
    NamedBit{flag::freq, "freq"},
    NamedBit{flag::inherit_stat, "inherit_stat"},
    NamedBit{flag::enable_on_exec, "enable_on_exec"},
    NamedBit{flag::task, "task"},
    NamedBit{flag::watermark, "watermark"},
    NamedBit{flag::mmap_data, "mmap_data"},
    NamedBit{flag::sample_id_all, "sample_id_all"},
    NamedBit{flag::exclude_host, "exclude_host"},
    NamedBit{flag::exclude_guest, "exclude_guest"},
    NamedBit{flag::exclude_callchain_kernel, "exclude_callchain_kernel"},
    NamedBit{flag::exclude_callchain_user, "exclude_callchain_user"},
    NamedBit{flag::mmap2, "mmap2"},
    NamedBit{flag::comm_exec, "comm_exec"},
    NamedBit{flag::use_clockid, "use_clockid"},
    NamedBit{flag::context_switch, "context_switch"},
    NamedBit{flag::write_backward, "write_backward"},
    NamedBit{flag::namespaces, "namespaces"},
    NamedBit{flag::ksymbol, "ksymbol"},
    NamedBit{flag::bpf_event, "bpf_event"},
    NamedBit{flag::aux_output, "aux_output"},
    NamedBit{flag::cgroup, "cgroup"},
    NamedBit{flag::text_poke, "text_poke"},
    NamedBit{flag::build_id, "build_id"},
    NamedBit{flag::inherit_thread, "inherit_thread"},
    NamedBit{flag::remove_on_exec, "remove_on_exec"},
    NamedBit{flag::sigtrap, "sigtrap"},
};

namespace sf = abi::sample_format;
constexpr std::array sample_type_names{
    NamedBit{sf::ip, "IP"},
    NamedBit{sf::tid, "TID"},
    NamedBit{sf::time, "TIME"},
    NamedBit{sf::addr, "ADDR"},
    NamedBit{sf::read, "READ"},
    NamedBit{sf::callchain, "CALLCHAIN"},
    NamedBit{sf::id, "ID"},
    NamedBit{sf::cpu, "CPU"},
    NamedBit{sf::period, "PERIOD"},
    NamedBit{sf::stream_id, "STREAM_ID"},
    NamedBit{sf::raw, "RAW"},
    NamedBit{sf::branch_stack, "BRANCH_STACK"},
    NamedBit{sf::regs_user, "REGS_USER"},
    NamedBit{sf::stack_user, "STACK_USER"},
    NamedBit{sf::weight, "WEIGHT"},
    NamedBit{sf::data_src, "DATA_SRC"},
    NamedBit{sf::identifier, "IDENTIFIER"},
    NamedBit{sf::transaction, "TRANSACTION"},
    NamedBit{sf::regs_intr, "REGS_INTR"},
    NamedBit{sf::phys_addr, "PHYS_ADDR"},
    NamedBit{sf::aux, "AUX"},
    NamedBit{sf::cgroup, "CGROUP"},
    NamedBit{sf::data_page_size, "DATA_PAGE_SIZE"},
    NamedBit{sf::code_page_size, "CODE_PAGE_SIZE"},
    NamedBit{sf::weight_struct, "WEIGHT_STRUCT"},
};

namespace rf = abi::read_format;
constexpr std::array read_format_names{
    NamedBit{rf::total_time_enabled, "TOTAL_TIME_ENABLED"},
    NamedBit{rf::total_time_running, "TOTAL_TIME_RUNNING"},
    NamedBit{rf::id, "ID"},
    NamedBit{rf::group, "GROUP"},
    NamedBit{rf::lost, "LOST"},
};

template <std::size_t N>
std::string describe_bits(std::uint64_t bits, const std::array<NamedBit, N>& names) {
  std::string text;
  for (const auto& named : names) {
    if ((bits & named.bit) == 0) continue;
    if (!text.empty()) text += '|';
    text += named.name;
    bits &= ~named.bit;
  }
  if (bits != 0) {
    if (!text.empty()) text += '|';
    text += fmt::format("{:#x}", bits);
  }
  return text;
}

}  // namespace

std::string_view event_type_name(std::uint32_t type) noexcept {
  switch (type) {
    case 0: return "PERF_TYPE_HARDWARE";
    case 1: return "PERF_TYPE_SOFTWARE";
    case 2: return "PERF_TYPE_TRACEPOINT";
    case 3: return "PERF_TYPE_HW_CACHE";
    case 4: return "PERF_TYPE_RAW";
    case 5: return "PERF_TYPE_BREAKPOINT";
    default: return "";
  }
}

std::string describe_flags(std::uint64_t flags) {
  std::string text = describe_bits(flags & ~flag::precise_ip_mask, flag_names);
  if (auto precise = (flags & flag::precise_ip_mask) >> flag::precise_ip_shift) {
    if (!text.empty()) text += '|';
    text += fmt::format("precise_ip={}", precise);
  }
  return text;
}

std::string describe_sample_type(std::uint64_t bits) {
  return describe_bits(bits, sample_type_names);
}
std::string describe_read_format(std::uint64_t bits) {
  return describe_bits(bits, read_format_names);
}

std::string EventAttr::dump() const {
  const auto& a = raw_;
  std::string out = "perf_event_attr:\n";
  auto line = [&out](std::string_view name, std::string value) {
    out += fmt::format("  {:<32} {}\n", name, value);
  };
  auto number = [&](std::string_view name, std::uint64_t value) {
    if (value != 0) line(name, fmt::format("{}", value));
  };
  auto hex = [&](std::string_view name, std::uint64_t value) {
    if (value != 0) line(name, fmt::format("{:#x}", value));
  };
  std::string_view type_name = event_type_name(a.type);
  line("type", type_name.empty() ? fmt::format("{} (dynamic PMU)", a.type)
                                 : fmt::format("{} ({})", a.type, type_name));
  line("size", fmt::format("{}", a.size));
  line("config", fmt::format("{:#x}", a.config));
  if (a.sample_period_or_freq != 0) {
    line(has(flag::freq) ? "sample_freq" : "sample_period",
         fmt::format("{}", a.sample_period_or_freq));
  }
  if (a.sample_type) line("sample_type", describe_sample_type(a.sample_type));
  if (a.read_format) line("read_format", describe_read_format(a.read_format));
  for (const auto& named : flag_names) {
    if (a.flags & named.bit) line(named.name, "1");
  }
  number("precise_ip", precise_ip());
  if (a.flags & flag::reserved_mask) hex("reserved flag bits", a.flags & flag::reserved_mask);
  number(has(flag::watermark) ? "wakeup_watermark" : "wakeup_events", a.wakeup_events_or_watermark);
  bool is_breakpoint = a.type == static_cast<std::uint32_t>(abi::EventType::breakpoint);
  number("bp_type", a.bp_type);
  hex(is_breakpoint ? "bp_addr" : "config1", a.config1);
  if (is_breakpoint) {
    number("bp_len", a.config2);
  } else {
    hex("config2", a.config2);
  }
  hex("branch_sample_type", a.branch_sample_type);
  hex("sample_regs_user", a.sample_regs_user);
  number("sample_stack_user", a.sample_stack_user);
  if (has(flag::use_clockid) || a.clockid != 0) line("clockid", fmt::format("{}", a.clockid));
  hex("sample_regs_intr", a.sample_regs_intr);
  number("aux_watermark", a.aux_watermark);
  number("sample_max_stack", a.sample_max_stack);
  number("aux_sample_size", a.aux_sample_size);
  hex("aux_action", a.aux_action);
  hex("sig_data", a.sig_data);
  hex("config3", a.config3);
  return out;
}

std::vector<std::string_view> EventAttr::fields_set_beyond(std::uint32_t size) const {
  struct Field {
    std::size_t offset;
    std::string_view name;
    bool set;
  };
  const auto& a = raw_;
  const Field fields[] = {
      {offsetof(abi::PerfEventAttr, config2), "config2", a.config2 != 0},
      {offsetof(abi::PerfEventAttr, branch_sample_type), "branch_sample_type",
       a.branch_sample_type != 0},
      {offsetof(abi::PerfEventAttr, sample_regs_user), "sample_regs_user", a.sample_regs_user != 0},
      {offsetof(abi::PerfEventAttr, sample_stack_user), "sample_stack_user",
       a.sample_stack_user != 0},
      {offsetof(abi::PerfEventAttr, clockid), "clockid", a.clockid != 0},
      {offsetof(abi::PerfEventAttr, sample_regs_intr), "sample_regs_intr", a.sample_regs_intr != 0},
      {offsetof(abi::PerfEventAttr, aux_watermark), "aux_watermark", a.aux_watermark != 0},
      {offsetof(abi::PerfEventAttr, sample_max_stack), "sample_max_stack", a.sample_max_stack != 0},
      {offsetof(abi::PerfEventAttr, aux_sample_size), "aux_sample_size", a.aux_sample_size != 0},
      {offsetof(abi::PerfEventAttr, aux_action), "aux_action", a.aux_action != 0},
      {offsetof(abi::PerfEventAttr, sig_data), "sig_data", a.sig_data != 0},
      {offsetof(abi::PerfEventAttr, config3), "config3", a.config3 != 0},
  };
  std::vector<std::string_view> names;
  for (const auto& field : fields) {
    if (field.offset >= size && field.set) names.push_back(field.name);
  }
  return names;
}

std::vector<std::string> EventAttr::validate() const {
  std::vector<std::string> problems;
  const auto& a = raw_;
  if (a.size != 0 && a.size < abi::attr_size::ver0) {
    problems.push_back(
        fmt::format("size {} is below the smallest attr ({} bytes)", a.size, abi::attr_size::ver0));
  }
  if (a.flags & flag::reserved_mask) {
    problems.push_back(
        fmt::format("reserved flag bits {:#x} are set; clear them", a.flags & flag::reserved_mask));
  }
  if (a.read_format & ~abi::read_format::all) {
    problems.push_back(
        fmt::format("read_format has unknown bits {:#x}", a.read_format & ~abi::read_format::all));
  }
  std::uint64_t known_sample = (1ULL << abi::sample_format::known_bits) - 1;
  if (a.sample_type & ~known_sample) {
    problems.push_back(
        fmt::format("sample_type has unknown bits {:#x}", a.sample_type & ~known_sample));
  }
  if ((a.sample_type & abi::sample_format::weight) &&
      (a.sample_type & abi::sample_format::weight_struct)) {
    problems.push_back("sample_type sets both WEIGHT and WEIGHT_STRUCT; choose one");
  }
  if (has(flag::sigtrap) && !has(flag::remove_on_exec)) {
    problems.push_back(
        "sigtrap requires remove_on_exec (so the signal cannot reach a new program "
        "after exec); set remove_on_exec too");
  }
  if (has(flag::inherit_thread) && !has(flag::inherit)) {
    problems.push_back("inherit_thread requires inherit; set inherit too");
  }
  if (has(flag::freq) && a.sample_period_or_freq != 0) {
    if (auto max_rate = sys::read_sysctl("perf_event_max_sample_rate");
        max_rate && a.sample_period_or_freq > static_cast<std::uint64_t>(*max_rate)) {
      problems.push_back(fmt::format(
          "sample_freq {} Hz is above kernel.perf_event_max_sample_rate ({} Hz); lower it or "
          "raise the sysctl",
          a.sample_period_or_freq, *max_rate));
    }
  }
  if (!has(flag::freq) && (a.sample_period_or_freq >> 63) != 0) {
    problems.push_back("sample_period has bit 63 set; periods must be below 2^63");
  }
  if (a.aux_action & abi::aux_action::reserved_mask) {
    problems.push_back(fmt::format("aux_action has reserved bits {:#x}",
                                   a.aux_action & abi::aux_action::reserved_mask));
  }
  if (a.reserved_2 != 0) problems.push_back("__reserved_2 must be zero");
  if (a.type == static_cast<std::uint32_t>(abi::EventType::breakpoint)) {
    auto bp = a.bp_type;
    bool valid_type = bp == abi::breakpoint_type::read || bp == abi::breakpoint_type::write ||
                      bp == abi::breakpoint_type::read_write || bp == abi::breakpoint_type::execute;
    if (!valid_type) {
      problems.push_back(fmt::format("bp_type {} is not one of R (1), W (2), RW (3) or X (4)", bp));
    }
    if (bp == abi::breakpoint_type::execute && a.config2 != sizeof(long)) {
      problems.push_back(fmt::format("execute breakpoints need bp_len {} (sizeof(long)), not {}",
                                     sizeof(long), a.config2));
    } else if (valid_type && bp != abi::breakpoint_type::execute &&
               (a.config2 == 0 || a.config2 > 8)) {
      problems.push_back(fmt::format("bp_len {} is not 1..8 bytes", a.config2));
    }
  }
  if (a.type == static_cast<std::uint32_t>(abi::EventType::software) &&
      a.config >= abi::software_event_count) {
    problems.push_back(fmt::format("software event config {} is unknown (0..{} exist)", a.config,
                                   abi::software_event_count - 1));
  }
  if (a.type == static_cast<std::uint32_t>(abi::EventType::hardware) &&
      (a.config & abi::hw_event_mask) >= abi::hardware_event_count) {
    problems.push_back(fmt::format("hardware event config {} is unknown (0..{} exist)",
                                   a.config & abi::hw_event_mask, abi::hardware_event_count - 1));
  }
  if (a.type == static_cast<std::uint32_t>(abi::EventType::hw_cache)) {
    auto config = a.config & abi::hw_event_mask;
    if ((config & 0xff) >= abi::cache_id_count || ((config >> 8) & 0xff) >= abi::cache_op_count ||
        ((config >> 16) & 0xff) >= abi::cache_result_count || (config >> 24) != 0) {
      problems.push_back(
          fmt::format("hw-cache config {:#x} is not id | op<<8 | result<<16 with "
                      "id<7, op<3, result<2",
                      config));
    }
  }
  if ((a.sample_type & abi::sample_format::callchain) && a.sample_max_stack != 0) {
    if (auto max_stack = sys::read_sysctl("perf_event_max_stack");
        max_stack && a.sample_max_stack > *max_stack) {
      problems.push_back(
          fmt::format("sample_max_stack {} exceeds kernel.perf_event_max_stack ({}): EOVERFLOW",
                      a.sample_max_stack, *max_stack));
    }
  }
  if ((a.sample_type & abi::sample_format::stack_user) && (a.sample_stack_user % 8) != 0) {
    problems.push_back(
        fmt::format("sample_stack_user {} must be a multiple of 8", a.sample_stack_user));
  }
  return problems;
}

}  // namespace perfscope
