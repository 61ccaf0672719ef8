// perf.data as other tools and machines write it (issue #21), on files the tests build byte by
// byte where this machine cannot record them: AUXTRACE records and their trace data (file and
// pipe mode, and the writer's pass-through), a zero-length feature section, events named from
// their attrs and from the tracing data, the idle task's name, simpleperf's own records and its
// tracing-data record, kernel and module maps, and the report of kernel samples outside them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/event_naming.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/perf_data/tracing_data.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/analysis/profile/report_table.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"
#include "record_builder.hpp"

namespace {

using namespace perfscope;
using perfscope::test::FileBuilder;
using perfscope::test::pipe_file;
using perfscope::test::RecordBuilder;
using perfscope::test::user_type;
namespace abi = perfscope::abi;
namespace sf = abi::sample_format;
namespace flag = abi::attr_flag;

constexpr std::uint64_t sample_type = sf::ip | sf::tid | sf::time | sf::period;
constexpr auto sample_type_id = static_cast<std::uint32_t>(abi::RecordType::sample);

abi::PerfEventAttr make_attr(abi::EventType type, std::uint64_t config, std::uint64_t flags) {
  abi::PerfEventAttr attr{};
  attr.type = static_cast<std::uint32_t>(type);
  attr.size = abi::attr_size::ver7;
  attr.config = config;
  attr.sample_type = sample_type;
  attr.flags = flags;
  return attr;
}

std::vector<std::byte> sample(std::uint64_t ip, std::uint32_t pid, std::uint64_t time) {
  return RecordBuilder(sample_type_id)
      .misc(abi::record_misc::user)
      .add(ip)
      .add(pid)
      .add(pid)
      .add(time)
      .add(std::uint64_t{1})
      .done();
}

// An AUXTRACE record with `data` after it, padded to 8 bytes as perf writes it.
std::vector<std::byte> auxtrace(const std::vector<std::byte>& data) {
  std::size_t padded = (data.size() + 7) & ~std::size_t{7};
  auto bytes = RecordBuilder(user_type(abi::UserRecordType::auxtrace))
                   .add(std::uint64_t{padded})
                   .add(std::uint64_t{0x1000})  // offset
                   .add(std::uint64_t{42})      // reference
                   .add(std::uint32_t{0})       // idx
                   .add(std::uint32_t{7})       // tid
                   .add(std::uint32_t{1})       // cpu
                   .add(std::uint32_t{0})
                   .done();
  bytes.insert(bytes.end(), data.begin(), data.end());
  bytes.resize(bytes.size() + padded - data.size());
  return bytes;
}

std::vector<std::byte> trace_bytes(std::size_t size) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(0xa0 + i);
  return bytes;
}

struct Walked {
  std::vector<std::uint64_t> sample_times;
  std::vector<std::byte> aux_data;
  int auxtrace_records = 0;
};

Walked walk(const PerfDataReader& reader, bool ordered) {
  Walked out;
  auto visit = [&](const PerfDataRecord& record) {
    if (record.view.header.type == sample_type_id) out.sample_times.push_back(record.time);
    if (record.view.header.type == user_type(abi::UserRecordType::auxtrace)) {
      ++out.auxtrace_records;
      out.aux_data.assign(record.trailing.begin(), record.trailing.end());
    }
  };
  auto error = ordered ? reader.for_each_record_ordered(visit) : reader.for_each_record(visit);
  EXPECT_FALSE(error) << error->what();
  return out;
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("perfscope_foreign_") + name + "_" + std::to_string(::getpid())))
      .string();
}

TEST(ForeignPerfDataTest, AuxtraceDataIsSteppedOverInFileMode) {
  FileBuilder file;
  file.events.push_back({make_attr(abi::EventType::software, 0, flag::exclude_guest), {}});
  file.append(sample(0x1000, 7, 10));
  file.append(auxtrace(trace_bytes(13)));
  file.append(sample(0x2000, 7, 20));
  PerfDataReader reader = PerfDataReader::from_bytes(file.bytes());
  for (bool ordered : {false, true}) {
    Walked walked = walk(reader, ordered);
    EXPECT_EQ(walked.sample_times, (std::vector<std::uint64_t>{10, 20}));
    ASSERT_EQ(walked.auxtrace_records, 1);
    // The 13 bytes of trace data and 3 of padding, kept for a writer to copy.
    ASSERT_EQ(walked.aux_data.size(), 16u);
    EXPECT_EQ(walked.aux_data[12], std::byte{0xac});
    EXPECT_EQ(walked.aux_data[13], std::byte{0});
  }
}

