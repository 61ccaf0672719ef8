#include "perfscope/embed/counters.hpp"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/perf_event_mmap_page.hpp"
#include "perfscope/core/counter_instructions.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

using abi::EventType;

namespace {

std::uint64_t monotonic_ns() noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// The kernel keeps CLOCK_MONOTONIC with the timestamp counter itself: its rate is constant and
// the same on every CPU.
bool kernel_clock_is_timestamp_counter() {
  if (!arch::has_user_counter_reads) return false;
  auto source =
      sys::read_text_file("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  if (!source) return false;
  std::string_view name(*source);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.remove_suffix(1);
  return name == "tsc" || name == "arch_sys_counter";
}

// Software-context events (software, tracepoints, breakpoints) may join a hardware group: the
// kernel schedules them with it, so their counts cover the same time on the PMU.
bool is_software_context(const EventAttr& attr) {
  auto type = static_cast<EventType>(attr.type());
  return type == EventType::software || type == EventType::tracepoint ||
         type == EventType::breakpoint;
}

// The PMU an event counts on, as a grouping key: generic hardware and raw events of a
// non-hybrid machine share the CPU's PMU; hybrid copies carry their PMU in config's high bits.
std::uint64_t pmu_key(const EventAttr& attr) {
  auto type = static_cast<EventType>(attr.type());
  if (type == EventType::hardware || type == EventType::hw_cache) {
    std::uint64_t extended = attr.config() >> 32;
    return extended == 0 ? static_cast<std::uint64_t>(EventType::raw) : extended;
  }
  return attr.type();
}

}  // namespace

Counters::Counters(std::string_view events, CountersOptions options) : options_(options) {
  owner_ = ::pthread_self();
  tsc_clock_ = kernel_clock_is_timestamp_counter();
  clock_origin_ns_ = monotonic_ns();
  clock_origin_ticks_ = tsc_clock_ ? arch::read_timestamp_counter() : 0;
  std::vector<EventGroupSpec> parsed = parse_event_list(events);

  // Counts in the order of the string; groups: braced ones as written, the others one per PMU.
  std::vector<EventGroupSpec> groups;
  std::vector<std::vector<std::size_t>> group_counts;
  std::vector<std::uint64_t> group_keys;  // PMU key of each unbraced-event group, 0 for braced
  std::vector<std::pair<const EventSpec*, std::size_t>> software;  // placed after the PMUs
  auto add_count = [&](const EventSpec& spec, std::size_t group) {
    EventCount count;
    count.name = spec.text.empty() ? spec.name : spec.text;
    count.group = group;
    count.scale = spec.scale;
    count.unit = spec.unit;
    counts_.push_back(std::move(count));
    return counts_.size() - 1;
  };
  for (const auto& group : parsed) {
    if (group.braced && group.events.size() > 1) {
      groups.push_back(EventGroupSpec{{}, true});
      group_counts.emplace_back();
      group_keys.push_back(0);
      for (const auto& spec : group.events) {
        groups.back().events.push_back(spec);
        group_counts.back().push_back(add_count(spec, groups.size() - 1));
      }
      continue;
    }
    for (const auto& spec : group.events) {
      if (is_software_context(spec.attr)) {
        software.emplace_back(&spec, add_count(spec, 0));
        continue;
      }
      std::uint64_t key = pmu_key(spec.attr) + 1;
      auto found = std::find(group_keys.begin(), group_keys.end(), key);
      std::size_t index = static_cast<std::size_t>(found - group_keys.begin());
      if (found == group_keys.end()) {
        groups.push_back(EventGroupSpec{{}, false});
        group_counts.emplace_back();
        group_keys.push_back(key);
      }
      groups[index].events.push_back(spec);
      group_counts[index].push_back(add_count(spec, index));
    }
  }
  if (!software.empty()) {
    // With the CPU's group when there is one (the first group of unbraced hardware events).
    auto core = std::find_if(group_keys.begin(), group_keys.end(),
                             [](std::uint64_t key) { return key != 0; });
    std::size_t index = static_cast<std::size_t>(core - group_keys.begin());
    if (core == group_keys.end()) {
      groups.push_back(EventGroupSpec{{}, false});
      group_counts.emplace_back();
      group_keys.push_back(0);
    }
    for (auto [spec, count_index] : software) {
      groups[index].events.push_back(*spec);
      group_counts[index].push_back(count_index);
      counts_[count_index].group = index;
    }
  }
  group_count_ = groups.size();
  for (const auto& group : groups) largest_group_ = std::max(largest_group_, group.events.size());
  read_buffer_.assign(3 + largest_group_, 0);

  // Opened by the one counting engine; Counters then drives the groups' fds itself on its hot
  // paths (one ioctl per region edge, one read(2) or rdpmc per group).
  CountingOptions counting;
  counting.inherit = options_.scope == CountersScope::process;
  counting.skip_unsupported = options_.skip_unsupported;
  counting.user_space_when_restricted = options_.user_space_when_restricted;
  counting.identify_members = false;
  // The session's counts are in group order, the Counters' in the order of the string.
  std::vector<std::size_t> mine;
  for (const auto& members : group_counts) mine.insert(mine.end(), members.begin(), members.end());
  session_ = std::make_unique<CountingSession>(std::move(groups),
                                               options_.scope == CountersScope::process
                                                   ? Target::process(::getpid())
                                                   : Target::calling_thread(),
                                               counting);
  session_->open();
  const auto& opened = session_->read();  // names, support and reasons as opened
  for (std::size_t i = 0; i < opened.size(); ++i) {
    EventCount& count = counts_[mine[i]];
    count.name = opened[i].name;
    count.supported = opened[i].supported;
    count.open_errno = opened[i].open_errno;
    count.unsupported_reason = opened[i].unsupported_reason;
  }
  notices_ = session_->notices();
  for (auto& open : session_->open_groups()) {
    OpenGroup group;
    group.leader = &open.events[0];
    for (std::size_t m = 0; m < open.events.size(); ++m) {
      group.members.push_back(&open.events[m]);
      group.count_index.push_back(mine[open.count_index[m]]);
    }
    map_pages(group);
    groups_.push_back(std::move(group));
  }
  for (const auto& count : counts_) {
    if (!count.supported) {
      notices_.push_back(count.name + " is not supported here: " + count.unsupported_reason);
    }
  }
  std::size_t n = counts_.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!counts_[i].supported) unsupported_.push_back(i);
  }
  origin_.assign(n, Reading{});
  stopped_.assign(n, Reading{});
  current_.assign(n, Reading{});
  nested_baselines_.assign(n * max_region_depth, Reading{});
}

