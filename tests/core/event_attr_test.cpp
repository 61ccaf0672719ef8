// EventAttr: the builder sets exactly the documented bits, dump() names them, validate() catches
// what the kernel would refuse, fields_set_beyond() names what an older kernel would not see.
#include "perfscope/core/event_attr.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <string>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace pabi = perfscope::abi;
namespace flag = pabi::attr_flag;
namespace sf = pabi::sample_format;
using perfscope::EventAttr;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

namespace {

bool mentions(const std::vector<std::string>& problems, const std::string& word) {
  return std::any_of(problems.begin(), problems.end(),
                     [&](const std::string& p) { return p.find(word) != std::string::npos; });
}

EventAttr task_clock() { return EventAttr::software(pabi::SoftwareEvent::task_clock); }

}  // namespace

TEST(EventAttrBuilder, FactoriesSetTypeAndConfig) {
  auto hw = EventAttr::hardware(pabi::HardwareEvent::instructions);
  EXPECT_EQ(hw.type(), 0u);
  EXPECT_EQ(hw.config(), 1u);
  EXPECT_EQ(hw.raw().size, 136u);

  auto sw = EventAttr::software(pabi::SoftwareEvent::page_faults);
  EXPECT_EQ(sw.type(), 1u);
  EXPECT_EQ(sw.config(), 2u);

  auto cache =
      EventAttr::hw_cache(pabi::CacheId::ll, pabi::CacheOp::write, pabi::CacheResult::miss);
  EXPECT_EQ(cache.type(), 3u);
  EXPECT_EQ(cache.config(), 0x10102u);

  EXPECT_EQ(EventAttr::raw_event(0x1a2b).type(), 4u);
  EXPECT_EQ(EventAttr::raw_event(0x1a2b).config(), 0x1a2bu);
  EXPECT_EQ(EventAttr::tracepoint(321).type(), 2u);
  EXPECT_EQ(EventAttr::tracepoint(321).config(), 321u);
  EXPECT_EQ(EventAttr::dynamic_pmu(11, 0x42).type(), 11u);
  EXPECT_EQ(EventAttr::dynamic_pmu(11, 0x42).config(), 0x42u);
}

TEST(EventAttrBuilder, BreakpointFieldsGoToBpAddrAndBpLen) {
  auto bp = EventAttr::breakpoint(0x7fff1000, 4, pabi::breakpoint_type::write);
  EXPECT_EQ(bp.type(), 5u);
  EXPECT_EQ(bp.raw().bp_type, 2u);
  EXPECT_EQ(bp.raw().config1, 0x7fff1000u);  // bp_addr
  EXPECT_EQ(bp.raw().config2, 4u);           // bp_len
  EXPECT_EQ(bp.config(), 0u);
}

TEST(EventAttrBuilder, CountUserOnlySetsExcludeKernelAndHv) {
  auto attr = task_clock().set_flag(flag::exclude_user).count_user_only();
  EXPECT_EQ(attr.raw().flags, flag::exclude_kernel | flag::exclude_hv);
  auto kernel = task_clock().count_kernel_only();
  EXPECT_EQ(kernel.raw().flags, flag::exclude_user | flag::exclude_hv);
}

TEST(EventAttrBuilder, PreciseIpOccupiesBits15And16) {
  for (unsigned level = 0; level <= 3; ++level) {
    auto attr = task_clock().set_flag(flag::disabled).set_precise_ip(level);
    EXPECT_EQ(attr.raw().flags, flag::disabled | (std::uint64_t{level} << 15));
    EXPECT_EQ(attr.precise_ip(), level);
  }
  // Out-of-range levels are masked to the two bits instead of spilling into mmap_data.
  auto attr = task_clock().set_precise_ip(7);
  EXPECT_EQ(attr.raw().flags & flag::mmap_data, 0u);
  EXPECT_EQ(attr.precise_ip(), 3u);
}

TEST(EventAttrBuilder, FreqAndPeriodShareTheUnion) {
  auto attr = task_clock().set_sample_freq(4000);
  EXPECT_TRUE(attr.has(flag::freq));
  EXPECT_EQ(attr.raw().sample_period_or_freq, 4000u);
  attr.set_sample_period(100000);
  EXPECT_FALSE(attr.has(flag::freq));
  EXPECT_EQ(attr.raw().sample_period_or_freq, 100000u);
}

TEST(EventAttrBuilder, WatermarkAndWakeupEventsShareTheUnion) {
  auto attr = task_clock().set_wakeup_watermark(8192);
  EXPECT_TRUE(attr.has(flag::watermark));
  EXPECT_EQ(attr.raw().wakeup_events_or_watermark, 8192u);
  attr.set_wakeup_events(3);
  EXPECT_FALSE(attr.has(flag::watermark));
  EXPECT_EQ(attr.raw().wakeup_events_or_watermark, 3u);
}

