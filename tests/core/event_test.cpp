// Event against the real kernel: opening, every ioctl the manual lists, group reads, and counts
// that the kernel makes exact (page faults on fresh pages, breakpoint hits, tracepoint hits).
#include "perfscope/core/event.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <ctime>
#include <utility>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/sys/perf_syscalls.hpp"
#include "support/fresh_pages.hpp"
#include "support/test_support.hpp"

namespace pabi = perfscope::abi;
namespace flag = pabi::attr_flag;
namespace rf = pabi::read_format;
using perfscope::Event;
using perfscope::EventAttr;
using perfscope::Reading;

namespace {

using perfscope::testing::FaultWitness;
using perfscope::testing::FreshPages;

// Before a measured region: the code and stack it uses are resident, and the only faults
// counted are those on the fresh pages.
void warm_up_page_faults() { perfscope::testing::prepare_exact_fault_count(); }

EventAttr page_faults_attr() {
  return EventAttr::software(pabi::SoftwareEvent::page_faults).set_flag(flag::disabled);
}

std::uint64_t value_of(const Event& event) {
  Reading reading;
  EXPECT_TRUE(event.read(reading));
  return reading.value;
}

std::uint64_t clock_ns(clockid_t clock) {
  timespec now{};
  ::clock_gettime(clock, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// CPU time of this thread in ns, immune to a busy machine. It excludes the time the hypervisor
// stole and (with IRQ time accounting) interrupts; task-clock does not, so on a virtual machine
// task-clock may exceed it but never the wall time it was enabled for.
std::uint64_t thread_cpu_ns() { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

// Spins until this thread has used `ns` of CPU time since `start`.
void burn_cpu_until(std::uint64_t start, std::uint64_t ns) {
  volatile std::uint64_t sink = 0;
  while (thread_cpu_ns() - start < ns) {
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<std::uint64_t>(i);
  }
}

void call_getpid(int times) {
  for (int i = 0; i < times; ++i) ::syscall(SYS_getpid);
}

// The tracepoint attr for syscalls:sys_enter_getpid, or a reason to skip.
bool getpid_tracepoint(EventAttr& attr, std::string& why_not) {
  if (!perfscope::testing::tracefs_available()) {
    why_not = "tracefs is not available";
    return false;
  }
  long long id = perfscope::tracepoint_id("syscalls", "sys_enter_getpid");
  if (id < 0) {
    why_not = "no syscalls:sys_enter_getpid tracepoint (errno " + std::to_string(-id) + ")";
    return false;
  }
  attr = EventAttr::tracepoint(static_cast<std::uint64_t>(id)).set_flag(flag::disabled);
  return true;
}

alignas(8) volatile std::uint64_t watched_a = 0;
alignas(8) volatile std::uint64_t watched_b = 0;

void write_variable(volatile std::uint64_t& variable, int times) {
  for (int i = 0; i < times; ++i) variable = static_cast<std::uint64_t>(i);
}

EventAttr write_watchpoint(volatile std::uint64_t& variable) {
  return EventAttr::breakpoint(reinterpret_cast<std::uintptr_t>(&variable), 8,
                               pabi::breakpoint_type::write)
      .set_flag(flag::disabled);
}

}  // namespace

TEST(EventOpen, TaskClockOnSelfCountsCpuTime) {
  auto attr = EventAttr::software(pabi::SoftwareEvent::task_clock)
                  .set_flag(flag::disabled)
                  .set_read_format(rf::total_time_enabled | rf::total_time_running);
  Event event = Event::open(attr);
  ASSERT_TRUE(event.valid());
  EXPECT_GE(event.fd(), 0);
  EXPECT_FALSE(event.attr_truncated());
  EXPECT_EQ(event.attr().type(), 1u);
  constexpr std::uint64_t burn_ns = 20000000;
  std::uint64_t wall_before = clock_ns(CLOCK_MONOTONIC);
  std::uint64_t before = thread_cpu_ns();
  ASSERT_EQ(event.enable(), 0);
  burn_cpu_until(before, burn_ns);
  ASSERT_EQ(event.disable(), 0);
  std::uint64_t wall_after = clock_ns(CLOCK_MONOTONIC);
  Reading reading;
  ASSERT_TRUE(event.read(reading));
  // task-clock is the time this thread was on a CPU while enabled: all of the burn (up to 1 ms,
  // since the kernel reads its clocks at slightly different moments), and never more than the
  // wall time around enable and disable. (A CI run measured 21.58 ms of task-clock against
  // 20.02 ms of thread CPU time: time stolen by the hypervisor counts in the first only.)
  EXPECT_LE(reading.value, wall_after - wall_before);
  EXPECT_GE(reading.value, burn_ns - 1000000);
  EXPECT_GE(reading.enabled, reading.running);
  EXPECT_GT(reading.running, 0u);
  EXPECT_EQ(perfscope::scale(reading).status, perfscope::CountStatus::counted);
}

TEST(EventOpen, FdIsCloseOnExecAndMoveTransfersOwnership) {
  Event event = Event::open(page_faults_attr());
  int fd = event.fd();
  EXPECT_EQ(::fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  Event moved = std::move(event);
  EXPECT_FALSE(event.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(moved.fd(), fd);
  moved.close();
  EXPECT_FALSE(moved.valid());
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);  // closed for real
}

TEST(EventOpen, TryOpenReportsTheErrno) {
  int errnum = 0;
  Event bad = Event::try_open(EventAttr::software(pabi::SoftwareEvent::task_clock), -1, -1, nullptr,
                              0, errnum);
  EXPECT_FALSE(bad.valid());
  EXPECT_EQ(errnum, EINVAL);
  Event good = Event::try_open(page_faults_attr(), 0, -1, nullptr, 0, errnum);
  EXPECT_TRUE(good.valid());
  EXPECT_EQ(errnum, 0);
}

TEST(EventIoctl, EnableDisableResetGovernCounting) {
  warm_up_page_faults();
  constexpr std::size_t pages = 64;
  Event event = Event::open(page_faults_attr());
  {
    FreshPages before(pages);  // touched while disabled: not counted
    ASSERT_TRUE(before.valid());
    before.touch();
  }
  EXPECT_EQ(value_of(event), 0u);

  FreshPages first(pages);
  ASSERT_TRUE(first.valid());
  FaultWitness witness;
  ASSERT_EQ(event.enable(), 0);
  first.touch();
  ASSERT_EQ(event.disable(), 0);
  witness.stop();
  EXPECT_EQ(value_of(event), pages) << witness.outside(first);

  FreshPages while_disabled(pages);
  while_disabled.touch();
  EXPECT_EQ(value_of(event), pages);

  ASSERT_EQ(event.reset(), 0);
  EXPECT_EQ(value_of(event), 0u);

  FreshPages second(pages / 2);
  FaultWitness second_witness;
  ASSERT_EQ(event.enable(), 0);
  second.touch();
  ASSERT_EQ(event.disable(), 0);
  second_witness.stop();
  EXPECT_EQ(value_of(event), pages / 2) << second_witness.outside(second);
}

TEST(EventIoctl, UserOnlyPageFaultsCountTheSame) {
  // A page fault on a user address is charged to the user-mode registers that took it, so
  // excluding the kernel (what an unprivileged user must do at paranoid 2) loses none.
  warm_up_page_faults();
  constexpr std::size_t pages = 40;
  Event event = Event::open(page_faults_attr().count_user_only());
  FreshPages fresh(pages);
  FaultWitness witness;
  ASSERT_EQ(event.enable(), 0);
  fresh.touch();
  ASSERT_EQ(event.disable(), 0);
  witness.stop();
  EXPECT_EQ(value_of(event), pages) << witness.outside(fresh);
}

TEST(EventIoctl, IdMatchesTheIdInReads) {
  Event event = Event::open(page_faults_attr().set_read_format(rf::id));
  std::uint64_t id = event.id();
  EXPECT_NE(id, 0u);
  Reading reading;
  ASSERT_TRUE(event.read(reading));
  EXPECT_EQ(reading.id, id);
  Event other = Event::open(page_faults_attr());
  EXPECT_NE(other.id(), id);
}

TEST(EventIoctl, PeriodChangesASamplingEventAndRefusesBadValues) {
  Event sampling =
      Event::open(EventAttr::software(pabi::SoftwareEvent::task_clock).set_sample_period(1000000));
  sampling.set_period(2000000);
  EXPECT_EQ(sampling.attr().raw().sample_period_or_freq, 2000000u);
  try {
    sampling.set_period(0);
    ADD_FAILURE() << "a zero period was accepted";
  } catch (const perfscope::Error& error) {
    EXPECT_EQ(error.errnum(), EINVAL);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("PERF_EVENT_IOC_PERIOD"));
    EXPECT_THAT(error.diagnosis(), ::testing::HasSubstr("nonzero"));
  }
  EXPECT_EQ(sampling.attr().raw().sample_period_or_freq, 2000000u);
  // A counting event has no period to change.
  Event counting = Event::open(page_faults_attr());
  EXPECT_THROW(counting.set_period(1000), perfscope::Error);
}

TEST(EventIoctl, RefreshEnablesForThatManyOverflows) {
  warm_up_page_faults();
  // Every 5th page fault overflows; REFRESH(1) enables the event until the first overflow, after
  // which the kernel disables it (the disable runs from irq_work, so a fault or two may slip in).
  constexpr std::uint64_t period = 5;
  constexpr std::size_t pages = 64;
  Event event = Event::open(page_faults_attr().set_sample_period(period));
  FreshPages first(pages);
  ASSERT_EQ(event.refresh(1), 0);
  first.touch();
  std::uint64_t after_one = value_of(event);
  EXPECT_GE(after_one, period);
  EXPECT_LE(after_one, period + 2);

  // Still disabled: more faults are not counted.
  FreshPages ignored(pages);
  ignored.touch();
  EXPECT_EQ(value_of(event), after_one);

  // REFRESH(2) allows two more overflows.
  FreshPages second(pages);
  ASSERT_EQ(event.refresh(2), 0);
  second.touch();
  std::uint64_t after_two = value_of(event);
  // The period left over from the first run carries into the second, hence the slack below 2P.
  EXPECT_GE(after_two - after_one, 2 * period - 2);
  EXPECT_LE(after_two - after_one, 2 * period + 2);

  // The manual: REFRESH on a non-sampling (counting) event is EINVAL.
  Event counting = Event::open(page_faults_attr());
  EXPECT_EQ(counting.refresh(1), EINVAL);
}

TEST(EventIoctl, SetFilterOnATracepoint) {
  EventAttr attr;
  std::string why_not;
  if (!getpid_tracepoint(attr, why_not)) GTEST_SKIP() << why_not;
  constexpr int calls = 100;
  Event unfiltered = Event::open(attr);
  Event filtered = Event::open(attr);
  filtered.set_filter("common_pid == 1");  // this test is never pid 1
  ASSERT_EQ(unfiltered.enable(), 0);
  ASSERT_EQ(filtered.enable(), 0);
  call_getpid(calls);
  ASSERT_EQ(filtered.disable(), 0);
  ASSERT_EQ(unfiltered.disable(), 0);
  EXPECT_EQ(value_of(unfiltered), static_cast<std::uint64_t>(calls));
  EXPECT_EQ(value_of(filtered), 0u);

  // A filter that matches us counts every call again.
  Event own = Event::open(attr);
  own.set_filter("common_pid == " + std::to_string(::getpid()));
  ASSERT_EQ(own.enable(), 0);
  call_getpid(calls);
  ASSERT_EQ(own.disable(), 0);
  EXPECT_EQ(value_of(own), static_cast<std::uint64_t>(calls));

  // The kernel takes one filter per event: a second one is EEXIST.
  try {
    own.set_filter("common_pid == 1");
    ADD_FAILURE() << "a second filter was accepted";
  } catch (const perfscope::Error& error) {
    EXPECT_EQ(error.errnum(), EEXIST);
    EXPECT_THAT(error.diagnosis(), ::testing::HasSubstr("already has a filter"));
  }

  Event fresh = Event::open(attr);
  try {
    fresh.set_filter("no_such_field == 3");
    ADD_FAILURE() << "a filter on an unknown field was accepted";
  } catch (const perfscope::Error& error) {
    EXPECT_EQ(error.errnum(), EINVAL);
    EXPECT_THAT(error.diagnosis(), ::testing::HasSubstr("no_such_field"));
  }
}

TEST(EventIoctl, QueryBpfOnATracepointFindsNoPrograms) {
  EventAttr attr;
  std::string why_not;
  if (!getpid_tracepoint(attr, why_not)) GTEST_SKIP() << why_not;
  Event event = Event::open(attr);
  try {
    EXPECT_TRUE(event.query_bpf().empty());
  } catch (const perfscope::Error& error) {
    GTEST_SKIP() << "the kernel refuses QUERY_BPF: " << perfscope::errno_name(error.errnum());
  }
  // Only tracepoint-like events carry programs.
  Event software = Event::open(page_faults_attr());
  try {
    software.query_bpf();
    ADD_FAILURE() << "QUERY_BPF on a software event succeeded";
  } catch (const perfscope::Error& error) {
    EXPECT_EQ(error.errnum(), EINVAL);
  }
}

TEST(EventIoctl, ModifyAttributesMovesAWatchpoint) {
  if (auto problem = perfscope::testing::hardware_breakpoints_problem(); !problem.empty()) {
    GTEST_SKIP() << problem;
  }
  constexpr int writes_a = 25, writes_b = 17;
  Event event = Event::open(write_watchpoint(watched_a));
  ASSERT_EQ(event.enable(), 0);
  write_variable(watched_a, writes_a);
  write_variable(watched_b, writes_b);  // not watched yet
  EXPECT_EQ(value_of(event), static_cast<std::uint64_t>(writes_a));

  // The new attr's disabled bit decides whether the moved watchpoint keeps counting.
  event.modify_attributes(write_watchpoint(watched_b).set_flag(flag::disabled, false));
  EXPECT_EQ(event.attr().raw().config1, reinterpret_cast<std::uintptr_t>(&watched_b));
  write_variable(watched_a, writes_a);  // no longer watched
  EXPECT_EQ(value_of(event), static_cast<std::uint64_t>(writes_a));
  write_variable(watched_b, writes_b);
  ASSERT_EQ(event.disable(), 0);
  EXPECT_EQ(value_of(event), static_cast<std::uint64_t>(writes_a + writes_b));

  // Only breakpoints can be modified.
  Event software = Event::open(page_faults_attr());
  EXPECT_THROW(software.modify_attributes(page_faults_attr()), perfscope::Error);
}

TEST(EventIoctl, PrctlDisablesAndEnablesEveryEventOfThisProcess) {
  warm_up_page_faults();
  constexpr std::size_t pages = 32;
  Event event = Event::open(page_faults_attr());
  FreshPages first(pages), second(pages), third(pages);
  FaultWitness witness;
  ASSERT_EQ(event.enable(), 0);
  first.touch();
  ASSERT_EQ(perfscope::sys::task_perf_events_disable(), 0);
  second.touch();
  ASSERT_EQ(perfscope::sys::task_perf_events_enable(), 0);
  third.touch();
  ASSERT_EQ(event.disable(), 0);
  witness.stop();
  EXPECT_EQ(value_of(event), 2 * pages) << witness.outside({&first, &third});
}

TEST(EventGroup, GroupReadCarriesEveryMembersId) {
  warm_up_page_faults();
  constexpr std::size_t pages = 48;
  const std::uint64_t format = rf::group | rf::id | rf::total_time_enabled | rf::total_time_running;
  Event leader = Event::open(page_faults_attr().set_read_format(format));
  Event minor =
      Event::open(EventAttr::software(pabi::SoftwareEvent::page_faults_min).set_read_format(format),
                  0, -1, &leader);
  Event clock = Event::open(
      EventAttr::software(pabi::SoftwareEvent::task_clock).set_read_format(format), 0, -1, &leader);
  FreshPages fresh(pages);
  FaultWitness witness;
  ASSERT_EQ(leader.enable(true), 0);
  fresh.touch();
  ASSERT_EQ(leader.disable(true), 0);
  witness.stop();

  std::array<std::uint64_t, 16> words{};
  ssize_t bytes = leader.read_words(words);
  ASSERT_EQ(bytes, static_cast<ssize_t>(perfscope::read_size_bytes(format, 3)));
  std::array<Reading, 3> members{};
  ASSERT_EQ(
      perfscope::decode_read({words.data(), static_cast<std::size_t>(bytes) / 8}, format, members),
      3u);
  EXPECT_EQ(members[0].id, leader.id());
  EXPECT_EQ(members[1].id, minor.id());
  EXPECT_EQ(members[2].id, clock.id());
  EXPECT_EQ(members[0].value, pages) << witness.outside(fresh);
  EXPECT_EQ(members[1].value, pages) << witness.outside(fresh);
  EXPECT_GT(members[2].value, 0u);  // task-clock ns while the group was enabled
  EXPECT_LE(members[2].value, members[2].enabled);
  EXPECT_GT(members[0].enabled, 0u);
  EXPECT_EQ(members[0].enabled, members[0].running);

  // With PERF_FORMAT_GROUP a member's fd reads the whole group too, leader first.
  std::array<std::uint64_t, 16> member_words{};
  bytes = minor.read_words(member_words);
  ASSERT_EQ(bytes, static_cast<ssize_t>(perfscope::read_size_bytes(format, 3)));
  std::array<Reading, 3> again{};
  ASSERT_EQ(perfscope::decode_read({member_words.data(), static_cast<std::size_t>(bytes) / 8},
                                   format, again),
            3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(again[i].id, members[i].id);
    EXPECT_EQ(again[i].value, members[i].value);
  }

  // Without GROUP the member's fd reads only itself.
  Event single =
      Event::open(EventAttr::software(pabi::SoftwareEvent::page_faults_min).set_read_format(rf::id),
                  0, -1, &leader);
  Reading own;
  ASSERT_TRUE(single.read(own));
  EXPECT_EQ(own.id, single.id());
  EXPECT_EQ(own.value, 0u);  // joined after the group was disabled
}

TEST(EventExactCounts, WriteWatchpointCountsEveryWrite) {
  if (auto problem = perfscope::testing::hardware_breakpoints_problem(); !problem.empty()) {
    GTEST_SKIP() << problem;
  }
  constexpr int writes = 1000;
  Event event = Event::open(write_watchpoint(watched_a));
  ASSERT_EQ(event.enable(), 0);
  write_variable(watched_a, writes);
  [[maybe_unused]] std::uint64_t read_only = watched_a;  // reads do not trigger a W watchpoint
  ASSERT_EQ(event.disable(), 0);
  EXPECT_EQ(value_of(event), static_cast<std::uint64_t>(writes));
}

TEST(EventExactCounts, TracepointCountsEverySyscall) {
  EventAttr attr;
  std::string why_not;
  if (!getpid_tracepoint(attr, why_not)) GTEST_SKIP() << why_not;
  constexpr int calls = 1234;
  Event event = Event::open(attr);
  ASSERT_EQ(event.enable(), 0);
  call_getpid(calls);
  ASSERT_EQ(event.disable(), 0);
  EXPECT_EQ(value_of(event), static_cast<std::uint64_t>(calls));
}
