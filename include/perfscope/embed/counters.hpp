// Counters: perf counters around regions of the calling program, from an event string in the
// CLI's grammar ("cycles,instructions,task-clock", "{cycles,instructions}:u,page-faults").
//
// Correct by construction where embedding APIs usually miscount: events the string does not
// group are grouped per PMU (software events join the CPU's group, so that cycles per task-clock
// second compares counts of the same time on the PMU); every group is enabled, disabled and read
// at once; every read carries TOTAL_TIME_ENABLED and _RUNNING so that multiplexed counts are
// scaled; in process scope every thread the process already has is counted, not only threads
// created later. At perf_event_paranoid 2 without CAP_PERFMON the events count user space only
// (exclude_kernel), which notices() says, and nothing larger than one page per event is mapped.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/reading.hpp"
#include "perfscope/core/user_page.hpp"
#include "perfscope/embed/counter_report.hpp"
#include "perfscope/engine/counting_session.hpp"
#include "perfscope/export.hpp"
#include "perfscope/sys/memory_map.hpp"

namespace perfscope {

enum class CountersScope : std::uint8_t {
  calling_thread,  // the thread that constructs the Counters, without its future children
  process,         // every thread of the process: those it has now and those it creates later
};

struct PERFSCOPE_EXPORT CountersOptions {
  CountersScope scope = CountersScope::calling_thread;
  // When the kernel refuses to count kernel space (perf_event_paranoid 2 without CAP_PERFMON),
  // count user space only instead of failing; notices() records it. Events whose string asks
  // for kernel space alone (":k") still fail with the diagnosis.
  bool user_space_when_restricted = true;
  // Events the machine cannot count (no PMU in a VM, unknown generic event) are reported as not
  // supported instead of failing the construction.
  bool skip_unsupported = true;
  // Map one read-only page per hardware event (calling-thread scope) so that live reads take
  // rdpmc instead of read(2) where the kernel allows it.
  bool user_space_reads = true;
};

// The handle of a named region (Counters::region): an index, cheap to pass to ScopedRegion.
struct RegionId {
  std::uint32_t index = 0;
};

enum class ReadStatus : std::uint8_t {
  ok,
  buffer_too_small,  // the span has fewer elements than the Counters has events
  failed,            // a read(2) failed: the events' fds are not open any more
};

struct LiveRead {
  ReadStatus status = ReadStatus::failed;
  // user_space when every group was read from its pages (no system call), syscall otherwise.
  ReadPath path = ReadPath::syscall;
  std::size_t events = 0;  // elements of the span written
  // False when a group read in user space had no cap_user_time (a VM whose clock is not the
  // TSC): its enabled/running date from the last context switch. They are equal then (the group
  // ran all the time), so scale() is exact, but they are no clock.
  bool times_current = true;
};

class PERFSCOPE_EXPORT Counters {
 public:
  // Parses the events (perfscope::EventSpecError on a malformed string) and opens them, disabled
  // (perfscope::Error with a diagnosis when one that must count cannot be opened).
  explicit Counters(std::string_view events, CountersOptions options = {});
  ~Counters();
  Counters(const Counters&) = delete;
  Counters& operator=(const Counters&) = delete;

  // Enables every group (its leader: the members are scheduled with it). No-op when running.
  void start() noexcept;
  // Disables every group and reads it once, so that the totals and the next region's baseline
  // are current. No-op when not running.
  void stop() noexcept;
  bool running() const noexcept { return running_; }
  // Zeroes the totals, the live reads and every region. Done by moving the baseline, not with
  // PERF_EVENT_IOC_RESET, which zeroes the counts but not the times that scale them.
  void reset() noexcept;

  // The totals since construction or reset(): every start/stop and every region, with the
  // counters read now if they are running.
  CounterReport report();

  // Named regions (ScopedRegion): accumulate the counts of every run under one name.
  RegionId region(std::string_view name);
  void begin_region(RegionId id) noexcept;
  void end_region(RegionId id) noexcept;
  // The accumulated counts of one region (an empty report with runs == 0 when it never ran), and
  // of every region in the order of their first use.
  CounterReport region_report(std::string_view name) const;
  std::vector<CounterReport> region_reports() const;

