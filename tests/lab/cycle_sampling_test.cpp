// Sampling on the cycle counter of the emulated PMU: under -icount a loop's cycles are exactly its
// instructions, so a sample period P over T cycles gives T/P samples. The issue asks for T/P +- 1
// (an overflow on the very edge of the measured region may or may not become a sample); with
// the counted loop, whose edges are fixed instructions, it is exactly floor(T/P).
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "lab/lab_workload.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/core/ring_buffer.hpp"
#include "perfscope/engine/sampling_session.hpp"
#include "perfscope/engine/target.hpp"

namespace {

using perfscope::Event;
using perfscope::EventAttr;
using perfscope::RingBuffer;
namespace abi = perfscope::abi;
namespace sf = abi::sample_format;

// See exact_count_constant in exact_counting_test.cpp: run_counted_loop's fixed instructions.
constexpr std::uint64_t counted_loop_extra = 6;
constexpr std::uint64_t loop_iterations = 5'000'000;
constexpr std::size_t data_pages = 16;

// Periods well above the throttle limit of lab/init.cpp (100,000 samples per emulated second, one
// per 10,000 instructions) and not divisors of the loop, so that rounding is exercised: T/P is
// just under 10 and 100 and just over 300. The last overflow of each comes 706 or more cycles
// before the loop's end, clear of the edge.
constexpr std::uint64_t periods[] = {1'000'003, 100'003, 33'331};

constexpr std::uint32_t record_sample = static_cast<std::uint32_t>(abi::RecordType::sample);
constexpr std::uint32_t record_throttle = static_cast<std::uint32_t>(abi::RecordType::throttle);
constexpr std::uint32_t record_lost = static_cast<std::uint32_t>(abi::RecordType::lost);

EventAttr cycles_sampling(std::uint64_t period, std::uint64_t sample_type) {
  EventAttr attr = perfscope::parse_event_list("cycles:u").at(0).events.at(0).attr;
  attr.set_sample_period(period);
  attr.set_sample_type(sample_type);
  attr.set_flag(abi::attr_flag::disabled);
  return attr;
}

struct SampleTally {
  std::uint64_t samples = 0;
  std::uint64_t wrong_period = 0;
  std::uint64_t kernel_ips = 0;  // an :u event must never sample the kernel
  std::uint64_t throttles = 0;
  std::uint64_t lost = 0;
  std::uint64_t undecodable = 0;
};

TEST(CycleSampling, PeriodPOverNCyclesGivesNOverPSamples) {
  perfscope::lab::SecondCpuOffline single_cpu;
  ASSERT_EQ(single_cpu.result(), 0);
  for (std::uint64_t period : periods) {
    const std::uint64_t sample_type = sf::ip | sf::period;
    Event event = Event::open(cycles_sampling(period, sample_type));
    RingBuffer ring = RingBuffer::map(event, data_pages);
    perfscope::lab::run_counted_loop(event.fd(), loop_iterations, false);

    perfscope::ParseConfig config = perfscope::ParseConfig::from_attr(event.attr().raw());
    SampleTally tally;
    perfscope::SampleRecord sample;
    ring.drain([&](const perfscope::RecordView& view) {
      if (view.type() == record_throttle) ++tally.throttles;
      if (view.type() == record_lost) ++tally.lost;
      if (view.type() != record_sample) return;
      perfscope::DecodeError error;
      if (!perfscope::decode_sample(view, config, sample, error)) {
        ++tally.undecodable;
        return;
      }
      ++tally.samples;
      if (sample.period != period) ++tally.wrong_period;
      if (sample.ip >= (1ULL << 63)) ++tally.kernel_ips;
    });
    perfscope::Reading reading;
    ASSERT_TRUE(event.read(reading));

    const std::uint64_t cycles = 2 * loop_iterations + counted_loop_extra;
    const double expected = static_cast<double>(cycles) / static_cast<double>(period);
    const std::uint64_t overflows = cycles / period;
    std::printf(
        "pmu-lab: cycles:u period %llu over %llu cycles: %llu samples (T/P %.2f), "
        "count %llu\n",
        static_cast<unsigned long long>(period), static_cast<unsigned long long>(cycles),
        static_cast<unsigned long long>(tally.samples), expected,
        static_cast<unsigned long long>(reading.value));
    // Sampling must not disturb the count itself.
    EXPECT_EQ(reading.value, cycles) << "period " << period;
    EXPECT_EQ(tally.samples, overflows) << "period " << period;
    EXPECT_EQ(tally.wrong_period, 0U) << "a fixed period is reported as itself in every sample";
    EXPECT_EQ(tally.kernel_ips, 0U);
    EXPECT_EQ(tally.throttles, 0U) << "throttled: lab/init.cpp's sysctls did not apply";
    EXPECT_EQ(tally.lost, 0U);
    EXPECT_EQ(tally.undecodable, 0U);
  }
}

// The same through the engine: SamplingSession on the calling thread, started and stopped around
// the loop. Its start()/stop() add a few hundred user instructions, far less than a period.
TEST(CycleSampling, SamplingSessionOnTheCallingThreadGivesNOverPSamples) {
  perfscope::lab::SecondCpuOffline single_cpu;
  ASSERT_EQ(single_cpu.result(), 0);
  const std::uint64_t period = 100'003;
  auto groups = perfscope::parse_event_list("cycles:u");
  groups[0].events[0].attr.set_sample_period(period);
  groups[0].events[0].attr.set_sample_type(sf::ip | sf::period);
  perfscope::SamplingOptions options;
  options.inherit = false;  // one per-thread buffer
  options.track_tasks = false;
  perfscope::SamplingSession session(groups, perfscope::Target::calling_thread(), options);
  session.open();
  session.start();
  perfscope::lab::run_loop(loop_iterations);
  session.stop();

  struct Counter : perfscope::RecordConsumer {
    std::uint64_t samples = 0, other_threads = 0, wrong_period = 0, undecodable = 0;
    pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
    std::uint64_t period = 0;
    perfscope::SampleRecord sample;
    void consume(const perfscope::SessionRecord& record) override {
      if (record.view.type() != record_sample) return;
      perfscope::DecodeError error;
      if (!perfscope::decode_sample(record.view, record.config, sample, error)) {
        ++undecodable;
        return;
      }
      ++samples;
      if (static_cast<pid_t>(sample.tid) != tid) ++other_threads;
      if (sample.period != period) ++wrong_period;
    }
  } counter;
  counter.period = period;
  session.drain(counter);
  perfscope::BufferStats stats = session.total_stats();

  const double loop_cycles = 2.0 * loop_iterations;
  const double expected = loop_cycles / static_cast<double>(period);
  std::printf(
      "pmu-lab: SamplingSession cycles:u period %llu over a %.0f-cycle loop: %llu samples "
      "(T/P %.2f), lost %llu, throttles %llu\n",
      static_cast<unsigned long long>(period), loop_cycles,
      static_cast<unsigned long long>(counter.samples), expected,
      static_cast<unsigned long long>(stats.lost),
      static_cast<unsigned long long>(stats.throttles));
  EXPECT_NEAR(static_cast<double>(counter.samples), expected, 1.0);
  EXPECT_EQ(counter.other_threads, 0U);
  EXPECT_EQ(counter.wrong_period, 0U);
  EXPECT_EQ(counter.undecodable, 0U);
  EXPECT_EQ(stats.lost, 0U);
  EXPECT_EQ(stats.lost_samples, 0U);
  EXPECT_EQ(stats.throttles, 0U);
}

}  // namespace
