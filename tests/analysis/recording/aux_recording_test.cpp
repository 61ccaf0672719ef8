// Recording AUX-area traces: the plan record makes of an AUX-tracing event, the AUXTRACE_INFO
// record perf's decoders read, and AUXTRACE records perf decodes. No machine here has a PMU that
// traces (intel_pt, arm_spe): the PMUs are sysfs trees written by the tests, and the trace is a
// synthetic Intel PT packet stream, laid out in an AUX area as the kernel leaves it (wrapped).
#include "perfscope/analysis/recording/aux_recording.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/auxtrace_info.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/recording/perf_data_sink.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/ring_buffer.hpp"
#include "support/test_support.hpp"

namespace {

using namespace perfscope;
namespace fs = std::filesystem;
namespace abi = perfscope::abi;
namespace sf = abi::sample_format;
namespace flag = abi::attr_flag;
namespace pt = perfscope::testing;

// A sysfs tree of PMUs as the kernel's drivers publish them (types as on a real machine).
class FakePmus {
 public:
  FakePmus() {
    add("intel_pt", 8,
        {{"format/tsc", "config:10"},
         {"format/noretcomp", "config:11"},
         {"format/mtc", "config:9"},
         {"format/mtc_period", "config:14-17"},
         {"format/cyc", "config:1"},
         {"max_nonturbo_ratio", "24"}});
    add("intel_bts", 9, {});
    add("arm_spe_0", 10, {{"format/ts_enable", "config:0"}, {"caps/min_interval", "1024"}});
    add("cs_etm", 11, {});
    add("software", 1, {});
  }
  const std::string& root() const { return dir_.path(); }

 private:
  void add(const std::string& pmu, int type,
           std::vector<std::pair<std::string, std::string>> files) {
    files.emplace_back("type", std::to_string(type));
    for (const auto& [name, text] : files) {
      fs::path path = fs::path(dir_.path()) / pmu / name;
      fs::create_directories(path.parent_path());
      std::ofstream(path) << text << "\n";
    }
  }
  pt::TempDir dir_;
};

EventSpec spec_of(const std::string& name, const std::string& pmu, std::uint32_t type) {
  EventSpec spec;
  spec.text = spec.name = name;
  spec.pmu = pmu;
  abi::PerfEventAttr raw{};
  raw.type = type;
  spec.attr = EventAttr{raw};
  spec.attr.set_sample_freq(4000)
      .set_sample_type(sf::ip | sf::tid | sf::time | sf::callchain)
      .set_clockid(CLOCK_MONOTONIC);
  return spec;
}

std::vector<std::uint64_t> priv_words(const std::vector<std::byte>& record) {
  std::vector<std::uint64_t> words((record.size() - 16) / 8);
  std::memcpy(words.data(), record.data() + 16, words.size() * 8);
  return words;
}

std::uint32_t auxtrace_type(const std::vector<std::byte>& record) {
  std::uint32_t type = 0;
  std::memcpy(&type, record.data() + 8, 4);
  return type;
}

TEST(AuxRecordingPlan, NoAuxEventNoPlan) {
  FakePmus pmus;
  PmuRegistry registry(pmus.root());
  std::vector<EventGroupSpec> groups{{{spec_of("cpu-clock", "", 1)}, false}};
  EXPECT_FALSE(plan_aux_recording(groups, {}, registry));
  EXPECT_TRUE(groups[0].events[0].attr.has(flag::freq));  // untouched
}

TEST(AuxRecordingPlan, TheTracingEventGoesFirstWithPeriodOneAndThePerfClock) {
  FakePmus pmus;
  PmuRegistry registry(pmus.root());
  std::vector<EventGroupSpec> groups{{{spec_of("cpu-clock", "", 1)}, false},
                                     {{spec_of("intel_pt//u", "intel_pt", 8)}, false}};
  auto plan = plan_aux_recording(groups, {0, 0, 0, true}, registry);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->pmu, "intel_pt");
  EXPECT_EQ(plan->aux_pages * sys::page_size(), 4u << 20);  // perf's privileged default
  EXPECT_EQ(plan->data_pages, 0u);                          // the session's default
  ASSERT_EQ(groups.size(), 2u);
  const auto& aux = groups[0].events[0].attr.raw();
  EXPECT_EQ(groups[0].events[0].name, "intel_pt//u");
  EXPECT_FALSE(groups[0].events[0].attr.has(flag::freq));
  EXPECT_EQ(aux.sample_period_or_freq, 1u);
  EXPECT_EQ(aux.sample_type & sf::callchain, 0u);
  // Trace timestamps convert to the kernel's perf clock: no event may use another clock.
  for (const auto& group : groups) {
    EXPECT_FALSE(group.events[0].attr.has(flag::use_clockid)) << group.events[0].name;
  }
}