Counters::~Counters() = default;

void Counters::map_pages(OpenGroup& group) {
  if (options_.scope != CountersScope::calling_thread) {
    group.no_user_reads =
        "the counters count the whole process (inherit): only read(2) sums every thread.";
    return;
  }
  if (!options_.user_space_reads) {
    group.no_user_reads = "user-space reads are off (CountersOptions::user_space_reads).";
    return;
  }
  if (!arch::has_user_counter_reads) {
    group.no_user_reads = "perfscope knows no user-space counter instruction on this CPU.";
    return;
  }
  for (const Event* event : group.members) {
    if (is_software_context(event->attr())) {
      group.no_user_reads =
          "the group has a software event (task-clock, page-faults, a tracepoint): it has no "
          "hardware counter to read in user space.";
      return;
    }
  }
  for (const Event* event : group.members) {
    sys::MemoryMap page;
    if (page.map(event->fd(), sys::page_size(), sys::MapAccess::read_only) < 0) {
      group.pages.clear();
      group.no_user_reads =
          "the events' pages could not be mapped (RLIMIT_MEMLOCK or kernel.perf_event_mlock_kb).";
      return;
    }
    group.pages.push_back(std::move(page));
  }
}

// The leader alone: a group is scheduled only while its leader is enabled, and a group read
// reports the leader's times, so the members need no ioctl of their own. PERF_IOC_FLAG_GROUP
// would cost twice as much, and on Linux 6.18 a task-clock member toggled that way counts only
// its first enabled period (tests/embed/counters_test.cpp keeps task-clock as a member).
void Counters::enable_groups() noexcept {
  for (auto& group : groups_) group.leader->enable();
}

