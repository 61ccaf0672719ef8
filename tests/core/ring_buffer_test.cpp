// RingBuffer against real kernel buffers. A write watchpoint with sample_period 1 on a variable
// of this test gives exactly one SAMPLE per write, and with PERF_SAMPLE_READ each sample carries
// the event's count at that write: a sequence number 1, 2, 3, ... written by the kernel. That
// makes every property exact: how many records, in which order, which were lost.
#include "perfscope/core/ring_buffer.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/sys/memory_map.hpp"
#include "support/test_support.hpp"

namespace pabi = perfscope::abi;
namespace sf = pabi::sample_format;
using perfscope::aux_chunk;
using perfscope::AuxChunk;
using perfscope::Event;
using perfscope::EventAttr;
using perfscope::RingBuffer;

namespace {

alignas(8) volatile std::uint64_t watched = 0;

// IP|TID|TIME|ADDR|READ|IDENTIFIER: 8 (header) + 6 * 8 = 56 bytes per sample, so 4096 / 56 is
// not whole and records straddle the end of a one-page data area.
constexpr std::uint64_t sample_type =
    sf::identifier | sf::ip | sf::tid | sf::time | sf::addr | sf::read;
constexpr std::size_t sample_bytes = 56;

EventAttr watchpoint_attr(bool backward = false) {
  auto attr = EventAttr::breakpoint(reinterpret_cast<std::uintptr_t>(&watched),
                                    pabi::breakpoint_length::len8, pabi::breakpoint_type::write)
                  .set_sample_period(1)
                  .set_sample_type(sample_type)
                  .set_flag(pabi::attr_flag::disabled)
                  .count_user_only();
  if (backward) attr.set_flag(pabi::attr_flag::write_backward);
  return attr;
}

std::uint32_t this_thread_id() { return static_cast<std::uint32_t>(::syscall(SYS_gettid)); }

// What a drain saw: samples checked one by one against the expected sequence.
struct Drained {
  std::uint64_t samples = 0;
  std::uint64_t lost = 0;  // sum of LOST records' counts
  std::uint64_t lost_records = 0;
  std::uint64_t other = 0;  // anything else (none expected)
  std::uint64_t decode_failures = 0;
  std::uint64_t wrong_addr = 0;
  std::uint64_t wrong_tid = 0;
  std::uint64_t wrong_id = 0;
  std::vector<std::uint64_t> sequence;  // READ value of each sample, in the order read
  std::vector<std::uint64_t> times;
};

class WatchpointBuffer : public ::testing::Test {
 protected:
  // Opens the watchpoint; false (with the test skipped) where hardware breakpoints do not exist.
  bool open(bool backward = false) {
    int errnum = 0;
    event_ = Event::try_open(watchpoint_attr(backward), 0, -1, nullptr, 0, errnum);
    if (!event_.valid()) {
      skip_reason_ = std::string("a write watchpoint does not open here: ") + std::strerror(errnum);
      return false;
    }
    // Some virtual machines open the event but never fire the debug register.
    skip_reason_ = perfscope::testing::hardware_breakpoints_problem();
    if (!skip_reason_.empty()) return false;
    config_ = perfscope::ParseConfig::from_attr(event_.attr().raw());
    id_ = event_.id();
    return true;
  }

  void write_watched(std::uint64_t times) {
    for (std::uint64_t i = 0; i < times; ++i) watched = i;
  }

  void account(const perfscope::RecordView& view, Drained& out) const {
    perfscope::Record record;
    perfscope::DecodeError error;
    if (!perfscope::decode_record(view, config_, record, error)) {
      ++out.decode_failures;
      return;
    }
    if (const auto* sample = std::get_if<perfscope::SampleRecord>(&record)) {
      ++out.samples;
      if (sample->addr != reinterpret_cast<std::uintptr_t>(&watched)) ++out.wrong_addr;
      if (sample->tid != this_thread_id()) ++out.wrong_tid;
      if (sample->identifier != id_ || perfscope::record_identifier(view) != id_) ++out.wrong_id;
      std::array<perfscope::Reading, 1> value{};
      sample->read.decode(value);
      out.sequence.push_back(value[0].value);
      out.times.push_back(sample->time);
    } else if (const auto* lost = std::get_if<perfscope::LostRecord>(&record)) {
      ++out.lost_records;
      out.lost += lost->lost;
      if (lost->id != id_) ++out.wrong_id;
    } else {
      ++out.other;
    }
  }