TEST(AuxRecordingPlan, UnprivilegedDefaultsFitTheLockedMemoryAllowance) {
  FakePmus pmus;
  PmuRegistry registry(pmus.root());
  std::vector<EventGroupSpec> groups{{{spec_of("intel_pt//", "intel_pt", 8)}, false}};
  auto plan = plan_aux_recording(groups, {0, 0, 0, false}, registry);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->aux_pages * sys::page_size(), 128u << 10);
  EXPECT_EQ(plan->data_pages * sys::page_size(), 256u << 10);
  // What the user gives is kept.
  auto given = plan_aux_recording(groups, {16, 64, 0, false}, registry);
  ASSERT_TRUE(given);
  EXPECT_EQ(given->aux_pages, 64u);
  EXPECT_EQ(given->data_pages, 16u);
}

TEST(AuxRecordingPlan, SpeSamplesEveryMinimumIntervalUnlessToldOtherwise) {
  FakePmus pmus;
  PmuRegistry registry(pmus.root());
  std::vector<EventGroupSpec> groups{{{spec_of("arm_spe_0//", "arm_spe_0", 10)}, false}};
  ASSERT_TRUE(plan_aux_recording(groups, {}, registry));
  EXPECT_EQ(groups[0].events[0].attr.raw().sample_period_or_freq, 1024u);
  std::vector<EventGroupSpec> given{{{spec_of("arm_spe_0//", "arm_spe_0", 10)}, false}};
  ASSERT_TRUE(plan_aux_recording(given, {0, 0, 65536, false}, registry));
  EXPECT_EQ(given[0].events[0].attr.raw().sample_period_or_freq, 65536u);
}