void Counters::disable_groups() noexcept {
  for (auto& group : groups_) group.leader->disable();
}

// Region edges are timestamped with the timestamp counter where the kernel's own clock is that
// counter: one rdtsc costs a fraction of a vDSO clock_gettime, which would be a few percent of
// an empty region. Ticks become nanoseconds when a report is made, at the rate measured against
// CLOCK_MONOTONIC since construction.
std::uint64_t Counters::now_ticks() const noexcept {
  return tsc_clock_ ? arch::read_timestamp_counter() : monotonic_ns();
}

std::uint64_t Counters::ticks_to_ns(std::uint64_t ticks) const noexcept {
  if (!tsc_clock_) return ticks;
  std::uint64_t ns = monotonic_ns() - clock_origin_ns_;
  std::uint64_t elapsed_ticks = arch::read_timestamp_counter() - clock_origin_ticks_;
  if (elapsed_ticks == 0) return 0;
  return static_cast<std::uint64_t>(static_cast<double>(ticks) * static_cast<double>(ns) /
                                    static_cast<double>(elapsed_ticks));
}

void Counters::start() noexcept {
  if (running_) return;
  started_tick_ = now_ticks();
  enable_groups();
  running_ = true;
  started_by_region_ = false;
}

void Counters::stop() noexcept {
  if (!running_) return;
  disable_groups();
  elapsed_ticks_ += now_ticks() - started_tick_;
  ++runs_;
  running_ = false;
  started_by_region_ = false;
  read_all(stopped_);
}

void Counters::reset() noexcept {
  has_origin_ = true;
  if (running_) {
    read_all(origin_);
    started_tick_ = now_ticks();
  } else {
    std::copy(stopped_.begin(), stopped_.end(), origin_.begin());
  }
  elapsed_ticks_ = 0;
  runs_ = 0;
  for (auto& region : regions_) {
    std::fill(region.sums.begin(), region.sums.end(), Reading{});
    region.runs = 0;
    region.elapsed_ticks = 0;
  }
}

bool Counters::read_all(std::vector<Reading>& out) noexcept {
  return read_groups(out, false).status == ReadStatus::ok;
}

// One pass over the groups: in calling-thread scope every event is in exactly one group and is
// assigned; in process scope it is summed over the threads. Events that never opened are not
// touched (they stay zero in the Counters' own vectors; read_into zeroes them in the caller's).
LiveRead Counters::read_groups(std::span<Reading> out, bool user_space) noexcept {
  LiveRead result;
  bool summing = options_.scope == CountersScope::process;
  if (summing)
    std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(counts_.size()), Reading{});
  bool all_user_space = user_space && !groups_.empty();
  bool times_current = true;
  bool ok = true;
  for (const auto& group : groups_) {
    if (user_space && read_group_user_space(group, out, times_current)) continue;
    all_user_space = false;
    ssize_t bytes = group.leader->read_words(read_buffer_);
    std::size_t words = bytes > 0 ? static_cast<std::size_t>(bytes) / sizeof(std::uint64_t) : 0;
    if (words < 3) {
      ok = false;
      continue;
    }
    const std::uint64_t* word = read_buffer_.data();
    std::size_t members = std::min<std::size_t>({word[0], words - 3, group.count_index.size()});
    for (std::size_t m = 0; m < members; ++m) {
      Reading& reading = out[group.count_index[m]];
      if (summing) {
        reading.value += word[3 + m];
        reading.enabled += word[1];
        reading.running += word[2];
      } else {
        reading.value = word[3 + m];
        reading.enabled = word[1];
        reading.running = word[2];
      }
    }
  }
  result.status = ok ? ReadStatus::ok : ReadStatus::failed;
  result.path = all_user_space ? ReadPath::user_space : ReadPath::syscall;
  result.events = counts_.size();
  result.times_current = times_current;
  return result;
}