TEST(EventAttrBuilder, ClockidSetsUseClockid) {
  auto attr = task_clock().set_clockid(CLOCK_MONOTONIC_RAW);
  EXPECT_TRUE(attr.has(flag::use_clockid));
  EXPECT_EQ(attr.raw().clockid, CLOCK_MONOTONIC_RAW);
  EXPECT_EQ(attr.raw().flags, flag::use_clockid);
}

TEST(EventAttrBuilder, SetFlagClearsToo) {
  auto attr = task_clock().set_flag(flag::inherit).set_flag(flag::disabled);
  attr.set_flag(flag::inherit, false);
  EXPECT_EQ(attr.raw().flags, flag::disabled);
}

TEST(EventAttrBuilder, OtherSettersReachTheirFields) {
  auto attr = task_clock()
                  .set_config1(1)
                  .set_config2(2)
                  .set_config3(3)
                  .set_sample_type(sf::ip | sf::tid)
                  .set_read_format(pabi::read_format::id)
                  .set_branch_sample_type(pabi::branch_sample::any)
                  .set_sample_regs_user(0xff)
                  .set_sample_stack_user(4096)
                  .set_sample_regs_intr(0xf0)
                  .set_aux_watermark(64)
                  .set_sample_max_stack(32)
                  .set_aux_sample_size(128)
                  .set_aux_action(pabi::aux_action::pause)
                  .set_sig_data(0xdead);
  const auto& r = attr.raw();
  EXPECT_EQ(r.config1, 1u);
  EXPECT_EQ(r.config2, 2u);
  EXPECT_EQ(r.config3, 3u);
  EXPECT_EQ(r.sample_type, sf::ip | sf::tid);
  EXPECT_EQ(r.read_format, pabi::read_format::id);
  EXPECT_EQ(r.branch_sample_type, pabi::branch_sample::any);
  EXPECT_EQ(r.sample_regs_user, 0xffu);
  EXPECT_EQ(r.sample_stack_user, 4096u);
  EXPECT_EQ(r.sample_regs_intr, 0xf0u);
  EXPECT_EQ(r.aux_watermark, 64u);
  EXPECT_EQ(r.sample_max_stack, 32u);
  EXPECT_EQ(r.aux_sample_size, 128u);
  EXPECT_EQ(r.aux_action, pabi::aux_action::pause);
  EXPECT_EQ(r.sig_data, 0xdeadu);
}

TEST(EventAttrEquality, ComparesEveryByte) {
  auto a = task_clock();
  auto b = task_clock();
  EXPECT_TRUE(a == b);
  b.set_config3(1);
  EXPECT_FALSE(a == b);
}

TEST(EventAttrDump, NamesTypeFlagsAndFormats) {
  auto attr = task_clock()
                  .set_flag(flag::disabled)
                  .set_flag(flag::enable_on_exec)
                  .count_user_only()
                  .set_precise_ip(2)
                  .set_sample_period(5000)
                  .set_sample_type(sf::ip | sf::callchain)
                  .set_read_format(pabi::read_format::total_time_enabled | pabi::read_format::id);
  std::string dump = attr.dump();
  EXPECT_THAT(dump, HasSubstr("1 (PERF_TYPE_SOFTWARE)"));
  EXPECT_THAT(dump, HasSubstr("disabled"));
  EXPECT_THAT(dump, HasSubstr("enable_on_exec"));
  EXPECT_THAT(dump, HasSubstr("exclude_kernel"));
  EXPECT_THAT(dump, HasSubstr("exclude_hv"));
  EXPECT_THAT(dump, ::testing::Not(HasSubstr("exclude_user")));
  EXPECT_THAT(dump, HasSubstr("precise_ip"));
  EXPECT_THAT(dump, HasSubstr("sample_period"));
  EXPECT_THAT(dump, HasSubstr("5000"));
  EXPECT_THAT(dump, HasSubstr("IP|CALLCHAIN"));
  EXPECT_THAT(dump, HasSubstr("TOTAL_TIME_ENABLED|ID"));

  EXPECT_THAT(EventAttr::hardware(pabi::HardwareEvent::cpu_cycles).dump(),
              HasSubstr("PERF_TYPE_HARDWARE"));
  EXPECT_THAT(EventAttr::tracepoint(5).dump(), HasSubstr("PERF_TYPE_TRACEPOINT"));
  EXPECT_THAT(EventAttr::dynamic_pmu(42, 0).dump(), HasSubstr("42 (dynamic PMU)"));
  auto bp = EventAttr::breakpoint(0x1000, 8, pabi::breakpoint_type::write).dump();
  EXPECT_THAT(bp, HasSubstr("PERF_TYPE_BREAKPOINT"));
  EXPECT_THAT(bp, HasSubstr("bp_addr"));
  EXPECT_THAT(bp, HasSubstr("bp_len"));
  EXPECT_THAT(task_clock().set_sample_freq(99).dump(), HasSubstr("sample_freq"));
}

