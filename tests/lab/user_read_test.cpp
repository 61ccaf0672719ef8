// User-space counter reads on the emulated PMU: mrs of PMXEVCNTR_EL0 (event counters) and
// PMCCNTR_EL0 (the cycle counter), 32- and 64-bit, bracketed by read(2); the fallback when
// kernel.perf_user_access is 0; and what a user-space read costs against read(2).
#include <gtest/gtest.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/reading.hpp"
#include "perfscope/core/user_page.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace {

using perfscope::Event;
using perfscope::EventAttr;
using perfscope::Reading;
using perfscope::ReadPath;
using perfscope::UserPage;
using Width = perfscope::EventAttr::CounterWidth;
namespace rf = perfscope::abi::read_format;

constexpr int bracketed_reads = 10'000;

// Sets kernel.perf_user_access for the life of the object, then puts the old value back.
class UserAccessSetting {
 public:
  explicit UserAccessSetting(bool enabled) : previous_(perfscope::sys::perf_user_access()) {
    result_ = perfscope::sys::set_perf_user_access(enabled);
  }
  ~UserAccessSetting() {
    if (previous_) perfscope::sys::set_perf_user_access(*previous_ != 0);
  }
  UserAccessSetting(const UserAccessSetting&) = delete;
  UserAccessSetting& operator=(const UserAccessSetting&) = delete;
  int result() const { return result_; }

 private:
  std::optional<std::int64_t> previous_;
  int result_ = 0;
};

Event open_user_readable(const char* text, Width width) {
  EventAttr attr = perfscope::parse_event_list(text).at(0).events.at(0).attr;
  attr.request_arm64_user_read(width);
  attr.set_read_format(rf::total_time_enabled | rf::total_time_running);
  return Event::open(attr);
}

struct Case {
  const char* event;
  Width width;
  std::uint16_t pmc_width;
  std::uint32_t index;  // 32: the cycle counter; 0: any event counter
};

class BracketedUserRead : public ::testing::TestWithParam<Case> {};

TEST_P(BracketedUserRead, LiesBetweenTwoSystemCallReads) {
  const Case& c = GetParam();
  UserAccessSetting access(true);
  ASSERT_EQ(access.result(), 0);
  Event event = open_user_readable(c.event, c.width);
  UserPage page = UserPage::map(event);
  auto caps = page.capabilities();
  EXPECT_TRUE(caps.user_rdpmc);
  EXPECT_TRUE(caps.user_time);
  EXPECT_TRUE(caps.user_time_short);
  EXPECT_EQ(caps.pmc_width, c.pmc_width);
  int user_space_reads = 0;
  Reading before;
  Reading after;
  for (int i = 0; i < bracketed_reads; ++i) {
    ASSERT_TRUE(event.read(before));
    auto middle = page.read();
    ASSERT_TRUE(event.read(after));
    ASSERT_TRUE(middle.ok);
    if (middle.path == ReadPath::user_space) ++user_space_reads;
    ASSERT_LE(before.value, middle.reading.value) << "read " << i;
    ASSERT_LE(middle.reading.value, after.value) << "read " << i;
    ASSERT_LE(before.enabled, middle.reading.enabled) << "read " << i;
    ASSERT_LE(middle.reading.enabled, after.enabled) << "read " << i;
    ASSERT_LE(before.running, middle.reading.running) << "read " << i;
    ASSERT_LE(middle.reading.running, after.running) << "read " << i;
  }
  std::uint32_t index = page.page().index;
  std::printf("pmu-lab: %s %u-bit: index %u, %d of %d reads from user space, last %llu\n", c.event,
              c.pmc_width, index, user_space_reads, bracketed_reads,
              static_cast<unsigned long long>(after.value));
  EXPECT_EQ(user_space_reads, bracketed_reads) << page.syscall_reason();
  if (c.index != 0) {
    EXPECT_EQ(index, c.index);
  } else {
    EXPECT_GE(index, 1U);
    EXPECT_LE(index, 31U);
  }
}

INSTANTIATE_TEST_SUITE_P(CountersAndWidths, BracketedUserRead,
                         ::testing::Values(Case{"instructions:u", Width::bits32, 32, 0},
                                           Case{"instructions:u", Width::bits64, 64, 0},
                                           Case{"cycles:u", Width::bits32, 32, 32},
                                           Case{"cycles:u", Width::bits64, 64, 32}),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           return std::string(param_info.param.event[0] == 'c' ? "cycles"
                                                                               : "instructions") +
                                  (param_info.param.width == Width::bits64 ? "_64bit" : "_32bit");
                         });

TEST(UserRead, WithPerfUserAccessOffReadsFallBackToTheSystemCallAndSaySo) {
  UserAccessSetting access(false);
  ASSERT_EQ(access.result(), 0);
  Event event = open_user_readable("instructions:u", Width::bits64);
  UserPage page = UserPage::map(event);
  Reading before;
  ASSERT_TRUE(event.read(before));
  auto result = page.read();
  Reading after;
  ASSERT_TRUE(event.read(after));
  ASSERT_TRUE(result.ok);
  EXPECT_EQ(result.path, ReadPath::syscall);
  EXPECT_EQ(page.page().index, 0U);
  std::string reason(page.syscall_reason());
  std::printf("pmu-lab: perf_user_access=0: read(2) because %s\n", reason.c_str());
  EXPECT_NE(reason.find("perf_user_access"), std::string::npos) << reason;
  EXPECT_LE(before.value, result.reading.value);
  EXPECT_LE(result.reading.value, after.value);
}

double now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

TEST(UserRead, UserSpaceReadIsAtLeastFiveTimesFasterThanReadSyscall) {
  UserAccessSetting access(true);
  Event event = open_user_readable("instructions:u", Width::bits64);
  UserPage page = UserPage::map(event);
  constexpr int reads = 20'000;
  std::uint64_t sink = 0;
  int user_space_reads = 0;
  double start = now_ns();
  for (int i = 0; i < reads; ++i) {
    auto result = page.read();
    sink += result.reading.value;
    user_space_reads += result.path == ReadPath::user_space;
  }
  double user_ns = (now_ns() - start) / reads;
  Reading reading;
  start = now_ns();
  for (int i = 0; i < reads; ++i) {
    event.read(reading);
    sink += reading.value;
  }
  double syscall_ns = (now_ns() - start) / reads;
  std::printf(
      "pmu-lab: read latency (emulated ns): user space %.1f, read(2) %.1f, ratio %.1fx "
      "(checksum %llu)\n",
      user_ns, syscall_ns, syscall_ns / user_ns, static_cast<unsigned long long>(sink & 0xff));
  EXPECT_EQ(user_space_reads, reads);
  EXPECT_GE(syscall_ns / user_ns, 5.0);
}

}  // namespace