TEST(ForeignPerfDataTest, AuxtraceDataIsSteppedOverInPipeMode) {
  auto bytes = pipe_file({RecordBuilder(user_type(abi::UserRecordType::header_attr))
                              .add(make_attr(abi::EventType::hardware, 0, flag::exclude_guest))
                              .done(),
                          auxtrace(trace_bytes(24)), sample(0x1000, 7, 10)});
  PerfDataReader reader = PerfDataReader::from_bytes(bytes);
  EXPECT_FALSE(reader.data_error());
  EXPECT_EQ(reader.user_records_seen(abi::UserRecordType::auxtrace), 1u);
  Walked walked = walk(reader, true);
  EXPECT_EQ(walked.sample_times, (std::vector<std::uint64_t>{10}));
  EXPECT_EQ(walked.aux_data, trace_bytes(24));
}

TEST(ForeignPerfDataTest, AuxtraceDataPastTheEndIsAnError) {
  FileBuilder file;
  file.events.push_back({make_attr(abi::EventType::software, 0, 0), {}});
  file.append(sample(0x1000, 7, 10));
  auto record = auxtrace(trace_bytes(64));
  record.resize(record.size() - 32);  // the data is cut short
  file.append(record);
  // A finished file (it has features): the cut is corruption, not a torn last record.
  PerfDataFeatures features;
  features.hostname = "host";
  auto hostname = perf_data::bit(perf_data::Feature::hostname);
  file.features.push_back({hostname, encode_feature(hostname, features, {}, 0)});
  PerfDataReader reader = PerfDataReader::from_bytes(file.bytes());
  int samples = 0;
  auto error = reader.for_each_record(
      [&](const PerfDataRecord& r) { samples += r.view.header.type == sample_type_id; });
  EXPECT_EQ(samples, 1);  // the record before it
  ASSERT_TRUE(error);
  EXPECT_NE(std::string(error->what()).find("AUX trace data"), std::string::npos) << error->what();
}

TEST(ForeignPerfDataTest, WriterPassesAuxtraceThroughAndPerfReadsIt) {
  std::string path = temp_path("auxtrace");
  PerfDataEvent event;
  event.attr = make_attr(abi::EventType::software, 0, flag::exclude_guest | flag::sample_id_all);
  event.name = "cpu-clock";
  {
    PerfDataWriter writer(path, {event});
    writer.append(sample(0x1000, 7, 10));
    perf_data::AuxtraceRecord head{};
    head.offset = 0x2000;
    head.tid = 7;
    writer.append_auxtrace(head, trace_bytes(13));
    writer.append(sample(0x2000, 7, 20));
    writer.end_round();
    writer.finish({});
  }
  PerfDataReader reader = PerfDataReader::open(path);
  // Copying the records of one file into another keeps the trace data.
  std::string copy_path = temp_path("auxtrace_copy");
  {
    PerfDataWriter copy(copy_path, {event});
    auto error = reader.for_each_record([&](const PerfDataRecord& record) {
      copy.append(record.view);
      copy.append(record.trailing);
    });
    EXPECT_FALSE(error);
    copy.finish({});
  }
  for (const std::string& file : {path, copy_path}) {
    Walked walked = walk(PerfDataReader::open(file), true);
    EXPECT_EQ(walked.sample_times, (std::vector<std::uint64_t>{10, 20})) << file;
    ASSERT_EQ(walked.aux_data.size(), 16u) << file;
    EXPECT_EQ(walked.aux_data[0], std::byte{0xa0});
  }
  // Linux perf steps over the data the same way. Without an AUXTRACE_INFO naming a PMU it has a
  // decoder for, perf refuses to decode the trace (EINVAL), so it is told not to (--no-itrace):
  // what is checked is the layout, that the samples after the trace data are where perf looks.
  if (std::system("perf --version >/dev/null 2>&1") != 0) {
    std::filesystem::remove(path);
    std::filesystem::remove(copy_path);
    GTEST_SKIP() << "Linux perf is not installed: the oracle half is skipped";
  }
  std::string out = path + ".script";
  int status = std::system(
      ("perf script --no-itrace -F ip -i " + copy_path + " > " + out + " 2>/dev/null").c_str());
  EXPECT_EQ(status, 0);
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("1000"), std::string::npos) << text;
  EXPECT_NE(text.find("2000"), std::string::npos) << text;
  std::filesystem::remove(out);
  std::filesystem::remove(path);
  std::filesystem::remove(copy_path);
}