TEST(EventAttrDump, DescribeHelpers) {
  EXPECT_EQ(perfscope::event_type_name(3), "PERF_TYPE_HW_CACHE");
  EXPECT_EQ(perfscope::event_type_name(99), "");
  EXPECT_EQ(perfscope::describe_flags(flag::disabled | flag::inherit | (2ULL << 15)),
            "disabled|inherit|precise_ip=2");
  EXPECT_EQ(perfscope::describe_flags(flag::sigtrap | (1ULL << 40)), "sigtrap|0x10000000000");
  EXPECT_EQ(perfscope::describe_sample_type(sf::tid | sf::weight_struct), "TID|WEIGHT_STRUCT");
  EXPECT_EQ(perfscope::describe_read_format(pabi::read_format::group | pabi::read_format::lost),
            "GROUP|LOST");
}

TEST(EventAttrValidate, PlainAttrHasNoProblems) {
  EXPECT_THAT(task_clock().validate(), IsEmpty());
  EXPECT_THAT(EventAttr::breakpoint(0x1000, 8, pabi::breakpoint_type::write).validate(), IsEmpty());
  EXPECT_THAT(
      EventAttr::hw_cache(pabi::CacheId::node, pabi::CacheOp::prefetch, pabi::CacheResult::miss)
          .validate(),
      IsEmpty());
}

TEST(EventAttrValidate, SigtrapNeedsRemoveOnExec) {
  auto attr = task_clock().set_flag(flag::sigtrap);
  EXPECT_TRUE(mentions(attr.validate(), "remove_on_exec"));
  attr.set_flag(flag::remove_on_exec);
  EXPECT_THAT(attr.validate(), IsEmpty());
}

TEST(EventAttrValidate, InheritThreadNeedsInherit) {
  auto attr = task_clock().set_flag(flag::inherit_thread);
  EXPECT_TRUE(mentions(attr.validate(), "inherit_thread requires inherit"));
  attr.set_flag(flag::inherit);
  EXPECT_THAT(attr.validate(), IsEmpty());
}

TEST(EventAttrValidate, ReservedFlagBits) {
  auto attr = task_clock().set_flag(1ULL << 38);
  auto problems = attr.validate();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("reserved flag bits 0x4000000000"));
}

TEST(EventAttrValidate, UnknownSampleTypeAndReadFormatBits) {
  auto attr = task_clock().set_sample_type(sf::ip | (1ULL << 25));
  EXPECT_TRUE(mentions(attr.validate(), "sample_type has unknown bits 0x2000000"));
  auto rf = task_clock().set_read_format(1ULL << 5);
  EXPECT_TRUE(mentions(rf.validate(), "read_format has unknown bits 0x20"));
}

TEST(EventAttrValidate, WeightAndWeightStructAreExclusive) {
  auto attr = task_clock().set_sample_type(sf::weight | sf::weight_struct);
  EXPECT_TRUE(mentions(attr.validate(), "WEIGHT and WEIGHT_STRUCT"));
  EXPECT_THAT(task_clock().set_sample_type(sf::weight_struct).validate(), IsEmpty());
}

TEST(EventAttrValidate, BreakpointTypeAndLength) {
  auto bad_type = EventAttr::breakpoint(0x1000, 8, 5);
  EXPECT_TRUE(mentions(bad_type.validate(), "bp_type 5"));
  auto empty_type = EventAttr::breakpoint(0x1000, 8, 0);
  EXPECT_TRUE(mentions(empty_type.validate(), "bp_type 0"));
  auto long_len = EventAttr::breakpoint(0x1000, 16, pabi::breakpoint_type::read_write);
  EXPECT_TRUE(mentions(long_len.validate(), "bp_len 16 is not 1..8"));
  auto zero_len = EventAttr::breakpoint(0x1000, 0, pabi::breakpoint_type::read);
  EXPECT_TRUE(mentions(zero_len.validate(), "bp_len 0"));
  auto exec_len = EventAttr::breakpoint(0x1000, 4, pabi::breakpoint_type::execute);
  EXPECT_TRUE(mentions(exec_len.validate(), "execute breakpoints need bp_len 8"));
  EXPECT_THAT(EventAttr::breakpoint(0x1000, 8, pabi::breakpoint_type::execute).validate(),
              IsEmpty());
}

