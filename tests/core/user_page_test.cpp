// UserPage: the seqlock read protocol on synthetic pages (torn reads, odd locks, pmc_width
// masking and wrap, time extrapolation), then real events on this machine: a software event is
// served by read(2) and says so; a hardware event with cap_user_rdpmc is read in user space
// between two read(2)s.
#include "perfscope/core/user_page.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/perf_event_mmap_page.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

namespace pabi = perfscope::abi;
namespace cap = pabi::mmap_capability;
namespace rf = pabi::read_format;
using perfscope::Event;
using perfscope::EventAttr;
using perfscope::PageClock;
using perfscope::ReadPath;
using perfscope::UserPage;
using perfscope::UserPageSample;

namespace {

__extension__ using Wide = unsigned __int128;

std::uint64_t exact_multiply_shift(std::uint64_t cycles, std::uint32_t mult, unsigned shift) {
  return static_cast<std::uint64_t>((Wide{cycles} * mult) >> shift);
}

std::unique_ptr<pabi::PerfEventMmapPage> blank_page() {
  auto page = std::make_unique<pabi::PerfEventMmapPage>();
  std::memset(page.get(), 0, sizeof *page);
  page->version = 0;
  page->compat_version = 0;
  return page;
}

std::uint64_t no_timestamp() { return 0; }

TEST(SignExtendCounter, KeepsTheValidBitsAndExtendsTheirSign) {
  using perfscope::sign_extend_counter;
  EXPECT_EQ(sign_extend_counter(0xFFFF'FFFF'FFF0ULL, 48), -16);
  EXPECT_EQ(sign_extend_counter(0x7FFF'FFFF'FFFFULL, 48), 0x7FFF'FFFF'FFFFLL);
  // arm64: a 32-bit counter on 64-bit hardware has UNKNOWN upper bits.
  EXPECT_EQ(sign_extend_counter(0xDEAD'BEEF'0000'0005ULL, 32), 5);
  EXPECT_EQ(sign_extend_counter(0x1234'5678'8000'0000ULL, 32), -2147483648LL);
  EXPECT_EQ(sign_extend_counter(0x8000'0000'0000'0001ULL, 64),
            static_cast<std::int64_t>(0x8000'0000'0000'0001ULL));
  EXPECT_EQ(sign_extend_counter(42, 0), 42);
}

TEST(MultiplyShift, EqualsTheFullWidthProduct) {
  const std::uint64_t cycles[] = {
      0, 1, 999, 1'000'000'007ULL, 0x0123'4567'89AB'CDEFULL, 0xFFFF'FFFF'FFFF'FFFFULL};
  const std::uint32_t mults[] = {1, 2, 0x8000'0000U, 1'398'101U, 0xFFFF'FFFFU};
  const unsigned shifts[] = {0, 1, 10, 22, 31};
  for (auto c : cycles) {
    for (auto m : mults) {
      for (auto s : shifts) {
        EXPECT_EQ(perfscope::multiply_shift(c, m, static_cast<std::uint16_t>(s)),
                  exact_multiply_shift(c, m, s))
            << "cycles " << c << " mult " << m << " shift " << s;
      }
    }
  }
}

TEST(ReadUserPage, IndexZeroMeansNoCounterAndTheCounterIsNotTouched) {
  auto page = blank_page();
  page->capabilities = cap::user_rdpmc;
  page->index = 0;
  page->offset = 12345;
  int counter_reads = 0;
  UserPageSample sample = perfscope::read_user_page(
      *page,
      [&](std::uint32_t) {
        ++counter_reads;
        return std::uint64_t{1};
      },
      no_timestamp);
  EXPECT_TRUE(sample.consistent);
  EXPECT_FALSE(sample.counter_read);
  EXPECT_EQ(sample.count, 12345U);
  EXPECT_EQ(counter_reads, 0);
}

TEST(ReadUserPage, WithoutCapUserRdpmcTheCounterIsNotRead) {
  auto page = blank_page();
  page->capabilities = 0;
  page->index = 3;
  page->offset = 7;
  int counter_reads = 0;
  UserPageSample sample = perfscope::read_user_page(
      *page,
      [&](std::uint32_t) {
        ++counter_reads;
        return std::uint64_t{1};
      },
      no_timestamp);
  EXPECT_FALSE(sample.counter_read);
  EXPECT_EQ(counter_reads, 0);
}

TEST(ReadUserPage, ReadsCounterIndexMinusOneAndAddsTheOffset) {
  auto page = blank_page();
  page->capabilities = cap::user_rdpmc;
  page->index = 3;
  page->pmc_width = 48;
  page->offset = 1'000'000;
  std::uint32_t asked = 99;
  UserPageSample sample = perfscope::read_user_page(
      *page,
      [&](std::uint32_t counter) {
        asked = counter;
        return std::uint64_t{250};
      },
      no_timestamp);
  EXPECT_TRUE(sample.consistent);
  EXPECT_TRUE(sample.counter_read);
  EXPECT_EQ(asked, 2U);
  EXPECT_EQ(sample.index, 3U);
  EXPECT_EQ(sample.count, 1'000'250U);
  EXPECT_EQ(sample.retries, 0U);
}

TEST(ReadUserPage, FortyEightBitCounterWrapsThroughZero) {
  // The kernel starts a counter at minus its period and keeps offset = count - (that value):
  // the count must grow by 150 as the hardware value goes from -100 through the wrap to 50.
  auto page = blank_page();
  page->capabilities = cap::user_rdpmc;
  page->index = 1;
  page->pmc_width = 48;
  page->offset = 5'000 + 100;
  std::uint64_t hardware = (1ULL << 48) - 100;
  auto read = [&] {
    return perfscope::read_user_page(
               *page, [&](std::uint32_t) { return hardware; }, no_timestamp)
        .count;
  };
  EXPECT_EQ(read(), 5'000U);
  hardware = 50;
  EXPECT_EQ(read(), 5'150U);
  // Bits above the width are ignored, whatever the hardware returns there.
  hardware = 0xABCD'0000'0000'0032ULL;
  EXPECT_EQ(read(), 5'150U);
}

TEST(ReadUserPage, ThirtyTwoBitCounterIgnoresUnknownUpperBits) {
  auto page = blank_page();
  page->capabilities = cap::user_rdpmc;
  page->index = 32;  // arm64's cycle counter
  page->pmc_width = 32;
  page->offset = -static_cast<std::int64_t>(0x7FFF'FFF0);  // the kernel's view after a wrap
  std::uint32_t asked = 0;
  UserPageSample sample = perfscope::read_user_page(
      *page,
      [&](std::uint32_t counter) {
        asked = counter;
        return std::uint64_t{0xFFFF'FFFF'7FFF'FFFFULL};
      },
      no_timestamp);
  EXPECT_EQ(asked, 31U);
  EXPECT_EQ(sample.count, 0xFU);
}

TEST(ReadUserPage, TornReadIsRetriedAndTheSecondPassWins) {
  auto page = blank_page();
  page->capabilities = cap::user_rdpmc;
  page->index = 2;
  page->pmc_width = 64;
  page->lock = 10;
  page->offset = 100;
  int calls = 0;
  UserPageSample sample = perfscope::read_user_page(
      *page,
      [&](std::uint32_t) -> std::uint64_t {
        if (++calls == 1) {
          // The kernel rewrote the page (an interrupt) while the counter was read.
          page->lock += 2;
          page->offset = 200;
          return 1'000;
        }
        return 2'000;
      },
      no_timestamp);
  EXPECT_TRUE(sample.consistent);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(sample.retries, 1U);
  EXPECT_EQ(sample.count, 2'200U);
}

TEST(ReadUserPage, OddLockIsAnUpdateInProgress) {
  auto page = blank_page();
  page->capabilities = cap::user_rdpmc;
  page->index = 1;
  page->pmc_width = 64;
  page->lock = 7;
  int calls = 0;
  UserPageSample sample = perfscope::read_user_page(
      *page,
      [&](std::uint32_t) -> std::uint64_t {
        if (++calls == 1) page->lock = 8;  // the update finishes
        return 5;
      },
      no_timestamp);
  EXPECT_TRUE(sample.consistent);
  EXPECT_EQ(sample.retries, 1U);
  EXPECT_EQ(calls, 2);
}

TEST(ReadUserPage, LockThatNeverSettlesGivesUpAfterTheRetryLimit) {
  auto page = blank_page();
  page->capabilities = cap::user_rdpmc;
  page->index = 1;
  page->pmc_width = 64;
  std::uint32_t calls = 0;
  UserPageSample sample = perfscope::read_user_page(
      *page,
      [&](std::uint32_t) -> std::uint64_t {
        ++calls;
        page->lock += 2;
        return 5;
      },
      no_timestamp);
  EXPECT_FALSE(sample.consistent);
  EXPECT_EQ(calls, perfscope::max_seqlock_retries);
  EXPECT_EQ(sample.retries, perfscope::max_seqlock_retries);
}

TEST(ReadUserPage, TimesAreExtrapolatedWithTheClockFields) {
  auto page = blank_page();
  page->capabilities = cap::user_rdpmc | cap::user_time;
  page->index = 1;
  page->pmc_width = 64;
  page->time_enabled = 1'000;
  page->time_running = 600;
  page->time_mult = 2048;  // 2 ns per cycle with shift 10
  page->time_shift = 10;
  page->time_offset = static_cast<std::uint64_t>(-5'000);  // the page was written at 5000 ns
  int timestamp_reads = 0;
  UserPageSample sample = perfscope::read_user_page(
      *page, [](std::uint32_t) { return std::uint64_t{0}; },
      [&] {
        ++timestamp_reads;
        return std::uint64_t{10'000};
      });
  EXPECT_EQ(timestamp_reads, 1);
  // delta = -5000 + 10000 * 2 = 15000 ns since the update, on both times while on a counter.
  EXPECT_EQ(sample.enabled, 16'000U);
  EXPECT_EQ(sample.running, 15'600U);

  // Off the counter (index 0) the event is not running: only enabled time grows.
  page->index = 0;
  sample = perfscope::read_user_page(
      *page, [](std::uint32_t) { return std::uint64_t{0}; }, [] { return std::uint64_t{10'000}; });
  EXPECT_EQ(sample.enabled, 16'000U);
  EXPECT_EQ(sample.running, 600U);
}

TEST(ReadUserPage, TimeExtrapolationMatchesTheFullWidthArithmetic) {
  auto page = blank_page();
  page->capabilities = cap::user_time;
  page->index = 1;
  page->time_enabled = 123'456'789;
  page->time_running = 123'456'789;
  page->time_mult = 1'398'101;  // a 3 GHz TSC: 1/3 ns per cycle at shift 22
  page->time_shift = 22;
  const std::uint64_t now_ns = 0x0000'2345'6789'ABCDULL;
  page->time_offset = static_cast<std::uint64_t>(-static_cast<std::int64_t>(now_ns));
  const std::uint64_t cycles = 0x0001'2345'6789'ABCDULL;
  UserPageSample sample = perfscope::read_user_page(
      *page, [](std::uint32_t) { return std::uint64_t{0}; }, [&] { return cycles; });
  std::uint64_t delta = exact_multiply_shift(cycles, 1'398'101, 22) - now_ns;
  EXPECT_EQ(sample.enabled, 123'456'789 + delta);
  EXPECT_EQ(sample.running, 123'456'789 + delta);
}

TEST(ReadUserPage, ShortTimeCounterIsWidenedAcrossItsWrap) {
  // cap_user_time_short (arm64): the kernel's clock is 56 bits wide and its last value sits
  // near the top; a counter value that wrapped past zero continues from there.
  PageClock clock;
  clock.time_cycles = 0x00FF'FFFF'FFFF'F000ULL;
  clock.time_mask = (1ULL << 56) - 1;
  clock.time_mult = 1U << 20;
  clock.time_shift = 20;  // 1 ns per cycle
  EXPECT_EQ(clock.widen(0x100), 0x00FF'FFFF'FFFF'F000ULL + 0x1100);
  EXPECT_EQ(clock.widen(0x00FF'FFFF'FFFF'F800ULL), 0x00FF'FFFF'FFFF'F800ULL);

  auto page = blank_page();
  page->capabilities = cap::user_time | cap::user_time_short;
  page->index = 1;
  page->time_mult = clock.time_mult;
  page->time_shift = clock.time_shift;
  page->time_cycles = clock.time_cycles;
  page->time_mask = clock.time_mask;
  page->time_offset = static_cast<std::uint64_t>(-static_cast<std::int64_t>(clock.time_cycles));
  UserPageSample sample = perfscope::read_user_page(
      *page, [](std::uint32_t) { return std::uint64_t{0}; }, [] { return std::uint64_t{0x100}; });
  EXPECT_EQ(sample.enabled, 0x1100U);
  EXPECT_EQ(sample.running, 0x1100U);
}

TEST(PageClock, PerfTimeAndCyclesAtAreInverses) {
  PageClock clock;
  clock.time_zero = 1'000'000'000;
  clock.time_mult = 1'398'101;
  clock.time_shift = 22;
  clock.has_time_zero = true;
  const std::uint64_t samples[] = {0, 1, 3'000'000'000ULL, 0x0000'1234'5678'9ABCULL};
  for (auto cycles : samples) {
    std::uint64_t time = clock.perf_time(cycles);
    EXPECT_EQ(time, 1'000'000'000 + exact_multiply_shift(cycles, 1'398'101, 22));
    // One nanosecond is three cycles: the round trip lands within one nanosecond's worth.
    std::uint64_t back = clock.cycles_at(time);
    EXPECT_LE(back, cycles);
    EXPECT_LE(cycles - back, 3U) << cycles;
  }
}

// --- real events on this machine

EventAttr single_event_attr(EventAttr attr) {
  attr.set_read_format(rf::total_time_enabled | rf::total_time_running);
  return attr;
}

TEST(UserPage, SoftwareEventIsReadWithTheSystemCallAndSaysWhy) {
  auto attr = single_event_attr(EventAttr::software(pabi::SoftwareEvent::task_clock));
  Event event = Event::open(attr);
  UserPage page = UserPage::map(event);
  ASSERT_TRUE(page.mapped());
  EXPECT_EQ(page.page().index, 0U);
  EXPECT_FALSE(page.capabilities().user_rdpmc);
  EXPECT_NE(page.syscall_reason(), "");
  auto first = page.read();
  volatile std::uint64_t sink = 0;
  for (int i = 0; i < 1'000'000; ++i) sink = sink + static_cast<std::uint64_t>(i);
  auto second = page.read();
  ASSERT_TRUE(first.ok);
  ASSERT_TRUE(second.ok);
  EXPECT_EQ(first.path, ReadPath::syscall);
  EXPECT_EQ(second.path, ReadPath::syscall);
  EXPECT_EQ(perfscope::read_path_name(second.path), "read(2)");
  EXPECT_GT(second.reading.value, first.reading.value);
  EXPECT_GT(second.reading.enabled, 0U);
  EXPECT_EQ(second.reading.enabled, second.reading.running);
}

TEST(UserPage, UnmappedPageReportsAFailedRead) {
  UserPage page;
  EXPECT_FALSE(page.mapped());
  auto result = page.read();
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.path, ReadPath::syscall);
  EXPECT_EQ(page.syscall_reason(), "the page is not mapped.");
  EXPECT_FALSE(page.clock().has_value());
}

TEST(UserPage, GroupReadFormatIsRefusedWithADiagnosis) {
  auto attr = EventAttr::software(pabi::SoftwareEvent::task_clock).set_read_format(rf::group);
  Event event = Event::open(attr);
  try {
    UserPage::map(event);
    FAIL() << "mapping a group-format event should throw";
  } catch (const perfscope::Error& error) {
    EXPECT_EQ(error.errnum(), EINVAL);
    EXPECT_NE(error.diagnosis().find("CountingSession"), std::string::npos) << error.what();
  }
}

// instructions:u of this thread, mapped; skips when this machine cannot give a user-space read.
class HardwareUserPage : public ::testing::Test {
 protected:
  void open(std::uint64_t read_format) {
    if (!perfscope::testing::hardware_counters_available()) {
      GTEST_SKIP() << "no hardware PMU here (instructions:u does not open): the user-space "
                      "path is tested in the emulated PMU lab (make pmu-lab)";
    }
    auto attr = EventAttr::hardware(pabi::HardwareEvent::instructions).count_user_only();
    attr.set_read_format(read_format);
    event_ = Event::open(attr);
    page_ = UserPage::map(event_);
    if (!page_.capabilities().user_rdpmc) {
      GTEST_SKIP() << "the kernel gives no cap_user_rdpmc for hardware events here (cpu/rdpmc = "
                   << perfscope::sys::rdpmc_mode().value_or(-1) << "): " << page_.syscall_reason();
    }
  }
  Event event_;
  UserPage page_;
};

constexpr int bracketed_reads = 10'000;

TEST_F(HardwareUserPage, CountReadInUserSpaceLiesBetweenTwoSystemCallReads) {
  open(0);
  if (IsSkipped()) return;
  EXPECT_GE(page_.capabilities().pmc_width, 32);
  int user_space_reads = 0;
  perfscope::Reading before;
  perfscope::Reading after;
  for (int i = 0; i < bracketed_reads; ++i) {
    ASSERT_TRUE(event_.read(before));
    auto middle = page_.read();
    ASSERT_TRUE(event_.read(after));
    ASSERT_TRUE(middle.ok);
    if (middle.path == ReadPath::user_space) ++user_space_reads;
    ASSERT_LE(before.value, middle.reading.value) << "read " << i;
    ASSERT_LE(middle.reading.value, after.value) << "read " << i;
  }
  // The counter is this thread's own and nothing competes for it: every read but the odd one
  // that finds it switched out is served from user space.
  EXPECT_GE(user_space_reads, bracketed_reads * 99 / 100) << page_.syscall_reason();

  // Another thread must not read this thread's counter with its own rdpmc.
  perfscope::CounterRead other;
  std::string reason;
  std::thread([&] {
    other = page_.read();
    reason = std::string(page_.syscall_reason());
  }).join();
  ASSERT_TRUE(other.ok);
  EXPECT_EQ(other.path, ReadPath::syscall);
  EXPECT_NE(reason.find("thread"), std::string::npos) << reason;
}

TEST_F(HardwareUserPage, TimesComeFromUserSpaceOnlyWhenTheKernelLetsThemBeExtrapolated) {
  open(rf::total_time_enabled | rf::total_time_running);
  if (IsSkipped()) return;
  if (!page_.capabilities().user_time) {
    // Stale page times would scale counts wrongly: read(2) must serve, and say why.
    auto result = page_.read();
    ASSERT_TRUE(result.ok);
    EXPECT_EQ(result.path, ReadPath::syscall);
    EXPECT_NE(std::string(page_.syscall_reason()).find("cap_user_time"), std::string::npos)
        << page_.syscall_reason();
    EXPECT_GT(result.reading.enabled, 0U);
    return;
  }
  perfscope::Reading before;
  perfscope::Reading after;
  for (int i = 0; i < bracketed_reads; ++i) {
    ASSERT_TRUE(event_.read(before));
    auto middle = page_.read();
    ASSERT_TRUE(event_.read(after));
    ASSERT_TRUE(middle.ok);
    ASSERT_LE(before.value, middle.reading.value) << "read " << i;
    ASSERT_LE(middle.reading.value, after.value) << "read " << i;
    ASSERT_LE(before.enabled, middle.reading.enabled) << "read " << i;
    ASSERT_LE(middle.reading.enabled, after.enabled) << "read " << i;
    ASSERT_LE(before.running, middle.reading.running) << "read " << i;
    ASSERT_LE(middle.reading.running, after.running) << "read " << i;
  }
}

TEST(UserPage, InheritedPerTaskEventCannotBeMappedAndTheErrorSaysSo) {
  auto attr = single_event_attr(EventAttr::software(pabi::SoftwareEvent::task_clock));
  attr.set_flag(pabi::attr_flag::inherit);
  Event event = Event::open(attr);
  try {
    UserPage::map(event);
    FAIL() << "the kernel maps no inherited per-task event";
  } catch (const perfscope::Error& error) {
    EXPECT_EQ(error.errnum(), EINVAL);
    EXPECT_NE(error.diagnosis().find("without inherit"), std::string::npos) << error.what();
  }
}

}  // namespace
