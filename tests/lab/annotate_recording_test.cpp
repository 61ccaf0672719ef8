// A real arm64 recording for `perfscope annotate`: cycles:u samples of a function whose hot loop
// is known instruction by instruction, written as a perf.data file (the process's MMAP2 records,
// then the samples) by the same writer `perfscope record` uses. The file leaves the emulated
// machine over the serial console, base64 between "pmu-lab-file:" markers; scripts/pmu-lab then
// annotates it with the host's perfscope and the unstripped lab_tests (AArch64 disassembly) and
// checks the loop's samples against the counts this test prints ("pmu-lab-annotate:").
#include <gtest/gtest.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "lab/lab_workload.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/perf_data/synthesized_records.hpp"
#include "perfscope/core/base64.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/core/ring_buffer.hpp"

// Four instructions a round (add, eor, subs, b.ne), so that the samples have a known place to
// land; returns the loop's first address (adr after the loop, outside the counted rounds).
// extern "C" and not inlined: one copy, named as the host's annotate is asked for it.
extern "C" __attribute__((noinline)) std::uint64_t pmu_lab_annotate_loop(std::uint64_t rounds) {
  std::uint64_t loop_start;
  asm volatile(
      "mov x9, %[n]\n"
      "1:\n\t"
      "add x10, x10, #1\n\t"
      "eor x11, x11, x10\n\t"
      "subs x9, x9, #1\n\t"
      "b.ne 1b\n\t"
      "adr %[start], 1b\n"
      : [start] "=r"(loop_start)
      : [n] "r"(rounds)
      : "x9", "x10", "x11", "cc", "memory");
  return loop_start;
}

namespace {

namespace abi = perfscope::abi;
namespace sf = abi::sample_format;

constexpr std::uint64_t period = 10'007;
constexpr std::uint64_t rounds = 2'500'000;  // 10M cycles: about a thousand samples
constexpr std::uint64_t loop_bytes = 4 * 4;
constexpr std::size_t data_pages = 64;

TEST(AnnotateRecording, CyclesOfAKnownLoopGoToAPerfDataFileForTheHost) {
  perfscope::lab::SecondCpuOffline single_cpu;
  ASSERT_EQ(single_cpu.result(), 0);
  perfscope::EventAttr attr = perfscope::parse_event_list("cycles:u").at(0).events.at(0).attr;
  attr.set_sample_period(period);
  attr.set_sample_type(sf::ip | sf::tid | sf::time | sf::period);
  attr.set_flag(abi::attr_flag::disabled);
  attr.set_flag(abi::attr_flag::sample_id_all);
  perfscope::Event event = perfscope::Event::open(attr);
  perfscope::RingBuffer ring = perfscope::RingBuffer::map(event, data_pages);
  perfscope::ParseConfig config = perfscope::ParseConfig::from_attr(event.attr().raw());

  const std::string path = "/tmp/annotate.data";
  std::uint64_t samples = 0, in_loop = 0, lost = 0, throttles = 0;
  std::uint64_t per_instruction[loop_bytes / 4] = {};
  {
    perfscope::PerfDataWriter writer(
        path, {perfscope::PerfDataEvent{event.attr().raw(), "cycles:u", {event.id()}}});
    auto append = [&](std::span<const std::byte> bytes) { writer.append(bytes); };
    ASSERT_TRUE(perfscope::synthesize_process(::getpid(), config.sample_id_size(), append));
    writer.end_init();
    writer.end_round();

    event.enable();
    std::uint64_t loop_start = pmu_lab_annotate_loop(rounds);
    event.disable();

    perfscope::SampleRecord sample;
    ring.drain([&](const perfscope::RecordView& view) {
      writer.append(view);
      if (view.type() == static_cast<std::uint32_t>(abi::RecordType::lost)) ++lost;
      if (view.type() == static_cast<std::uint32_t>(abi::RecordType::throttle)) ++throttles;
      if (view.type() != static_cast<std::uint32_t>(abi::RecordType::sample)) return;
      perfscope::DecodeError error;
      if (!perfscope::decode_sample(view, config, sample, error)) return;
      ++samples;
      if (sample.ip >= loop_start && sample.ip < loop_start + loop_bytes) {
        ++in_loop;
        ++per_instruction[(sample.ip - loop_start) / 4];
      }
    });
    writer.end_round();
    perfscope::PerfDataFeatures features;
    features.hostname = "pmu-lab";
    features.arch = "aarch64";
    utsname host{};
    if (::uname(&host) == 0) features.osrelease = host.release;
    writer.finish(features);
    std::printf(
        "pmu-lab: annotate recording: %llu samples, %llu in the loop at %#llx (by instruction: "
        "%llu %llu %llu %llu)\n",
        static_cast<unsigned long long>(samples), static_cast<unsigned long long>(in_loop),
        static_cast<unsigned long long>(loop_start),
        static_cast<unsigned long long>(per_instruction[0]),
        static_cast<unsigned long long>(per_instruction[1]),
        static_cast<unsigned long long>(per_instruction[2]),
        static_cast<unsigned long long>(per_instruction[3]));
  }
  // Period P over about 4 * rounds cycles of the loop: T/P samples, all of them in the loop but
  // for an overflow at its very edges.
  const std::uint64_t expected = 4 * rounds / period;
  EXPECT_NEAR(static_cast<double>(samples), static_cast<double>(expected), 2.0);
  EXPECT_GE(in_loop + 2, samples);
  EXPECT_EQ(lost, 0U);
  EXPECT_EQ(throttles, 0U);

  std::ifstream file(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 0U);
  std::string encoded = perfscope::base64_encode(std::string_view(bytes.data(), bytes.size()));
  std::printf("pmu-lab-file: begin annotate.data\n");
  for (std::size_t at = 0; at < encoded.size(); at += 76) {
    std::printf("%s\n", encoded.substr(at, 76).c_str());
  }
  std::printf("pmu-lab-file: end\n");
  std::printf("pmu-lab-annotate: samples %llu in_loop %llu\n",
              static_cast<unsigned long long>(samples), static_cast<unsigned long long>(in_loop));
  std::fflush(stdout);
}

}  // namespace
