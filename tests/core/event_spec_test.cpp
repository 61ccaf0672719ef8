// parse_event_list: lists, groups, perf's modifiers bit by bit, raw events, breakpoints,
// tracepoints, and errors that point at the offending character.
#include "perfscope/core/event_spec.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/sys/kernel_files.hpp"
#include "support/test_support.hpp"

namespace pabi = perfscope::abi;
namespace flag = pabi::attr_flag;
using perfscope::EventSpec;
using perfscope::EventSpecError;
using perfscope::parse_event_list;
using ::testing::HasSubstr;

namespace {

// The single event of a one-event list.
EventSpec only_event(const std::string& text) {
  auto groups = parse_event_list(text);
  EXPECT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups.at(0).events.size(), 1u);
  return groups.at(0).events.at(0);
}

std::uint64_t flags_of(const std::string& text) { return only_event(text).attr.raw().flags; }

// Parses `text` expecting an EventSpecError; returns it.
EventSpecError parse_error(const std::string& text) {
  try {
    parse_event_list(text);
  } catch (const EventSpecError& error) {
    return error;
  }
  ADD_FAILURE() << "'" << text << "' parsed without error";
  return EventSpecError("", "", 0);
}

constexpr std::uint64_t exclude_mask = flag::exclude_user | flag::exclude_kernel | flag::exclude_hv;

}  // namespace

TEST(EventSpecParse, ListOfSingleEvents) {
  auto groups = parse_event_list("cycles,instructions, task-clock");
  ASSERT_EQ(groups.size(), 3u);
  for (const auto& group : groups) {
    EXPECT_FALSE(group.braced);
    ASSERT_EQ(group.events.size(), 1u);
  }
  EXPECT_EQ(groups[0].events[0].name, "cycles");
  EXPECT_EQ(groups[0].events[0].attr.type(), 0u);
  EXPECT_EQ(groups[0].events[0].attr.config(), 0u);
  EXPECT_EQ(groups[1].events[0].attr.config(), 1u);
  EXPECT_EQ(groups[2].events[0].name, "task-clock");
  EXPECT_EQ(groups[2].events[0].attr.type(), 1u);
  EXPECT_EQ(groups[2].events[0].attr.config(), 1u);
  // No modifier: no exclude bits.
  EXPECT_EQ(groups[0].events[0].attr.raw().flags, 0u);
}

TEST(EventSpecParse, BracedGroupsWithGroupModifiers) {
  auto groups = parse_event_list("{cycles,instructions}:u,page-faults,{task-clock, cs:k}");
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_TRUE(groups[0].braced);
  ASSERT_EQ(groups[0].events.size(), 2u);
  for (const auto& event : groups[0].events) {
    EXPECT_EQ(event.attr.raw().flags & exclude_mask, flag::exclude_kernel | flag::exclude_hv);
  }
  EXPECT_EQ(groups[0].events[0].text, "cycles:u");
  EXPECT_EQ(groups[0].events[1].text, "instructions:u");
  EXPECT_EQ(groups[0].events[1].name, "instructions");
  EXPECT_FALSE(groups[1].braced);
  EXPECT_EQ(groups[1].events[0].attr.config(), 2u);
  EXPECT_TRUE(groups[2].braced);
  ASSERT_EQ(groups[2].events.size(), 2u);
  EXPECT_EQ(groups[2].events[0].attr.raw().flags, 0u);
  EXPECT_EQ(groups[2].events[1].attr.raw().flags & exclude_mask,
            flag::exclude_user | flag::exclude_hv);
  EXPECT_EQ(groups[2].events[1].attr.config(), 3u);  // cs = context-switches
}

TEST(EventSpecParse, GroupModifierCombinesWithEventModifier) {
  auto groups = parse_event_list("{cycles:u,instructions}:P");
  ASSERT_EQ(groups.size(), 1u);
  const auto& events = groups[0].events;
  EXPECT_EQ(events[0].attr.raw().flags,
            flag::exclude_kernel | flag::exclude_hv | flag::precise_ip_mask);
  EXPECT_EQ(events[1].attr.raw().flags, flag::precise_ip_mask);
}

