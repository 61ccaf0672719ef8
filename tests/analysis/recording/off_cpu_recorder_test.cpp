// OffCpuRecorder on hand-made switch records: intervals matched in time order even when a
// switch-in is read before its switch-out (buffers of different CPUs), the threshold, threads
// that exit, and threads still blocked at the end.
#include "perfscope/analysis/recording/off_cpu_recorder.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/event_attr.hpp"

namespace {

using namespace perfscope;
namespace sf = perfscope::abi::sample_format;
namespace misc = perfscope::abi::record_misc;

struct Written {
  std::uint32_t tid = 0;
  std::uint64_t time = 0, period = 0;
  char state = 0;
};

// Keeps the offcpu-time samples (decoded) and counts what else it was passed.
class Capture final : public RecordingSink {
 public:
  explicit Capture(ParseConfig config) : config_(config) {}
  void record(const RecordView& view, std::size_t, const ParseConfig&) override {
    if (view.header.type != static_cast<std::uint32_t>(perfscope::abi::RecordType::sample)) {
      ++others;
      return;
    }
    SampleRecord sample;
    DecodeError error;
    ASSERT_TRUE(decode_sample(view, config_, sample, error));
    written.push_back({sample.tid, sample.time, sample.period,
                       sample.raw.empty() ? '\0' : static_cast<char>(sample.raw.front())});
  }
  void end_round() override { ++rounds; }
  std::vector<Written> written;
  int others = 0, rounds = 0;

 private:
  ParseConfig config_;
};

class OffCpuRecorderTest : public ::testing::Test {
 protected:
  OffCpuRecorderTest() {
    EventAttr attr = EventAttr::software(perfscope::abi::SoftwareEvent::cpu_clock);
    attr.set_sample_type(sf::ip | sf::tid | sf::time | sf::period | sf::identifier);
    attr.set_flag(perfscope::abi::attr_flag::sample_id_all);
    source.identity_fields = attr.raw().sample_type;
    source.model = attr.raw();
    config = ParseConfig::from_attr(attr.raw());
  }

  // PERF_RECORD_SWITCH with its sample_id trailer (TID, TIME, IDENTIFIER).
  std::vector<std::byte> switch_record(std::uint32_t tid, std::uint64_t time, bool out,
                                       bool preempted = false) {
    std::vector<std::byte> bytes(8 + 8 + 8 + 8);
    perfscope::abi::RecordHeader header{};
    header.type = static_cast<std::uint32_t>(perfscope::abi::RecordType::switch_);
    header.misc = static_cast<std::uint16_t>((out ? misc::switch_out : 0) |
                                             (preempted ? misc::switch_out_preempt : 0));
    header.size = static_cast<std::uint16_t>(bytes.size());
    std::memcpy(bytes.data(), &header, sizeof header);
    std::uint32_t ids[2] = {tid, tid};
    std::memcpy(bytes.data() + 8, ids, sizeof ids);
    std::memcpy(bytes.data() + 16, &time, sizeof time);
    std::uint64_t id = 1;
    std::memcpy(bytes.data() + 24, &id, sizeof id);
    return bytes;
  }

  std::vector<std::byte> exit_record(std::uint32_t tid, std::uint64_t time) {
    std::vector<std::byte> bytes(8 + 24 + 24);
    perfscope::abi::RecordHeader header{};
    header.type = static_cast<std::uint32_t>(perfscope::abi::RecordType::exit);
    header.size = static_cast<std::uint16_t>(bytes.size());
    std::memcpy(bytes.data(), &header, sizeof header);
    std::uint32_t ids[4] = {tid, 1, tid, 1};
    std::memcpy(bytes.data() + 8, ids, sizeof ids);
    std::memcpy(bytes.data() + 24, &time, sizeof time);
    return bytes;
  }

  void feed(OffCpuRecorder& recorder, const std::vector<std::byte>& bytes) {
    RecordView view;
    std::memcpy(&view.header, bytes.data(), sizeof view.header);
    view.bytes = bytes;
    recorder.record(view, 0, config);
  }

  OffCpuSource source;
  ParseConfig config;
};

TEST_F(OffCpuRecorderTest, SwitchInReadBeforeItsSwitchOutStillEndsIt) {
  Capture capture(ParseConfig::from_attr(off_cpu_file_event(source).attr));
  OffCpuRecorder recorder(capture, source, {});
  // Round 1 reads CPU 1's buffer (the switch-in at 300) before CPU 0's (the switch-out at 100).
  feed(recorder, switch_record(5, 300, false));
  feed(recorder, switch_record(5, 100, true, true));
  recorder.end_round();
  EXPECT_TRUE(capture.written.empty()) << "matched before the round's records were in order";
  feed(recorder, switch_record(5, 1000, true));
  recorder.end_round();
  ASSERT_EQ(capture.written.size(), 1u);
  EXPECT_EQ(capture.written[0].tid, 5u);
  EXPECT_EQ(capture.written[0].time, 300u);
  EXPECT_EQ(capture.written[0].period, 200u);
  EXPECT_EQ(capture.written[0].state, 'R');
  feed(recorder, switch_record(5, 4000, false));
  recorder.finish();
  ASSERT_EQ(capture.written.size(), 2u);
  EXPECT_EQ(capture.written[1].period, 3000u);
  EXPECT_EQ(capture.written[1].state, 'B');
  EXPECT_EQ(capture.others, 0) << "switch records are not written to the file";
  EXPECT_EQ(recorder.stats().written, 2u);
  EXPECT_EQ(recorder.stats().written_ns, 3200u);
  EXPECT_EQ(recorder.stats().lost_switch_ins, 0u);
}

TEST_F(OffCpuRecorderTest, ThresholdExitAndTheEnd) {
  Capture capture(ParseConfig::from_attr(off_cpu_file_event(source).attr));
  OffCpuRecorder recorder(capture, source, OffCpuOptions{500, 1});
  feed(recorder, switch_record(7, 100, true));
  feed(recorder, switch_record(7, 400, false));  // 300 ns: below the threshold
  feed(recorder, switch_record(8, 100, true));   // exits while switched out
  feed(recorder, exit_record(8, 200));
  feed(recorder, switch_record(9, 1000, true));  // still blocked at the end
  feed(recorder, switch_record(7, 1500, true));
  feed(recorder, switch_record(7, 2500, false));  // 1000 ns
  recorder.finish();
  EXPECT_EQ(capture.others, 1) << "the EXIT record goes on to the file";
  ASSERT_EQ(capture.written.size(), 2u);
  EXPECT_EQ(recorder.stats().below_threshold, 1u);
  EXPECT_EQ(recorder.stats().below_threshold_ns, 300u);
  EXPECT_EQ(recorder.stats().still_blocked, 1u);
  std::uint64_t tid7 = 0, tid9 = 0;
  for (const auto& written : capture.written) {
    if (written.tid == 7) tid7 = written.period;
    if (written.tid == 9) tid9 = written.period;
  }
  EXPECT_EQ(tid7, 1000u);
  EXPECT_EQ(tid9, 1500u);  // until the last time seen (2500)
}

}  // namespace