  // The live cumulative counts since construction or reset(), one Reading per event in the
  // order of events(), without stopping the counters: from the events' pages (rdpmc) when the
  // kernel allows it for every member of a group and this is the counted thread, by one read(2)
  // per group otherwise. Scale each with perfscope::scale(). No allocation, no exception.
  LiveRead read_into(std::span<Reading> out) noexcept;

  // The events in the order of the event string (name, group, scale/unit, supported).
  const std::vector<EventCount>& events() const noexcept { return counts_; }
  std::size_t group_count() const noexcept { return group_count_; }
  CountersScope scope() const noexcept { return options_.scope; }
  // Things the caller should know about what is counted ("counting user space only: ..."), one
  // sentence each. Empty when everything counts as written.
  const std::vector<std::string>& notices() const noexcept { return notices_; }
  // Why a live read of the group containing event `index` takes read(2); empty when it can be
  // read in user space now.
  std::string_view syscall_reason(std::size_t index) const noexcept;

 private:
  // A group the session opened, as the hot paths use it.
  struct OpenGroup {
    Event* leader = nullptr;               // the session's
    std::vector<const Event*> members;     // [0] is the leader
    std::vector<std::size_t> count_index;  // index into counts_ of each member
    std::vector<sys::MemoryMap> pages;     // one per member when user-space reads may work
    std::string_view no_user_reads;        // why pages is empty
  };
  struct RegionTotals {
    std::string name;
    std::vector<Reading> sums;
    std::uint64_t runs = 0;
    std::uint64_t elapsed_ticks = 0;
  };
  static constexpr std::size_t max_region_depth = 16;

  void map_pages(OpenGroup& group);
  void enable_groups() noexcept;
  std::uint64_t now_ticks() const noexcept;
  std::uint64_t ticks_to_ns(std::uint64_t ticks) const noexcept;
  void disable_groups() noexcept;
  bool read_all(std::vector<Reading>& out) noexcept;
  LiveRead read_groups(std::span<Reading> out, bool user_space) noexcept;
  bool read_group_user_space(const OpenGroup& group, std::span<Reading> out,
                             bool& times_current) const noexcept;
  void accumulate_since_stop(std::vector<Reading>& sums) noexcept;
  void add_delta(std::vector<Reading>& sums, const std::vector<Reading>& now,
                 const std::vector<Reading>& before) noexcept;
  CounterReport make_report(std::string name, const std::vector<Reading>& readings,
                            std::uint64_t elapsed_ns, std::uint64_t runs) const;

  CountersOptions options_;
  std::unique_ptr<CountingSession> session_;  // owns the events
  std::vector<EventCount> counts_;
  std::vector<OpenGroup> groups_;
  std::size_t group_count_ = 0;
  std::size_t largest_group_ = 0;
  std::vector<std::uint64_t> read_buffer_;
  std::vector<std::string> notices_;
  pthread_t owner_{};
  bool tsc_clock_ = false;  // wall time in timestamp-counter ticks (else in ns)
  std::uint64_t clock_origin_ns_ = 0;
  std::uint64_t clock_origin_ticks_ = 0;

  bool running_ = false;
  std::uint64_t started_tick_ = 0;
  std::uint64_t elapsed_ticks_ = 0;  // totals: enabled wall time before the current run
  std::uint64_t runs_ = 0;
  std::vector<std::size_t> unsupported_;  // indices of events that could not be opened
  bool has_origin_ = false;               // reset() was called: live reads subtract origin_
  std::vector<Reading> origin_;           // cumulative counts at reset()
  std::vector<Reading> stopped_;          // cumulative counts at the last stop
  std::vector<Reading> current_;          // scratch of the last read

  std::vector<RegionTotals> regions_;
  std::size_t depth_ = 0;
  bool started_by_region_ = false;
  std::vector<Reading> nested_baselines_;  // max_region_depth x events
  std::uint64_t region_started_tick_[max_region_depth] = {};
};

}  // namespace perfscope