TEST(EventSpecModifiers, PrivilegeLevels) {
  EXPECT_EQ(flags_of("cycles:u"), flag::exclude_kernel | flag::exclude_hv);
  EXPECT_EQ(flags_of("cycles:k"), flag::exclude_user | flag::exclude_hv);
  EXPECT_EQ(flags_of("cycles:h"), flag::exclude_user | flag::exclude_kernel);
  EXPECT_EQ(flags_of("cycles:uk"), flag::exclude_hv);
  EXPECT_EQ(flags_of("cycles:ukh"), 0u);
}

TEST(EventSpecModifiers, Precision) {
  EXPECT_EQ(only_event("cycles:p").attr.precise_ip(), 1u);
  EXPECT_EQ(only_event("cycles:pp").attr.precise_ip(), 2u);
  EXPECT_EQ(only_event("cycles:ppp").attr.precise_ip(), 3u);
  EXPECT_EQ(flags_of("cycles:ppp"), 3ULL << 15);
  EXPECT_EQ(flags_of("cycles:P"), 3ULL << 15);
  EXPECT_EQ(flags_of("cycles:up"),
            flag::exclude_kernel | flag::exclude_hv | (1ULL << flag::precise_ip_shift));
}

TEST(EventSpecModifiers, PinnedExclusiveIdleGuestHostReadWeak) {
  EXPECT_EQ(flags_of("cycles:D"), flag::pinned);
  EXPECT_EQ(flags_of("cycles:e"), flag::exclusive);
  EXPECT_EQ(flags_of("cycles:I"), flag::exclude_idle);
  EXPECT_EQ(flags_of("cycles:G"), flag::exclude_host);
  EXPECT_EQ(flags_of("cycles:H"), flag::exclude_guest);
  EXPECT_EQ(flags_of("cycles:GH"), 0u);
  auto read = only_event("cycles:S");
  EXPECT_EQ(read.attr.raw().sample_type, pabi::sample_format::read);
  EXPECT_EQ(read.attr.raw().flags, 0u);
  auto weak = parse_event_list("{cycles,instructions}:W");
  EXPECT_TRUE(weak[0].events[0].weak_group);
  EXPECT_TRUE(weak[0].events[1].weak_group);
  EXPECT_FALSE(only_event("cycles").weak_group);
  EXPECT_EQ(flags_of("task-clock:uDI"),
            flag::exclude_kernel | flag::exclude_hv | flag::pinned | flag::exclude_idle);
}

TEST(EventSpecParse, RawEvents) {
  auto raw = only_event("r1a2b");
  EXPECT_EQ(raw.attr.type(), 4u);
  EXPECT_EQ(raw.attr.config(), 0x1a2bu);
  EXPECT_EQ(raw.name, "r1a2b");
  auto raw_u = only_event("rFF:u");
  EXPECT_EQ(raw_u.attr.config(), 0xffu);
  EXPECT_EQ(raw_u.attr.raw().flags & exclude_mask, flag::exclude_kernel | flag::exclude_hv);
}