TEST(AuxRecordingPlan, WhatCannotBeRecordedIsRefusedWithTheReason) {
  FakePmus pmus;
  PmuRegistry registry(pmus.root());
  auto message = [&](std::vector<EventGroupSpec> groups, AuxRecordingRequest request) {
    try {
      plan_aux_recording(groups, request, registry);
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message({{{spec_of("intel_pt//", "intel_pt", 8)}, false},
                     {{spec_of("intel_bts//", "intel_bts", 9)}, false}},
                    {}),
            "'intel_bts//' is a second event that traces into an AUX area: record one (perf "
            "records one too)");
  EXPECT_EQ(
      message({{{spec_of("cpu-clock", "", 1), spec_of("intel_pt//", "intel_pt", 8)}, true}}, {}),
      "'intel_pt//' traces into an AUX area and must lead its group: write it first inside the "
      "braces");
  std::string etm = message({{{spec_of("cs_etm//", "cs_etm", 11)}, false}}, {});
  EXPECT_NE(etm.find("perfscope cannot describe a cs_etm trace"), std::string::npos) << etm;
  EXPECT_NE(etm.find("record it with 'perf record -e cs_etm//'"), std::string::npos) << etm;
}

// The session checks the AUX area's size before it opens anything.
TEST(AuxRecordingPlan, TheSessionRefusesAnAuxAreaThatIsNotAPowerOfTwo) {
  SamplingOptions options;
  options.aux_pages = 48;
  SamplingSession session({{{spec_of("intel_pt//", "intel_pt", 8)}, false}},
                          Target::calling_thread(), options);
  try {
    session.open();
    FAIL() << "48 AUX pages were accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.errnum(), EINVAL);
    EXPECT_EQ(error.summary(), "an AUX area of 48 pages: the number must be a power of two");
    EXPECT_EQ(error.diagnosis(), "use 64 pages");
  }
}

TEST(AuxtraceInfo, IntelPtHasPerfsWordsInPerfsOrder) {
  FakePmus pmus;
  PmuRegistry registry(pmus.root());
  AuxtraceSetup setup;
  PageClock clock;
  clock.time_shift = 31;
  clock.time_mult = 1789569706;
  clock.time_zero = 12345;
  clock.has_time_zero = true;
  setup.clock = clock;
  setup.per_cpu_mmaps = true;
  setup.context_switches = true;
  setup.pmu_dir = pmus.root() + "/intel_pt";
  auto record = encode_auxtrace_info(*registry.find("intel_pt"), setup);
  ASSERT_EQ(record.size(), 0x98u);  // as perf writes it (17 words)
  abi::RecordHeader header;
  std::memcpy(&header, record.data(), sizeof header);
  EXPECT_EQ(header.type, 70u);
  EXPECT_EQ(header.size, 0x98u);
  EXPECT_EQ(auxtrace_type(record), 1u);
  auto words = priv_words(record);
  EXPECT_EQ(words[0], 8u);  // PMU type
  EXPECT_EQ(words[1], 31u);
  EXPECT_EQ(words[2], 1789569706u);
  EXPECT_EQ(words[3], 12345u);
  EXPECT_EQ(words[4], 1u);         // cap_user_time_zero
  EXPECT_EQ(words[5], 0x400u);     // tsc
  EXPECT_EQ(words[6], 0x800u);     // noretcomp
  EXPECT_EQ(words[7], 3u);         // CPU-wide switch records
  EXPECT_EQ(words[8], 0u);         // not a snapshot
  EXPECT_EQ(words[9], 1u);         // per-CPU buffers
  EXPECT_EQ(words[10], 0x200u);    // mtc
  EXPECT_EQ(words[11], 0x3c000u);  // mtc_period
  EXPECT_EQ(words[14], 0x2u);      // cyc
  EXPECT_EQ(words[15], 24u);       // max_nonturbo_ratio
  EXPECT_EQ(words[16], 0u);        // no address filter
  setup.per_cpu_mmaps = false;
  EXPECT_EQ(priv_words(encode_auxtrace_info(*registry.find("intel_pt"), setup))[7], 2u);
}

TEST(AuxtraceInfo, BtsSpeAndTheRest) {
  FakePmus pmus;
  PmuRegistry registry(pmus.root());
  AuxtraceSetup setup;
  auto bts = encode_auxtrace_info(*registry.find("intel_bts"), setup);
  EXPECT_EQ(auxtrace_type(bts), 2u);
  EXPECT_EQ(priv_words(bts), (std::vector<std::uint64_t>{9, 0, 0, 0, 0, 0}));
  auto spe = encode_auxtrace_info(*registry.find("arm_spe_0"), setup);
  EXPECT_EQ(auxtrace_type(spe), 4u);
  EXPECT_EQ(priv_words(spe), (std::vector<std::uint64_t>{10, 1}));
  try {
    encode_auxtrace_info(*registry.find("software"), setup);
    FAIL() << "a PMU without an AUX trace was described";
  } catch (const Error& error) {
    EXPECT_EQ(error.errnum(), EOPNOTSUPP);
  }
}

// An Intel PT packet stream: PSB, TSC, CBR, PSBEND, a TNT and padding (perf's decoder names
// each of them in a dump).
std::vector<std::byte> pt_packets() {
  std::vector<unsigned> bytes = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,  // PSB
                                 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
                                 0x19, 0xe8, 0xcf, 0xd2, 0x4c, 0xbc, 0x00, 0x00,  // TSC
                                 0x02, 0x03, 0x1d, 0x00,                          // CBR
                                 0x02, 0x23,                                      // PSBEND
                                 0x06,                                            // TNT T
                                 0x00, 0x00, 0x00};                               // PAD
  std::vector<std::byte> out;
  for (unsigned b : bytes) out.push_back(static_cast<std::byte>(b));
  return out;
}

