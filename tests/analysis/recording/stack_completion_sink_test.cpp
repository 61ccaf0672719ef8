// StackCompletionSink's shedding: rounds read from buffers the reader found half full go on
// without unwinding (counted as shed), until a round finds them under a third; with the worker
// too, whose rounds are handed over as batches. Every record reaches the file either way.
#include "perfscope/analysis/recording/stack_completion_sink.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/abi/user_registers.hpp"
#include "perfscope/core/event_attr.hpp"

namespace {

using namespace perfscope;
namespace sf = perfscope::abi::sample_format;
namespace pabi = perfscope::abi;

class Count final : public RecordingSink {
 public:
  void record(const RecordView&, std::size_t, const ParseConfig&) override { ++records; }
  void end_round() override { ++rounds; }
  int records = 0, rounds = 0;
};

// A -g sample without user registers (a kernel thread's): nothing to unwind, passed on either
// way, and counted by how it was passed.
std::vector<std::byte> kernel_thread_sample() {
  std::vector<std::byte> bytes(8 + 8 + 8 + 8 + 8);  // header, ip, callchain nr + 1, regs abi 0
  pabi::RecordHeader header{static_cast<std::uint32_t>(pabi::RecordType::sample), 0,
                            static_cast<std::uint16_t>(bytes.size() + 8)};
  bytes.resize(header.size);  // stack size 0
  std::memcpy(bytes.data(), &header, sizeof header);
  std::uint64_t words[] = {0xffffffff81000000, 1, 0xffffffff81000000, 0, 0};
  std::memcpy(bytes.data() + 8, words, sizeof words);
  return bytes;
}

ParseConfig gap_config() {
  EventAttr attr = EventAttr::software(perfscope::abi::SoftwareEvent::cpu_clock);
  attr.set_sample_type(sf::ip | sf::callchain | sf::regs_user | sf::stack_user);
  attr.set_sample_regs_user(pabi::dwarf_unwind_register_mask());
  attr.set_sample_stack_user(64);
  return ParseConfig::from_attr(attr.raw());
}

void read_round(StackCompletionSink& sink, double fullest, const std::vector<std::byte>& sample,
                const ParseConfig& config) {
  sink.record(record_view(sample), 0, config);
  sink.buffers_filled(fullest);
  sink.end_round();
}

void expect_shedding(bool worker) {
  Count downstream;
  ParseConfig config = gap_config();
  auto sample = kernel_thread_sample();
  StackCompletionSink sink(downstream, StackCompletion::fill_frame_pointer_gaps);
  if (worker) sink.start_worker();
  // Fills as the rounds find them: a quarter (on time), 0.6 (late: shed from here), 0.4 (still
  // shedding), 0.2 (caught up), 0.45 (not late enough to start again).
  for (double fullest : {0.25, 0.6, 0.4, 0.2, 0.45}) read_round(sink, fullest, sample, config);
  sink.finish();
  EXPECT_EQ(downstream.records, 5);
  EXPECT_EQ(downstream.rounds, 5);
  // Inline, a round's fill is known after its records went on: shedding starts with the next
  // round. The worker's batch is handed over with it: the late round itself is shed.
  EXPECT_EQ(sink.shed(), 2u);
  EXPECT_EQ(sink.passed_behind(), sink.shed());
}

TEST(StackCompletionSink, LateRoundsGoOnWithoutUnwindingUntilTheBuffersEmpty) {
  expect_shedding(false);
}

TEST(StackCompletionSink, LateRoundsAreShedOnTheWorkerToo) { expect_shedding(true); }

}  // namespace
