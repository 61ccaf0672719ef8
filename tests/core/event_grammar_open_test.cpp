// Events parsed from the grammar, opened on this machine and counting what they must: software
// events through pmu/.../ syntax, exact breakpoint hits, exact tracepoint hits through a glob,
// msr/tsc, and a cpu PMU event built from its sysfs terms.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/pmu_registry.hpp"
#include "support/test_support.hpp"

using perfscope::Event;
using perfscope::EventSpec;
using perfscope::parse_event_list;
using perfscope::PmuRegistry;
using perfscope::Reading;

namespace {

EventSpec only(const std::string& text) {
  auto groups = parse_event_list(text);
  EXPECT_EQ(groups.size(), 1u);
  return groups.at(0).events.at(0);
}

std::uint64_t value_of(const Event& event) {
  Reading reading;
  EXPECT_TRUE(event.read(reading));
  return reading.value;
}

volatile long watched_variable = 0;

[[gnu::noinline]] long spin(long rounds) {
  long sum = 0;
  for (long i = 0; i < rounds; ++i) {
    sum += i;
    asm volatile("" : "+r"(sum));
  }
  return sum;
}

}  // namespace

TEST(GrammarOpens, SoftwareEventThroughPmuSyntax) {
  auto spec = only("software/config=1/u");  // task-clock
  EXPECT_EQ(spec.attr.type(), 1u);
  EXPECT_EQ(spec.attr.config(), 1u);
  auto event = Event::open(spec.attr);
  event.enable();
  spin(2'000'000);
  event.disable();
  EXPECT_GT(value_of(event), 100'000u);  // ns of task clock: at least 0.1 ms of spinning
}

TEST(GrammarOpens, BreakpointCountsEveryWrite) {
  auto spec =
      only(fmt::format("mem:{:#x}/8:w:u", reinterpret_cast<std::uintptr_t>(&watched_variable)));
  int errnum = 0;
  auto event = Event::try_open(spec.attr, 0, -1, nullptr, 0, errnum);
  if (!event.valid()) GTEST_SKIP() << "breakpoints do not open here (errno " << errnum << ")";
  if (auto problem = perfscope::testing::hardware_breakpoints_problem(); !problem.empty()) {
    GTEST_SKIP() << problem;
  }
  event.enable();
  for (int i = 0; i < 1000; ++i) watched_variable = i;
  event.disable();
  EXPECT_EQ(value_of(event), 1000u);
}

TEST(GrammarOpens, TracepointGlobCountsEveryCall) {
  if (!perfscope::testing::tracefs_available()) GTEST_SKIP() << "tracefs is not available";
  if (perfscope::tracepoint_id("syscalls", "sys_enter_getpid") < 0) {
    GTEST_SKIP() << "no readable syscalls tracepoints (CONFIG_FTRACE_SYSCALLS, or not root)";
  }
  auto groups = parse_event_list("syscalls:sys_enter_getp*id:u");
  std::map<std::string, Event> events;
  for (const auto& group : groups) {
    const auto& spec = group.events.at(0);
    events.emplace(spec.name, Event::open(spec.attr));
  }
  ASSERT_TRUE(events.count("syscalls:sys_enter_getpid"));
  ASSERT_TRUE(events.count("syscalls:sys_enter_getppid"));
  for (auto& [name, event] : events) event.enable();
  for (int i = 0; i < 100; ++i) ::syscall(SYS_getpid);
  for (int i = 0; i < 37; ++i) ::syscall(SYS_getppid);
  for (auto& [name, event] : events) event.disable();
  EXPECT_EQ(value_of(events.at("syscalls:sys_enter_getpid")), 100u);
  EXPECT_EQ(value_of(events.at("syscalls:sys_enter_getppid")), 37u);
  if (events.count("syscalls:sys_enter_getpgid")) {
    EXPECT_EQ(value_of(events.at("syscalls:sys_enter_getpgid")), 0u);
  }
}

TEST(GrammarOpens, MsrTsc) {
  const auto* msr = PmuRegistry::system().find("msr");
  if (!msr || !msr->find_alias("tsc")) GTEST_SKIP() << "no msr PMU with a tsc event here";
  for (const char* text : {"msr/tsc/", "tsc"}) {
    SCOPED_TRACE(text);
    auto spec = only(text);
    EXPECT_EQ(spec.attr.type(), msr->type);
    int errnum = 0;
    auto event = Event::try_open(spec.attr, 0, -1, nullptr, 0, errnum);
    if (!event.valid()) GTEST_SKIP() << "msr/tsc does not open here (errno " << errnum << ")";
    event.enable();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    spin(100'000);
    event.disable();
    // The TSC ticks at hundreds of MHz at least while the task runs.
    EXPECT_GT(value_of(event), 10'000u);
  }
}

TEST(GrammarOpens, CpuPmuEventFromItsSysfsTerms) {
  if (!perfscope::testing::hardware_counters_available()) {
    GTEST_SKIP() << "no hardware counters here";
  }
  const auto* cpu = PmuRegistry::system().find("cpu");
  const auto* alias = cpu ? cpu->find_alias("instructions") : nullptr;
  if (!alias) GTEST_SKIP() << "no cpu/instructions alias in sysfs";
  // The alias's own terms (event=0xc0 on x86) through the format/ bit ranges: a raw PMU event.
  auto spec = only(fmt::format("cpu/{}/u", alias->terms));
  EXPECT_EQ(spec.attr.type(), cpu->type);
  auto event = Event::open(spec.attr);
  event.enable();
  spin(1'000'000);
  event.disable();
  // Each round retires at least an add, a compare and a branch.
  EXPECT_GE(value_of(event), 3'000'000u);
  EXPECT_LT(value_of(event), 30'000'000u);
}
