// Tracepoint payloads decoded into named fields: from synthetic payloads against a known format
// text, and from real samples of syscalls:sys_enter_getpid and sched:sched_switch.
#include "perfscope/analysis/perf_data/tracepoint_format.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/core/ring_buffer.hpp"
#include "support/test_support.hpp"

namespace {

using perfscope::TracepointCatalog;

constexpr std::string_view switch_format = R"(name: sched_switch
ID: 372
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t prev_pid;	offset:24;	size:4;	signed:1;
	field:int prev_prio;	offset:28;	size:4;	signed:1;
	field:long prev_state;	offset:32;	size:8;	signed:1;
	field:char next_comm[16];	offset:40;	size:16;	signed:0;
	field:pid_t next_pid;	offset:56;	size:4;	signed:1;
	field:int next_prio;	offset:60;	size:4;	signed:1;

print fmt: "prev_comm=%s prev_pid=%d prev_prio=%d ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, REC->next_comm, REC->next_pid, REC->next_prio
)";

template <class T>
void put(std::vector<std::byte>& payload, std::size_t offset, T value) {
  std::memcpy(payload.data() + offset, &value, sizeof value);
}

TEST(TracepointFormat, DecodesFieldsOfASyntheticPayload) {
  TracepointCatalog catalog;
  const auto& format = catalog.load_text("sched", switch_format);
  EXPECT_EQ(format.id(), 372u);
  EXPECT_EQ(format.name(), "sched_switch");
  ASSERT_NE(format.field("prev_comm"), nullptr);
  EXPECT_TRUE(format.field("prev_comm")->is_string);
  EXPECT_TRUE(format.field("common_pid")->is_common);

  std::vector<std::byte> payload(64);
  put<std::uint16_t>(payload, 0, 372);
  put<std::int32_t>(payload, 4, 4242);
  std::memcpy(payload.data() + 8, "worker", 7);
  put<std::int32_t>(payload, 24, 17);
  put<std::int32_t>(payload, 28, -5);
  std::memcpy(payload.data() + 40, "idle", 5);
  put<std::int32_t>(payload, 56, 0);
  put<std::int32_t>(payload, 60, 120);

  EXPECT_EQ(format.value(payload, "common_pid")->as_signed(), 4242);
  EXPECT_EQ(format.value(payload, "prev_comm")->text, "worker");
  EXPECT_EQ(format.value(payload, "prev_pid")->as_signed(), 17);
  EXPECT_EQ(format.value(payload, "prev_prio")->as_signed(), -5);
  EXPECT_EQ(format.value(payload, "next_comm")->text, "idle");
  EXPECT_FALSE(format.value(payload, "no_such_field").has_value());
  EXPECT_FALSE(format.value(std::span(payload).first(30), "prev_prio").has_value());

  std::string printed = catalog.print(format, payload);
  EXPECT_NE(printed.find("prev_comm=worker prev_pid=17 prev_prio=-5"), std::string::npos)
      << printed;
  EXPECT_NE(format.describe(payload).find("next_comm=idle"), std::string::npos);
}

TEST(TracepointFormat, RejectsTextThatIsNotAFormat) {
  TracepointCatalog catalog;
  EXPECT_THROW(catalog.load_text("x", "this is not a format"), perfscope::Error);
}

TEST(TracepointFormat, DecodesRealGetpidSamples) {
  if (!perfscope::testing::tracefs_available()) GTEST_SKIP() << "tracefs is not available";
  TracepointCatalog catalog;
  const auto& format = catalog.load("syscalls", "sys_enter_getpid");
  auto specs = perfscope::parse_event_list("syscalls:sys_enter_getpid");
  ASSERT_EQ(specs[0].events[0].attr.config(), format.id());

  auto attr = specs[0].events[0].attr;
  attr.set_sample_period(1)
      .set_sample_type(perfscope::abi::sample_format::raw | perfscope::abi::sample_format::tid)
      .set_flag(perfscope::abi::attr_flag::disabled);
  auto event = perfscope::Event::open(attr, 0, -1);
  auto buffer = perfscope::RingBuffer::map(event, 8);
  constexpr int calls = 25;
  event.enable();
  for (int i = 0; i < calls; ++i) ::syscall(SYS_getpid);
  event.disable();

  auto config = perfscope::ParseConfig::from_attr(attr.raw());
  int samples = 0;
  buffer.drain([&](const perfscope::RecordView& view) {
    perfscope::SampleRecord sample;
    perfscope::DecodeError error;
    if (view.type() != 9 || !perfscope::decode_sample(view, config, sample, error)) return;
    ++samples;
    ASSERT_FALSE(sample.raw.empty());
    EXPECT_EQ(format.value(sample.raw, "common_type")->number, format.id());
    EXPECT_EQ(format.value(sample.raw, "common_pid")->as_signed(), ::getpid());
    EXPECT_EQ(format.value(sample.raw, "__syscall_nr")->as_signed(), SYS_getpid);
  });
  EXPECT_EQ(samples, calls);
}

}  // namespace