bool Counters::read_group_user_space(const OpenGroup& group, std::span<Reading> out,
                                     bool& times_current) const noexcept {
  if (group.pages.empty() || !::pthread_equal(::pthread_self(), owner_)) return false;
  std::uint64_t enabled = 0;
  std::uint64_t running = 0;
  for (std::size_t m = 0; m < group.pages.size(); ++m) {
    const auto& page = *static_cast<const abi::PerfEventMmapPage*>(group.pages[m].data());
    UserPageSample sample =
        read_user_page(page, arch::read_hardware_counter, arch::read_timestamp_counter);
    if (!sample.consistent || !sample.counter_read) return false;
    if (m == 0) {
      // The group's times are its leader's (as a group read(2) reports them): a member's own
      // times also run while the leader is disabled. Without cap_user_time the page's times
      // date from the last context switch; they still give the exact scale when the group has
      // run the whole time it was enabled (it is on the counters now and was at that switch).
      if (!sample.times_current && sample.enabled != sample.running) return false;
      times_current = times_current && sample.times_current;
      enabled = sample.enabled;
      running = sample.running;
    }
    Reading& reading = out[group.count_index[m]];
    reading.value = sample.count;
    reading.enabled = enabled;
    reading.running = running;
  }
  return true;
}

LiveRead Counters::read_into(std::span<Reading> out) noexcept {
  std::size_t n = counts_.size();
  if (out.size() < n) {
    LiveRead result;
    result.status = ReadStatus::buffer_too_small;
    return result;
  }
  for (std::size_t index : unsupported_) out[index] = Reading{};
  LiveRead result = read_groups(out, true);
  if (has_origin_) {
    for (std::size_t i = 0; i < n; ++i) out[i] = out[i].since(origin_[i]);
  }
  return result;
}

std::string_view Counters::syscall_reason(std::size_t index) const noexcept {
  for (const auto& group : groups_) {
    if (std::find(group.count_index.begin(), group.count_index.end(), index) ==
        group.count_index.end()) {
      continue;
    }
    if (group.pages.empty()) return group.no_user_reads;
    if (!::pthread_equal(::pthread_self(), owner_)) {
      return "called from a thread other than the one the counters count.";
    }
    namespace cap = abi::mmap_capability;
    for (const auto& mapping : group.pages) {
      const auto& page = *static_cast<const abi::PerfEventMmapPage*>(mapping.data());
      std::uint64_t capabilities = detail::load_once(page.capabilities);
      if (!(capabilities & cap::user_rdpmc)) {
        return "the kernel does not let user space read this counter (cap_user_rdpmc is 0: "
               "<pmu>/rdpmc in sysfs is 0, or arm64 kernel.perf_user_access is 0).";
      }
      if (detail::load_once(page.index) == 0) {
        return "the event is not on a hardware counter now (stopped, or multiplexed out).";
      }
    }
    return {};
  }
  return "no such event, or it is not supported here.";
}

// The end of an outermost region of one thread: each event is in one group, so its delta since
// the last stop goes straight from the read buffer into the region's sums. (The general path
// decodes into current_ first; this one spares a pass on the region's hot path.)
void Counters::accumulate_since_stop(std::vector<Reading>& sums) noexcept {
  for (const auto& group : groups_) {
    ssize_t bytes = group.leader->read_words(read_buffer_);
    std::size_t words = bytes > 0 ? static_cast<std::size_t>(bytes) / sizeof(std::uint64_t) : 0;
    if (words < 3) continue;
    const std::uint64_t* word = read_buffer_.data();
    std::size_t members = std::min<std::size_t>({word[0], words - 3, group.count_index.size()});
    for (std::size_t m = 0; m < members; ++m) {
      std::size_t index = group.count_index[m];
      Reading& last = stopped_[index];
      Reading& sum = sums[index];
      sum.value += word[3 + m] - last.value;
      sum.enabled += word[1] - last.enabled;
      sum.running += word[2] - last.running;
      last.value = word[3 + m];
      last.enabled = word[1];
      last.running = word[2];
    }
  }
}