TEST(AuxtraceRecording, ATraceInAWrappedAuxAreaIsWrittenSoThatPerfDecodesIt) {
  FakePmus pmus;
  PmuRegistry registry(pmus.root());
  // The kernel wrote the stream at stream offset 64 * 3 + 40 of a 64-byte area: it wraps.
  std::vector<std::byte> packets = pt_packets();
  std::vector<std::byte> area(64);
  std::uint64_t tail = 64 * 3 + 40;
  for (std::size_t i = 0; i < packets.size(); ++i) area[(tail + i) % area.size()] = packets[i];
  AuxChunk chunk = aux_chunk(area, tail, tail + packets.size());
  ASSERT_EQ(chunk.first.size(), 24u);
  ASSERT_EQ(chunk.second.size(), packets.size() - 24);

  PerfDataEvent event;
  abi::PerfEventAttr attr{};
  attr.type = 8;
  attr.size = sizeof attr;
  attr.sample_period_or_freq = 1;
  attr.sample_type = sf::ip | sf::tid | sf::time | sf::cpu;
  attr.flags = flag::sample_id_all | flag::disabled;
  event.attr = attr;
  event.name = "intel_pt//u";
  event.ids = {42};
  std::string path = pt::temp_path("intel_pt.data");
  {
    PerfDataWriter writer(path, {event});
    AuxtraceSetup setup;
    setup.pmu_dir = pmus.root() + "/intel_pt";
    writer.append(encode_auxtrace_info(*registry.find("intel_pt"), setup));
    PerfDataSink sink(writer);
    sink.aux_data(SessionAuxData{chunk, 2, 3, -1});
    writer.end_round();
    writer.finish({});
  }
  PerfDataReader reader = PerfDataReader::open(path);
  EXPECT_EQ(reader.user_records_seen(abi::UserRecordType::auxtrace_info), 1u);
  std::vector<std::byte> trace;
  std::uint64_t auxtrace_offset = 0;
  perf_data::AuxtraceRecord head{};
  auto error = reader.for_each_record([&](const PerfDataRecord& record) {
    if (record.view.header.type != static_cast<std::uint32_t>(abi::UserRecordType::auxtrace)) {
      return;
    }
    std::memcpy(&head, record.view.bytes.data(), sizeof head);
    auxtrace_offset = record.offset;
    trace.assign(record.trailing.begin(), record.trailing.end());
  });
  ASSERT_FALSE(error);
  EXPECT_EQ(head.offset, tail);
  EXPECT_EQ(head.idx, 2u);
  EXPECT_EQ(head.cpu, 3u);
  EXPECT_EQ(head.tid, 0xffffffffu);
  ASSERT_EQ(trace.size(), 40u);  // padded to 8 bytes with zeros
  EXPECT_TRUE(std::equal(packets.begin(), packets.end(), trace.begin()));
  // The AUXTRACE feature indexes the record, as perf's does.
  ASSERT_EQ(reader.features().auxtrace_index.size(), 1u);
  EXPECT_EQ(reader.features().auxtrace_index[0].file_offset, auxtrace_offset);
  EXPECT_EQ(reader.features().auxtrace_index[0].size, 48u + 40u);

  if (std::system("perf --version >/dev/null 2>&1") != 0) {
    fs::remove(path);
    GTEST_SKIP() << "Linux perf is not installed: the oracle half is skipped";
  }
  auto dump = pt::run_command({"perf", "script", "-D", "-i", path});
  EXPECT_EQ(dump.exit_status, 0) << dump.err;
  for (const char* expected :
       {"PERF_RECORD_AUXTRACE_INFO type: 1", "  PMU Type            8",
        "  TSC bit             0x400", "  Max non-turbo ratio 24",
        "PERF_RECORD_AUXTRACE size: 0x28  offset: 0xe8", "idx: 2  tid: -1  cpu: 3",
        "Intel Processor Trace data: size 40 bytes", "PSB", "TSC 0xbc4cd2cfe8", "CBR 0x1d",
        "PSBEND", "TNT T (1)"}) {
    EXPECT_NE(dump.out.find(expected), std::string::npos) << expected << "\n" << dump.out;
  }
  auto header = pt::run_command({"perf", "report", "--header-only", "-i", path});
  EXPECT_NE(header.out.find("contains AUX area data"), std::string::npos) << header.out;
  fs::remove(path);
}

}  // namespace