// perf 3.x wrote CPUDESC with no contents where /proc/cpuinfo lacked the line (ARM); perf reads
// the rest of the file, and so must perfscope.
TEST(ForeignPerfDataTest, ZeroLengthFeatureSectionIsAbsent) {
  FileBuilder file;
  file.events.push_back({make_attr(abi::EventType::software, 0, 0), {}});
  file.append(sample(0x1000, 7, 10));
  PerfDataFeatures features;
  features.hostname = "armv7-board";
  file.features.push_back(
      {perf_data::bit(perf_data::Feature::hostname),
       encode_feature(perf_data::bit(perf_data::Feature::hostname), features, {}, 0)});
  file.features.push_back({perf_data::bit(perf_data::Feature::cpudesc), {}});
  file.features.push_back({perf_data::bit(perf_data::Feature::cmdline), {}});
  PerfDataReader reader = PerfDataReader::from_bytes(file.bytes());
  EXPECT_EQ(reader.features().hostname.value_or(""), "armv7-board");
  EXPECT_FALSE(reader.features().cpudesc);
  EXPECT_FALSE(reader.features().cmdline);
  EXPECT_EQ(reader.features().present.size(), 3u);
  EXPECT_EQ(walk(reader, false).sample_times, (std::vector<std::uint64_t>{10}));
}

TEST(ForeignPerfDataTest, EventNamesAreDerivedFromTheAttrAsPerfDoes) {
  using abi::EventType;
  auto name = [](EventType type, std::uint64_t config, std::uint64_t flags) {
    return derived_event_name(make_attr(type, config, flags), {});
  };
  // perf record's defaults exclude the guest: no modifiers.
  EXPECT_EQ(name(EventType::hardware, 0, flag::exclude_guest), "cycles");
  // simpleperf and perf 3.x leave exclude_guest clear: ":HG".
  EXPECT_EQ(name(EventType::hardware, 0, 0), "cycles:HG");
  EXPECT_EQ(name(EventType::software, 0, 0), "cpu-clock:HG");
  EXPECT_EQ(name(EventType::hardware, 5, flag::exclude_guest), "branch-misses");
  EXPECT_EQ(name(EventType::hardware, 2, flag::exclude_guest), "cache-references");
  // cycles:u as perf record sets it.
  EXPECT_EQ(name(EventType::hardware, 0, flag::exclude_kernel | flag::exclude_hv), "cycles:u");
  EXPECT_EQ(name(EventType::hardware, 0, 2ULL << flag::precise_ip_shift), "cycles:pp");
  EXPECT_EQ(name(EventType::hw_cache, 0x10000, flag::exclude_guest), "L1-dcache-load-misses");
  EXPECT_EQ(name(EventType::raw, 0x1a2b, flag::exclude_guest), "raw 0x1a2b");
  EXPECT_EQ(name(EventType::tracepoint, 1329, 0), "unknown tracepoint");
  EXPECT_EQ(derived_event_name(make_attr(static_cast<EventType>(42), 0, 0), {}),
            "unknown attr type: 42");
}

