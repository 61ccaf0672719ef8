// Exact counts on the emulated PMU (QEMU -icount shift=0: one instruction, one nanosecond, one
// cycle): instructions:u over a loop of known length, and cycles against instructions.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>

#include "lab/lab_workload.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"

namespace {

using perfscope::Event;
using perfscope::EventAttr;
using perfscope::Reading;

// What instructions:u counts in run_counted_loop besides the loop's 2N instructions: the mov
// loading N, the four movs before the disable's svc, and the svc itself (the PMU counts it at
// EL0 before the exception is taken). Measured with QEMU 7.2 -cpu max and Debian's 6.1 kernel.
constexpr std::uint64_t exact_count_constant = 6;

EventAttr parsed(const char* text) {
  EventAttr attr = perfscope::parse_event_list(text).at(0).events.at(0).attr;
  attr.set_flag(perfscope::abi::attr_flag::disabled);
  return attr;
}

std::uint64_t value_of(const Event& event) {
  Reading reading;
  EXPECT_TRUE(event.read(reading));
  return reading.value;
}

TEST(ExactCounting, InstructionsUserIsTheLoopPlusAFixedConstant) {
  perfscope::lab::SecondCpuOffline single_cpu;
  ASSERT_EQ(single_cpu.result(), 0);
  const std::uint64_t lengths[] = {1, 1'000, 1'000'000, 10'000'000};
  for (std::uint64_t iterations : lengths) {
    Event event = Event::open(parsed("instructions:u"));
    perfscope::lab::run_counted_loop(event.fd(), iterations, false);
    std::uint64_t counted = value_of(event);
    std::printf("pmu-lab: instructions:u over a %llu-instruction loop: %llu (+%lld)\n",
                static_cast<unsigned long long>(2 * iterations),
                static_cast<unsigned long long>(counted),
                static_cast<long long>(counted - 2 * iterations));
    EXPECT_EQ(counted, 2 * iterations + exact_count_constant) << "iterations " << iterations;
  }
}

TEST(ExactCounting, CyclesEqualInstructionsUnderIcount) {
  perfscope::lab::SecondCpuOffline single_cpu;
  ASSERT_EQ(single_cpu.result(), 0);
  Event cycles = Event::open(parsed("cycles:u"));
  Event instructions = Event::open(parsed("instructions:u"), 0, -1, &cycles);
  const std::uint64_t iterations = 5'000'000;
  perfscope::lab::run_counted_loop(cycles.fd(), iterations, true);
  std::uint64_t cycle_count = value_of(cycles);
  std::uint64_t instruction_count = value_of(instructions);
  std::printf("pmu-lab: group {cycles:u,instructions:u}: cycles %llu, instructions %llu\n",
              static_cast<unsigned long long>(cycle_count),
              static_cast<unsigned long long>(instruction_count));
  EXPECT_EQ(instruction_count, 2 * iterations + exact_count_constant);
  EXPECT_EQ(cycle_count, instruction_count);
}

}  // namespace