TEST(EventSpecParse, Breakpoints) {
  auto write = only_event("mem:0xADD0/4:w");
  EXPECT_EQ(write.attr.type(), 5u);
  EXPECT_EQ(write.attr.raw().config1, 0xADD0u);
  EXPECT_EQ(write.attr.raw().config2, 4u);
  EXPECT_EQ(write.attr.raw().bp_type, pabi::breakpoint_type::write);
  EXPECT_EQ(write.name, "mem:0xadd0/4:w");

  auto defaults = only_event("mem:4096");
  EXPECT_EQ(defaults.attr.raw().config1, 4096u);
  EXPECT_EQ(defaults.attr.raw().config2, sizeof(long));
  EXPECT_EQ(defaults.attr.raw().bp_type, pabi::breakpoint_type::read_write);

  auto read = only_event("mem:0x1000/2:r:u");
  EXPECT_EQ(read.attr.raw().bp_type, pabi::breakpoint_type::read);
  EXPECT_EQ(read.attr.raw().config2, 2u);
  EXPECT_EQ(read.attr.raw().flags & exclude_mask, flag::exclude_kernel | flag::exclude_hv);

  auto execute = only_event("mem:0x401000:x");
  EXPECT_EQ(execute.attr.raw().bp_type, pabi::breakpoint_type::execute);
  EXPECT_EQ(execute.attr.raw().config2, sizeof(long));

  // With no access letters the third part is a modifier list.
  auto modifiers = only_event("mem:0x1000/8:k");
  EXPECT_EQ(modifiers.attr.raw().bp_type, pabi::breakpoint_type::read_write);
  EXPECT_EQ(modifiers.attr.raw().flags & exclude_mask, flag::exclude_user | flag::exclude_hv);
}

TEST(EventSpecParse, Tracepoints) {
  if (!perfscope::testing::tracefs_available()) GTEST_SKIP() << "tracefs is not available";
  long long id = perfscope::tracepoint_id("syscalls", "sys_enter_getpid");
  if (id < 0) GTEST_SKIP() << "no syscalls:sys_enter_getpid tracepoint (CONFIG_FTRACE_SYSCALLS)";
  auto root = perfscope::sys::tracefs_root();
  ASSERT_TRUE(root.has_value());
  auto file_id = perfscope::sys::read_integer_file(*root + "/events/syscalls/sys_enter_getpid/id");
  ASSERT_TRUE(file_id.has_value());
  EXPECT_EQ(id, *file_id);

  auto tp = only_event("syscalls:sys_enter_getpid");
  EXPECT_EQ(tp.attr.type(), 2u);
  EXPECT_EQ(tp.attr.config(), static_cast<std::uint64_t>(*file_id));
  EXPECT_EQ(tp.name, "syscalls:sys_enter_getpid");
  auto tp_u = only_event("syscalls:sys_enter_getpid:u");
  EXPECT_EQ(tp_u.attr.config(), static_cast<std::uint64_t>(*file_id));
  EXPECT_EQ(tp_u.attr.raw().flags & exclude_mask, flag::exclude_kernel | flag::exclude_hv);
  EXPECT_EQ(perfscope::tracepoint_id("syscalls", "no_such_tracepoint"), -ENOENT);
}

TEST(EventSpecErrors, UnknownNameSuggestsTheClosest) {
  auto error = parse_error("cyclez");
  EXPECT_EQ(error.position(), 0u);
  EXPECT_THAT(error.what(), HasSubstr("unknown event 'cyclez'"));
  EXPECT_THAT(error.what(), HasSubstr("did you mean 'cycles'?"));
  EXPECT_EQ(error.input(), "cyclez");

  auto later = parse_error("task-clock,instructons");
  EXPECT_EQ(later.position(), 11u);
  EXPECT_THAT(later.what(), HasSubstr("did you mean 'instructions'?"));

  // Nothing close: no suggestion.
  auto far = parse_error("qqqqqqqqqqqqqqqq");
  EXPECT_THAT(far.what(), ::testing::Not(HasSubstr("did you mean")));
}

TEST(EventSpecErrors, UnknownNameWithModifiersIsNotCalledATracepoint) {
  if (!perfscope::testing::tracefs_available()) GTEST_SKIP() << "tracefs is not available";
  auto error = parse_error("cyclez:u");
  EXPECT_EQ(error.position(), 0u);
  EXPECT_THAT(error.what(), HasSubstr("did you mean 'cycles'?"));
}

TEST(EventSpecErrors, CaretPointsAtTheOffendingCharacter) {
  auto error = parse_error("cycles,cyclez");
  EXPECT_EQ(error.position(), 7u);
  EXPECT_THAT(error.with_caret(), HasSubstr("\n  cycles,cyclez\n         ^"));
}