// The tracing data of a recording with one probe, in the layout perf writes.
std::vector<std::byte> probe_tracing_data() {
  TracingData data;
  data.header_page = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n";
  data.header_event = "# compressed entry header\n";
  data.systems.push_back(
      {"probe_untitled1",
       {"name: main\nID: 1329\nformat:\n\tfield:unsigned short common_type;\toffset:0;\t"
        "size:2;\tsigned:0;\n\nprint fmt: \"(%lx)\", REC->__probe_ip\n"}});
  data.systems.push_back({"sched", {"name: sched_switch\nID: 316\nformat:\n"}});
  return encode_tracing_data(data);
}

TEST(ForeignPerfDataTest, TracingDataNamesTracepoints) {
  std::string error;
  auto events = tracing_data_events(probe_tracing_data(), &error);
  EXPECT_EQ(error, "");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].id, 1329u);
  EXPECT_EQ(events[0].name, "probe_untitled1:main");
  EXPECT_EQ(events[1].name, "sched:sched_switch");
  // Cut short: the events before the cut are still named.
  auto cut = probe_tracing_data();
  cut.resize(cut.size() - 40);
  events = tracing_data_events(cut, &error);
  EXPECT_EQ(events.size(), 1u);
  EXPECT_NE(error, "");
}

// A pipe-mode recording of a probe: no EVENT_DESC, the name comes from HEADER_TRACING_DATA.
TEST(ForeignPerfDataTest, PipeModeTracepointIsNamedFromTracingData) {
  auto tracing = probe_tracing_data();
  std::size_t padded = (tracing.size() + 7) & ~std::size_t{7};
  auto tracing_record = RecordBuilder(user_type(abi::UserRecordType::header_tracing_data))
                            .add(static_cast<std::uint32_t>(padded))
                            .done();
  tracing.resize(padded);  // the data follows the record
  auto bytes = pipe_file({RecordBuilder(user_type(abi::UserRecordType::header_attr))
                              .add(make_attr(abi::EventType::tracepoint, 1329, 0))
                              .done(),
                          RecordBuilder(user_type(abi::UserRecordType::header_attr))
                              .add(make_attr(abi::EventType::hardware, 1, flag::exclude_guest))
                              .done(),
                          tracing_record, tracing, sample(0x1000, 7, 10)});
  PerfDataReader reader = PerfDataReader::from_bytes(bytes);
  EXPECT_FALSE(reader.data_error());
  ASSERT_EQ(reader.events().size(), 2u);
  EXPECT_EQ(reader.events()[0].name, "probe_untitled1:main");
  EXPECT_EQ(reader.events()[1].name, "instructions");
}

// simpleperf: its tracing data as a HEADER_TRACING_DATA record inside a file's data section,
// its own record types among the samples, its META_INFO feature.
TEST(ForeignPerfDataTest, SimpleperfRecordsAreReadOrSkippedByName) {
  FileBuilder file;
  file.events.push_back({make_attr(abi::EventType::tracepoint, 316, 0), {}});
  auto tracing = probe_tracing_data();
  auto tracing_record = RecordBuilder(user_type(abi::UserRecordType::header_tracing_data))
                            .add(static_cast<std::uint32_t>(tracing.size()));
  for (auto byte : tracing) tracing_record.add(byte);
  file.append(tracing_record.done());
  file.append(sample(0x1000, 7, 10));
  // SIMPLE_PERF_RECORD_CALLCHAIN (32775): perf stops at it.
  file.append(RecordBuilder(32775).add(std::uint64_t{10}).add(std::uint64_t{0x1000}).done());
  file.append(sample(0x2000, 7, 20));
  std::string meta("simpleperf_version\0001.36\0event_type_info\000sched:sched_switch,2,316\0", 66);
  std::vector<std::byte> meta_bytes(meta.size());
  std::memcpy(meta_bytes.data(), meta.data(), meta.size());
  file.features.push_back({perf_data::simpleperf_feature_meta_info, meta_bytes});
  PerfDataReader reader = PerfDataReader::from_bytes(file.bytes());
  EXPECT_EQ(reader.events()[0].name, "sched:sched_switch");
  ASSERT_EQ(reader.features().simpleperf_meta_info.size(), 2u);
  EXPECT_EQ(reader.features().simpleperf_meta_info[0].second, "1.36");
  ASSERT_EQ(reader.notes().size(), 1u);
  EXPECT_NE(reader.notes()[0].find("simpleperf 1.36"), std::string::npos) << reader.notes()[0];
  EXPECT_NE(reader.notes()[0].find("CALLCHAIN"), std::string::npos);
  EXPECT_EQ(walk(reader, true).sample_times, (std::vector<std::uint64_t>{10, 20}));
  EXPECT_EQ(perf_data::simpleperf_record_name(32775), "CALLCHAIN");
  EXPECT_EQ(perf_data::simpleperf_record_name(32777), "TRACING_DATA");
  EXPECT_EQ(perf_data::simpleperf_record_name(81), "");
}