RegionId Counters::region(std::string_view name) {
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    if (regions_[i].name == name) return RegionId{static_cast<std::uint32_t>(i)};
  }
  RegionTotals totals;
  totals.name = std::string(name);
  totals.sums.assign(counts_.size(), Reading{});
  regions_.push_back(std::move(totals));
  return RegionId{static_cast<std::uint32_t>(regions_.size() - 1)};
}

void Counters::add_delta(std::vector<Reading>& sums, const std::vector<Reading>& now,
                         const std::vector<Reading>& before) noexcept {
  for (std::size_t i = 0; i < sums.size(); ++i) {
    sums[i].value += now[i].value - before[i].value;
    sums[i].enabled += now[i].enabled - before[i].enabled;
    sums[i].running += now[i].running - before[i].running;
  }
}

void Counters::begin_region(RegionId) noexcept {
  if (depth_ >= max_region_depth) {
    ++depth_;  // too deep to count: kept only so that the ends pair up
    return;
  }
  std::uint64_t now = now_ticks();
  if (depth_ == 0 && !running_) {
    started_tick_ = now;
    enable_groups();
    running_ = true;
    started_by_region_ = true;
  } else {
    read_all(current_);
    std::copy(current_.begin(), current_.end(),
              nested_baselines_.begin() + static_cast<std::ptrdiff_t>(depth_ * counts_.size()));
  }
  region_started_tick_[depth_] = now;
  ++depth_;
}

void Counters::end_region(RegionId id) noexcept {
  if (depth_ == 0) return;
  if (depth_ > max_region_depth) {
    --depth_;
    return;
  }
  --depth_;
  RegionTotals& totals = regions_[id.index];
  std::uint64_t now = 0;
  if (depth_ == 0 && started_by_region_) {
    disable_groups();
    now = now_ticks();
    running_ = false;
    started_by_region_ = false;
    elapsed_ticks_ += now - started_tick_;
    ++runs_;
    if (options_.scope == CountersScope::calling_thread) {
      accumulate_since_stop(totals.sums);
    } else {
      read_all(current_);
      add_delta(totals.sums, current_, stopped_);
      stopped_.swap(current_);
    }
  } else {
    read_all(current_);
    now = now_ticks();
    auto baseline =
        nested_baselines_.begin() + static_cast<std::ptrdiff_t>(depth_ * counts_.size());
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      const Reading& before = *(baseline + static_cast<std::ptrdiff_t>(i));
      totals.sums[i].value += current_[i].value - before.value;
      totals.sums[i].enabled += current_[i].enabled - before.enabled;
      totals.sums[i].running += current_[i].running - before.running;
    }
  }
  ++totals.runs;
  totals.elapsed_ticks += now - region_started_tick_[depth_];
}

CounterReport Counters::make_report(std::string name, const std::vector<Reading>& readings,
                                    std::uint64_t elapsed_ns, std::uint64_t runs) const {
  std::vector<EventCount> counts = counts_;
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i].reading = readings[i];
  return make_counter_report(std::move(name), std::move(counts), elapsed_ns, runs);
}

CounterReport Counters::report() {
  std::vector<Reading> readings(counts_.size());
  std::uint64_t elapsed = elapsed_ticks_;
  if (running_) {
    read_all(readings);
    elapsed += now_ticks() - started_tick_;
  } else {
    readings = stopped_;
  }
  for (std::size_t i = 0; i < readings.size(); ++i) readings[i] = readings[i].since(origin_[i]);
  return make_report({}, readings, ticks_to_ns(elapsed), runs_);
}

CounterReport Counters::region_report(std::string_view name) const {
  for (const auto& region : regions_) {
    if (region.name == name) {
      return make_report(region.name, region.sums, ticks_to_ns(region.elapsed_ticks), region.runs);
    }
  }
  return make_report(std::string(name), std::vector<Reading>(counts_.size()), 0, 0);
}

std::vector<CounterReport> Counters::region_reports() const {
  std::vector<CounterReport> reports;
  reports.reserve(regions_.size());
  for (const auto& region : regions_) {
    reports.push_back(
        make_report(region.name, region.sums, ticks_to_ns(region.elapsed_ticks), region.runs));
  }
  return reports;
}

}  // namespace perfscope