  void drain(RingBuffer& buffer, Drained& out) const {
    buffer.drain([&](const perfscope::RecordView& view) { account(view, out); });
  }

  Event event_;
  perfscope::ParseConfig config_;
  std::uint64_t id_ = 0;
  std::string skip_reason_;
};

void expect_clean(const Drained& d) {
  EXPECT_EQ(d.decode_failures, 0U);
  EXPECT_EQ(d.wrong_addr, 0U);
  EXPECT_EQ(d.wrong_tid, 0U);
  EXPECT_EQ(d.wrong_id, 0U);
  EXPECT_EQ(d.other, 0U);
}

// 1, 2, ..., n in order (each sample's READ value is the count including its own write).
void expect_consecutive(const std::vector<std::uint64_t>& sequence, std::uint64_t first) {
  for (std::size_t i = 0; i < sequence.size(); ++i) {
    ASSERT_EQ(sequence[i], first + i) << "record " << i;
  }
}

TEST_F(WatchpointBuffer, OneSamplePerWriteCarryingTheWatchedAddress) {
  if (!open()) GTEST_SKIP() << skip_reason_;
  auto buffer = RingBuffer::map(event_, 1);
  ASSERT_TRUE(buffer.mapped());
  EXPECT_EQ(buffer.data_size(), perfscope::sys::page_size());
  EXPECT_EQ(buffer.unread_bytes(), 0U);
  ASSERT_EQ(event_.enable(), 0);
  constexpr std::uint64_t writes = 50;  // 2800 bytes: fits in one page
  write_watched(writes);
  ASSERT_EQ(event_.disable(), 0);
  EXPECT_EQ(buffer.unread_bytes(), writes * sample_bytes);
  Drained d;
  drain(buffer, d);
  expect_clean(d);
  EXPECT_EQ(d.samples, writes);
  EXPECT_EQ(d.lost, 0U);
  expect_consecutive(d.sequence, 1);
  for (std::size_t i = 1; i < d.times.size(); ++i) EXPECT_GT(d.times[i], d.times[i - 1]);
  EXPECT_EQ(buffer.unread_bytes(), 0U);  // data_tail was written back
  EXPECT_EQ(buffer.stats().records, writes);
  EXPECT_EQ(buffer.stats().bytes, writes * sample_bytes);
  EXPECT_EQ(buffer.stats().wrapped_records, 0U);
  EXPECT_EQ(buffer.stats().corrupt, 0U);
}

TEST_F(WatchpointBuffer, PeekDoesNotAdvance) {
  if (!open()) GTEST_SKIP() << skip_reason_;
  auto buffer = RingBuffer::map(event_, 1);
  ASSERT_EQ(event_.enable(), 0);
  write_watched(2);
  ASSERT_EQ(event_.disable(), 0);
  ASSERT_TRUE(buffer.begin_batch());
  perfscope::RecordView peeked, first, second, none;
  ASSERT_TRUE(buffer.peek(peeked));
  ASSERT_TRUE(buffer.next(first));
  EXPECT_EQ(peeked.bytes.data(), first.bytes.data());
  ASSERT_TRUE(buffer.next(second));
  EXPECT_EQ(second.bytes.data(), first.bytes.data() + sample_bytes);  // a view into the mapping
  EXPECT_FALSE(buffer.next(none));
  buffer.end_batch();
  EXPECT_FALSE(buffer.begin_batch());
}

TEST_F(WatchpointBuffer, RecordsThatWrapAreCopiedAndStillDecode) {
  if (!open()) GTEST_SKIP() << skip_reason_;
  auto buffer = RingBuffer::map(event_, 1);
  ASSERT_EQ(event_.enable(), 0);
  // Rounds of 60 samples (3360 bytes, less than the page) drained in between: 15 rounds go
  // around the 4 KiB area 12 times, and 56-byte records cannot all land on its end exactly.
  constexpr std::uint64_t rounds = 15, per_round = 60;
  Drained d;
  for (std::uint64_t round = 0; round < rounds; ++round) {
    write_watched(per_round);
    drain(buffer, d);
  }
  ASSERT_EQ(event_.disable(), 0);
  expect_clean(d);
  EXPECT_EQ(d.samples, rounds * per_round);
  EXPECT_EQ(d.lost, 0U);
  expect_consecutive(d.sequence, 1);
  EXPECT_GT(buffer.stats().wrapped_records, 0U);
  EXPECT_EQ(buffer.stats().corrupt, 0U);
}

TEST_F(WatchpointBuffer, ABufferNeverDrainedLosesTheRestAndSaysHowMany) {
  if (!open()) GTEST_SKIP() << skip_reason_;
  auto buffer = RingBuffer::map(event_, 1);
  ASSERT_EQ(event_.enable(), 0);
  constexpr std::uint64_t writes = 1000;  // 56 000 bytes into 4096
  write_watched(writes);
  Drained d;
  drain(buffer, d);
  // The kernel counts what it dropped and writes the LOST record at the next output that
  // finds room: one more write after the drain.
  write_watched(1);
  ASSERT_EQ(event_.disable(), 0);
  drain(buffer, d);
  expect_clean(d);
  EXPECT_EQ(d.lost_records, 1U);
  EXPECT_GT(d.lost, 0U);
  EXPECT_EQ(d.samples + d.lost, writes + 1);
  EXPECT_EQ(d.samples, perfscope::sys::page_size() / sample_bytes + 1);
  // The samples kept are the first ones and the last one: the sequence says which were lost.
  ASSERT_FALSE(d.sequence.empty());
  expect_consecutive(std::vector<std::uint64_t>(d.sequence.begin(), d.sequence.end() - 1), 1);
  EXPECT_EQ(d.sequence.back(), writes + 1);
}

TEST_F(WatchpointBuffer, BackwardSnapshotBeforeTheAreaFillsHasEveryRecordNewestFirst) {
  if (!open(/*backward=*/true)) GTEST_SKIP() << skip_reason_;
  auto buffer = RingBuffer::map(event_, 1, /*overwrite=*/true);
  ASSERT_EQ(event_.enable(), 0);
  constexpr std::uint64_t writes = 10;
  write_watched(writes);
  Drained d;
  std::size_t count = buffer.snapshot_backward(
      event_, [&](const perfscope::RecordView& view) { account(view, d); });
  ASSERT_EQ(event_.disable(), 0);
  expect_clean(d);
  EXPECT_EQ(count, writes);
  ASSERT_EQ(d.sequence.size(), writes);
  for (std::size_t i = 0; i < writes; ++i) EXPECT_EQ(d.sequence[i], writes - i);
}

TEST_F(WatchpointBuffer, BackwardSnapshotKeepsOnlyTheNewestRecords) {
  if (!open(/*backward=*/true)) GTEST_SKIP() << skip_reason_;
  auto buffer = RingBuffer::map(event_, 1, /*overwrite=*/true);
  ASSERT_EQ(event_.enable(), 0);
  constexpr std::uint64_t writes = 500;
  write_watched(writes);
  Drained d;
  buffer.snapshot_backward(event_, [&](const perfscope::RecordView& view) { account(view, d); });
  // Paused output is resumed: the flight recorder keeps recording after a snapshot.
  write_watched(1);
  ASSERT_EQ(event_.disable(), 0);
  expect_clean(d);
  EXPECT_EQ(d.lost, 0U);  // overwrite mode never loses: it overwrites
  // Whole records that fit in the page, less at most the oldest, cut by the newest.
  const std::uint64_t fit = perfscope::sys::page_size() / sample_bytes;
  EXPECT_GE(d.samples, fit - 1);
  EXPECT_LE(d.samples, fit);
  ASSERT_FALSE(d.sequence.empty());
  EXPECT_EQ(d.sequence.front(), writes);  // newest first
  for (std::size_t i = 1; i < d.sequence.size(); ++i) {
    EXPECT_EQ(d.sequence[i], d.sequence[i - 1] - 1) << "record " << i;
    EXPECT_LT(d.times[i], d.times[i - 1]) << "record " << i;
  }
  Drained after;
  buffer.snapshot_backward(event_,
                           [&](const perfscope::RecordView& view) { account(view, after); });
  ASSERT_FALSE(after.sequence.empty());
  EXPECT_EQ(after.sequence.front(), writes + 1);
}

// --- sizes -------------------------------------------------------------------------------------

TEST(RingBufferSize, PagesForBytesRoundsUpToAPowerOfTwo) {
  const std::size_t page = perfscope::sys::page_size();
  EXPECT_EQ(RingBuffer::pages_for_bytes(0), 1U);
  EXPECT_EQ(RingBuffer::pages_for_bytes(1), 1U);
  EXPECT_EQ(RingBuffer::pages_for_bytes(page), 1U);
  EXPECT_EQ(RingBuffer::pages_for_bytes(page + 1), 2U);
  EXPECT_EQ(RingBuffer::pages_for_bytes(3 * page), 4U);
  EXPECT_EQ(RingBuffer::pages_for_bytes(5 * page - 1), 8U);
  EXPECT_EQ(RingBuffer::pages_for_bytes(512 * 1024), 512 * 1024 / page);
}

TEST(RingBufferSize, DefaultIsTheLargestPowerOfTwoTheMlockAllowanceHolds) {
  std::ifstream file("/proc/sys/kernel/perf_event_mlock_kb");
  long mlock_kb = 0;
  if (!(file >> mlock_kb) || mlock_kb <= 0) GTEST_SKIP() << "no perf_event_mlock_kb here";
  const std::size_t page = perfscope::sys::page_size();
  const std::size_t allowance = static_cast<std::size_t>(mlock_kb) * 1024;
  const std::size_t pages = RingBuffer::default_data_pages();
  EXPECT_TRUE(std::has_single_bit(pages));
  if (allowance >= 2 * page) {
    // The user page counts against the allowance too; twice the data would not fit.
    EXPECT_LE((pages + 1) * page, allowance);
    EXPECT_GT((2 * pages + 1) * page, allowance);
  } else {
    EXPECT_EQ(pages, 1U);
  }
  if (mlock_kb == 516 && page == 4096) {
    EXPECT_EQ(pages, 128U);  // the kernel's default
  }
}

TEST(RingBufferSize, ANonPowerOfTwoPageCountIsRefusedBeforeMapping) {
  int errnum = 0;
  auto attr = EventAttr::software(pabi::SoftwareEvent::dummy).set_flag(pabi::attr_flag::disabled);
  Event event = Event::try_open(attr, 0, -1, nullptr, 0, errnum);
  if (!event.valid()) GTEST_SKIP() << "the dummy software event does not open: " << errnum;
  for (std::size_t pages : {0, 3, 6, 100}) {
    try {
      (void)RingBuffer::map(event, pages);
      ADD_FAILURE() << pages << " pages were accepted";
    } catch (const perfscope::Error& error) {
      EXPECT_EQ(error.errnum(), EINVAL);
      EXPECT_NE(std::string(error.what()).find("power of two"), std::string::npos) << error.what();
    }
  }
  auto buffer = RingBuffer::map(event, 2);
  EXPECT_EQ(buffer.data_size(), 2 * perfscope::sys::page_size());
}

// --- AUX area ------------------------------------------------------------------------------

std::vector<std::byte> numbered_area(std::size_t size) {
  std::vector<std::byte> area(size);
  for (std::size_t i = 0; i < size; ++i) area[i] = static_cast<std::byte>(i);
  return area;
}

TEST(AuxChunk, NothingNewIsAnEmptyChunk) {
  auto area = numbered_area(64);
  AuxChunk chunk = aux_chunk(area, 100, 100);
  EXPECT_EQ(chunk.size(), 0u);
  EXPECT_EQ(chunk.end(), 100u);
}

TEST(AuxChunk, DataBeforeTheEndIsOneSpan) {
  auto area = numbered_area(64);
  AuxChunk chunk = aux_chunk(area, 64 + 8, 64 + 40);  // second lap, bytes 8..40
  EXPECT_EQ(chunk.offset, 72u);
  ASSERT_EQ(chunk.first.size(), 32u);
  EXPECT_EQ(chunk.first[0], std::byte{8});
  EXPECT_TRUE(chunk.second.empty());
  EXPECT_EQ(chunk.end(), 104u);
  EXPECT_EQ(chunk.overwritten, 0u);
}

TEST(AuxChunk, DataAcrossTheEndWrapsToTheStart) {
  auto area = numbered_area(64);
  AuxChunk chunk = aux_chunk(area, 56, 56 + 20);
  ASSERT_EQ(chunk.first.size(), 8u);
  EXPECT_EQ(chunk.first[0], std::byte{56});
  ASSERT_EQ(chunk.second.size(), 12u);
  EXPECT_EQ(chunk.second[0], std::byte{0});
  EXPECT_EQ(chunk.second[11], std::byte{11});
  EXPECT_EQ(chunk.end(), 76u);
}

// More than the area holds: only the newest area-size bytes are there, the rest is counted.
TEST(AuxChunk, AnOverrunKeepsTheNewestBytesAndCountsTheRest) {
  auto area = numbered_area(64);
  AuxChunk chunk = aux_chunk(area, 10, 10 + 100);
  EXPECT_EQ(chunk.overwritten, 36u);
  EXPECT_EQ(chunk.offset, 46u);
  EXPECT_EQ(chunk.size(), 64u);
  EXPECT_EQ(chunk.first[0], std::byte{46});
  EXPECT_EQ(chunk.end(), 110u);
}

// An event of a PMU without an AUX area (any software event): the kernel refuses the mapping,
// and the error says exactly that, not something about locked-memory limits.
TEST(AuxArea, AnEventWhosePmuHasNoAuxAreaIsRefusedWithAClearError) {
  auto attr = EventAttr::software(pabi::SoftwareEvent::cpu_clock);
  attr.set_sample_period(1'000'000).set_flag(pabi::attr_flag::disabled);
  Event event = Event::open(attr);
  auto buffer = RingBuffer::map(event, 1);
  try {
    buffer.map_aux(4096);
    FAIL() << "a cpu-clock event mapped an AUX area";
  } catch (const perfscope::Error& error) {
    EXPECT_EQ(error.errnum(), EOPNOTSUPP);
    EXPECT_EQ(error.summary(), "cannot map a 4 KiB AUX area: Operation not supported");
    EXPECT_EQ(error.diagnosis(),
              "the event's PMU has no AUX area: only events of PMUs that trace into one "
              "(intel_pt, intel_bts, cs_etm, arm_spe_N, ...) can map it.");
  }
  EXPECT_TRUE(buffer.aux_area().empty());
}

// A PMU that traces into an AUX area, where this machine has one: the area fills while the
// event runs and aux_head/aux_tail move as the manual says.
TEST(AuxArea, ATracingPmuFillsItsAuxArea) {
  std::string type_file;
  for (const char* pmu : {"intel_pt", "intel_bts", "arm_spe_0", "cs_etm"}) {
    std::string path = std::string("/sys/bus/event_source/devices/") + pmu + "/type";
    if (std::ifstream(path).good()) {
      type_file = path;
      break;
    }
  }
  if (type_file.empty()) {
    GTEST_SKIP() << "no PMU with an AUX area here (intel_pt, intel_bts, arm_spe_0, cs_etm)";
  }
  std::uint32_t type = 0;
  std::ifstream(type_file) >> type;
  pabi::PerfEventAttr raw{};
  raw.type = type;
  EventAttr attr{raw};
  attr.set_flag(pabi::attr_flag::disabled).set_flag(pabi::attr_flag::exclude_kernel);
  Event event = Event::open(attr);
  auto buffer = RingBuffer::map(event, 8);
  buffer.map_aux(64 * 1024);
  ASSERT_EQ(buffer.aux_area().size(), 64u * 1024u);
  EXPECT_EQ(buffer.aux_head(), 0u);
  event.enable();
  volatile std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < 1'000'000; ++i) sum = sum + i;
  event.disable();
  std::uint64_t head = buffer.aux_head();
  EXPECT_GT(head, 0u) << "the PMU wrote no trace";
  buffer.set_aux_tail(head);
}

}  // namespace