TEST(ForeignPerfDataTest, PidZeroIsSwapperUnlessACommNamesIt) {
  TaskMaps maps;
  EXPECT_EQ(maps.comm_of(0), "swapper");
  EXPECT_EQ(maps.comm_of(1), "");
  auto comm = RecordBuilder(static_cast<std::uint32_t>(abi::RecordType::comm))
                  .add(std::uint32_t{0})
                  .add(std::uint32_t{0})
                  .text("idle")
                  .done();
  RecordView view;
  std::memcpy(&view.header, comm.data(), sizeof view.header);
  view.bytes = comm;
  maps.observe(view, ParseConfig{});
  EXPECT_EQ(maps.comm_of(0), "idle");
}

}  // namespace

namespace {

// A kernel MMAP as perf synthesizes them (pid -1, misc kernel).
RecordView kernel_mmap(std::vector<std::byte>& storage, std::uint64_t start, std::uint64_t length,
                       std::string_view filename) {
  storage = RecordBuilder(static_cast<std::uint32_t>(abi::RecordType::mmap))
                .misc(abi::record_misc::kernel)
                .add(std::uint32_t{0xffffffff})
                .add(std::uint32_t{0})
                .add(start)
                .add(length)
                .add(std::uint64_t{0})
                .text(filename)
                .done();
  RecordView view;
  std::memcpy(&view.header, storage.data(), sizeof view.header);
  view.bytes = storage;
  return view;
}

TEST(ForeignPerfDataTest, KernelModuleMapsAreNamedAsPerfNamesThem) {
  std::vector<std::byte> storage;
  // A kernel map of length 0 at 0 (simpleperf) covers every address, as perf reads it; of
  // length 0 elsewhere it maps nothing.
  TaskMaps everywhere;
  everywhere.observe(kernel_mmap(storage, 0, 0, "[kernel.kallsyms]_text"), ParseConfig{});
  EXPECT_TRUE(everywhere.has_kernel_maps());
  auto anywhere = everywhere.mapping_of(0, 0xffffffc000fec280, abi::record_misc::kernel);
  ASSERT_TRUE(anywhere);
  EXPECT_EQ(*anywhere->filename, "[kernel.kallsyms]");
  EXPECT_EQ(anywhere->end, ~std::uint64_t{0});
  TaskMaps empty;
  empty.observe(kernel_mmap(storage, 0xffffffff81000000, 0, "[kernel.kallsyms]_text"),
                ParseConfig{});
  EXPECT_FALSE(empty.has_kernel_maps());
  EXPECT_FALSE(empty.mapping_of(0, 0xffffffff81000000, abi::record_misc::kernel));

  TaskMaps maps;
  EXPECT_FALSE(maps.has_kernel_maps());
  maps.observe(kernel_mmap(storage, 0xffffffff81000000, 0x1000000, "[kernel.kallsyms]_stext"),
               ParseConfig{});
  maps.observe(kernel_mmap(storage, 0xffffffffc0000000, 0x6000,
                           "/lib/modules/3.8.11/kernel/drivers/input/joydev.ko"),
               ParseConfig{});
  maps.observe(kernel_mmap(storage, 0xffffffffc0006000, 0x7000,
                           "/lib/modules/3.8.11/kernel/drivers/media/videobuf2-memops.ko.xz"),
               ParseConfig{});
  EXPECT_TRUE(maps.has_kernel_maps());
  auto name_at = [&](std::uint64_t ip) {
    auto mapping = maps.mapping_of(0, ip, abi::record_misc::kernel);
    return mapping ? *mapping->filename : std::string("(none)");
  };
  EXPECT_EQ(name_at(0xffffffff81000100), "[kernel.kallsyms]");
  EXPECT_EQ(name_at(0xffffffffc0000010), "[joydev]");
  EXPECT_EQ(name_at(0xffffffffc0006010), "[videobuf2_memops]");
  EXPECT_EQ(name_at(0x401000), "(none)");  // a user address with kernel misc (PEBS skid)
  // The kernel's map reaches past its MMAP's end (_etext) up to the first module, as perf's:
  // .init.text (start_kernel under the idle task) is the kernel's. Past a module's end: none.
  EXPECT_EQ(name_at(0xffffffff83780b10), "[kernel.kallsyms]");
  EXPECT_EQ(name_at(0xffffffffbfffffff), "[kernel.kallsyms]");
  EXPECT_EQ(name_at(0xffffffffc000d010), "(none)");
}

std::vector<std::byte> kernel_mmap_bytes(std::uint64_t start, std::uint64_t length,
                                         std::string_view filename) {
  std::vector<std::byte> storage;
  kernel_mmap(storage, start, length, filename);
  return storage;
}

// The whole report pipeline on a file without a kernel MMAP (autofdo's ro_sample.perf,
// quipper's piped 6.8/6.12 files): its kernel sample is [unknown], as perf reports it; with
// simpleperf's kernel map at 0 of length 0 the same sample is [kernel.kallsyms]. The relative
// mapping name (a RHEL 7 recording's "64/ld-2.17.so") is shown by its last component.
TEST(ForeignPerfDataTest, ReportNamesKernelSamplesOnlyInsideARecordedKernelMap) {
  auto rows_of = [](bool kernel_map) {
    FileBuilder file;
    file.events.push_back({make_attr(abi::EventType::hardware, 0, flag::exclude_guest), {}});
    if (kernel_map) file.append(kernel_mmap_bytes(0, 0, "[kernel.kallsyms]_text"));
    file.append(RecordBuilder(static_cast<std::uint32_t>(abi::RecordType::mmap))
                    .add(std::uint32_t{7})
                    .add(std::uint32_t{7})
                    .add(std::uint64_t{0x7f0000000000})
                    .add(std::uint64_t{0x10000})
                    .add(std::uint64_t{0})
                    .text("64/ld-2.17.so")
                    .done());
    file.append(sample(0x7f0000000100, 7, 10));
    file.append(sample(0x7f0000000200, 7, 20));
    auto kernel_sample = sample(0xffffffff81000100, 7, 30);
    std::uint16_t kernel_misc = abi::record_misc::kernel;
    std::memcpy(kernel_sample.data() + offsetof(abi::RecordHeader, misc), &kernel_misc,
                sizeof kernel_misc);
    file.append(kernel_sample);
    ProfileOptions options;
    options.symbols.kallsyms_path = "/nonexistent/kallsyms";  // nothing of this machine's
    Profile profile = build_profile(PerfDataReader::from_bytes(file.bytes()), options);
    ReportOptions report;
    report.sort = {ReportSortKey::dso};
    report.call_graph = ReportCallGraph::none;
    report.children = false;
    std::vector<std::pair<std::string, std::uint64_t>> rows;
    for (const ReportRow& row : build_report_table(profile, 0, report).rows) {
      rows.emplace_back(row.keys.at(0), row.self_period);
    }
    return rows;
  };
  using Rows = std::vector<std::pair<std::string, std::uint64_t>>;
  EXPECT_EQ(rows_of(false), (Rows{{"ld-2.17.so", 2}, {"[unknown]", 1}}));
  EXPECT_EQ(rows_of(true), (Rows{{"ld-2.17.so", 2}, {"[kernel.kallsyms]", 1}}));
}

}  // namespace