TEST(EventAttrValidate, SampleFreqAboveTheSysctlLimit) {
  auto max_rate = perfscope::sys::read_sysctl("perf_event_max_sample_rate");
  if (!max_rate) GTEST_SKIP() << "/proc/sys/kernel/perf_event_max_sample_rate is not readable";
  auto at_limit = task_clock().set_sample_freq(static_cast<std::uint64_t>(*max_rate));
  EXPECT_THAT(at_limit.validate(), IsEmpty());
  auto above = task_clock().set_sample_freq(static_cast<std::uint64_t>(*max_rate) + 1);
  EXPECT_TRUE(mentions(above.validate(), "perf_event_max_sample_rate"));
  // A period of the same number is not a frequency and is fine.
  EXPECT_THAT(task_clock().set_sample_period(static_cast<std::uint64_t>(*max_rate) + 1).validate(),
              IsEmpty());
}

TEST(EventAttrValidate, PeriodWithBit63) {
  auto attr = task_clock().set_sample_period(1ULL << 63);
  EXPECT_TRUE(mentions(attr.validate(), "bit 63"));
}

TEST(EventAttrValidate, UnknownSoftwareHardwareAndCacheConfigs) {
  auto sw = EventAttr{}.set_type(1).set_config(pabi::software_event_count);
  EXPECT_TRUE(mentions(sw.validate(), "software event config 12 is unknown"));
  auto hw = EventAttr{}.set_type(0).set_config(10);
  EXPECT_TRUE(mentions(hw.validate(), "hardware event config 10"));
  // The extended PMU type in bits 32.. does not make a known event unknown.
  auto hybrid = EventAttr{}.set_type(0).set_config((8ULL << 32) | 1);
  EXPECT_THAT(hybrid.validate(), IsEmpty());
  auto cache = EventAttr{}.set_type(3).set_config(7);  // cache id 7 does not exist
  EXPECT_TRUE(mentions(cache.validate(), "hw-cache config 0x7"));
  auto cache_op = EventAttr{}.set_type(3).set_config(3 << 8);
  EXPECT_TRUE(mentions(cache_op.validate(), "hw-cache config 0x300"));
}

TEST(EventAttrValidate, SizeReservedAndAuxAction) {
  auto small = task_clock();
  small.raw().size = 32;
  EXPECT_TRUE(mentions(small.validate(), "size 32"));
  auto reserved = task_clock();
  reserved.raw().reserved_2 = 1;
  EXPECT_TRUE(mentions(reserved.validate(), "__reserved_2"));
  EXPECT_TRUE(mentions(task_clock().set_aux_action(8).validate(), "aux_action has reserved bits"));
  auto stack = task_clock().set_sample_type(sf::stack_user).set_sample_stack_user(100);
  EXPECT_TRUE(mentions(stack.validate(), "multiple of 8"));
}

TEST(EventAttrValidate, SampleMaxStackAboveTheSysctl) {
  auto max_stack = perfscope::sys::read_sysctl("perf_event_max_stack");
  if (!max_stack) GTEST_SKIP() << "/proc/sys/kernel/perf_event_max_stack is not readable";
  if (*max_stack >= 0xffff) GTEST_SKIP() << "perf_event_max_stack is at the u16 maximum";
  auto attr = task_clock()
                  .set_sample_type(sf::callchain)
                  .set_sample_max_stack(static_cast<std::uint16_t>(*max_stack + 1));
  EXPECT_TRUE(mentions(attr.validate(), "EOVERFLOW"));
}

TEST(EventAttrFieldsBeyond, NamesConfig3ForAVersion7Kernel) {
  auto attr = task_clock().set_config3(1);
  EXPECT_THAT(attr.fields_set_beyond(128), ElementsAre("config3"));
  EXPECT_THAT(attr.fields_set_beyond(136), IsEmpty());
  EXPECT_THAT(task_clock().fields_set_beyond(128), IsEmpty());
}

TEST(EventAttrFieldsBeyond, ListsEveryLaterFieldForAVersion0Kernel) {
  auto attr = task_clock()
                  .set_config2(1)
                  .set_branch_sample_type(1)
                  .set_sample_regs_user(1)
                  .set_sample_stack_user(8)
                  .set_clockid(1)
                  .set_sample_regs_intr(1)
                  .set_aux_watermark(1)
                  .set_sample_max_stack(1)
                  .set_aux_sample_size(1)
                  .set_aux_action(1)
                  .set_sig_data(1)
                  .set_config3(1);
  EXPECT_THAT(attr.fields_set_beyond(64),
              ElementsAre("config2", "branch_sample_type", "sample_regs_user", "sample_stack_user",
                          "clockid", "sample_regs_intr", "aux_watermark", "sample_max_stack",
                          "aux_sample_size", "aux_action", "sig_data", "config3"));
  EXPECT_THAT(attr.fields_set_beyond(pabi::attr_size::ver3),
              ElementsAre("sample_regs_intr", "aux_watermark", "sample_max_stack",
                          "aux_sample_size", "aux_action", "sig_data", "config3"));
  EXPECT_THAT(attr.fields_set_beyond(pabi::attr_size::ver6), ElementsAre("sig_data", "config3"));
}