TEST(EventSpecErrors, UnknownModifier) {
  auto error = parse_error("cycles:uq");
  EXPECT_EQ(error.position(), 8u);
  EXPECT_THAT(error.what(), HasSubstr("modifier 'q'"));
  auto group = parse_error("{cycles,instructions}:z");
  EXPECT_EQ(group.position(), 22u);
  auto too_precise = parse_error("cycles:pppp");
  EXPECT_EQ(too_precise.position(), 10u);
  auto empty = parse_error("cycles:");
  EXPECT_EQ(empty.position(), 7u);
  EXPECT_THAT(empty.what(), HasSubstr("followed by modifiers"));
}

TEST(EventSpecErrors, UnbalancedBrace) {
  auto error = parse_error("cycles,{instructions,branches");
  EXPECT_EQ(error.position(), 7u);
  EXPECT_THAT(error.what(), HasSubstr("unbalanced '{'"));
  auto stray = parse_error("cycles}");
  EXPECT_EQ(stray.position(), 6u);
}

TEST(EventSpecErrors, EmptyGroup) {
  auto error = parse_error("cycles,{ }");
  EXPECT_EQ(error.position(), 7u);
  EXPECT_THAT(error.what(), HasSubstr("empty group"));
}

TEST(EventSpecErrors, NestedGroup) {
  auto error = parse_error("{cycles,{instructions}}");
  EXPECT_EQ(error.position(), 8u);
  EXPECT_THAT(error.what(), HasSubstr("nested"));
}

TEST(EventSpecErrors, TrailingComma) {
  auto error = parse_error("cycles,instructions,");
  EXPECT_EQ(error.position(), 20u);
  EXPECT_THAT(error.what(), HasSubstr("ends with ','"));
  auto in_group = parse_error("{cycles,instructions,}");
  EXPECT_EQ(in_group.position(), 20u);
  EXPECT_THAT(in_group.what(), HasSubstr("ends with ','"));
  auto doubled = parse_error("cycles,,instructions");
  EXPECT_EQ(doubled.position(), 7u);
}

TEST(EventSpecErrors, EmptyList) {
  EXPECT_EQ(parse_error("").position(), 0u);
  EXPECT_THAT(parse_error("   ").what(), HasSubstr("empty"));
}

TEST(EventSpecErrors, BadBreakpoints) {
  auto length = parse_error("mem:0x1000/9:w");
  EXPECT_EQ(length.position(), 11u);
  EXPECT_THAT(length.what(), HasSubstr("1 to 8 bytes"));
  EXPECT_EQ(parse_error("mem:0x1000/0").position(), 11u);
  auto address = parse_error("mem:zzz");
  EXPECT_EQ(address.position(), 4u);
  EXPECT_THAT(address.what(), HasSubstr("address"));
  EXPECT_THAT(parse_error("mem").what(), HasSubstr("needs an address"));
  auto mixed = parse_error("mem:0x1000:rx");
  EXPECT_EQ(mixed.position(), 11u);
  EXPECT_THAT(mixed.what(), HasSubstr("execute"));
}

TEST(EventSpecErrors, UnknownTracepoint) {
  if (!perfscope::testing::tracefs_available()) GTEST_SKIP() << "tracefs is not available";
  auto error = parse_error("cycles,syscalls:sys_enter_no_such_call");
  EXPECT_EQ(error.position(), 7u);
  EXPECT_THAT(error.what(), HasSubstr("no tracepoint 'syscalls:sys_enter_no_such_call'"));
  EXPECT_THAT(error.what(), HasSubstr("available_events"));
}

TEST(EventSpecErrors, UnknownPmuNamesThePmusThere) {
  auto error = parse_error("cycles,nopmu/event=0x3c/");
  EXPECT_EQ(error.position(), 7u);
  EXPECT_THAT(error.what(), HasSubstr("unknown PMU 'nopmu'"));
  EXPECT_THAT(error.what(), HasSubstr("/sys/bus/event_source/devices"));
}
