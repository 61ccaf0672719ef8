// perf.data writer and reader without the kernel: a file written from known records reads back
// the same, with its features; truncated and bit-flipped files give errors, never crashes;
// compressed records (as `perf record -z` writes them) and the user-space records of pipe mode
// decode; a large file is read without copying it onto the heap.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/host_description.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/symbols/vdso_image.hpp"
#include "record_builder.hpp"

namespace {

using namespace perfscope;
namespace abi = perfscope::abi;
namespace sf = abi::sample_format;

constexpr std::uint64_t sample_type = sf::identifier | sf::ip | sf::tid | sf::time | sf::period;

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("perfscope_") + name + "_" + std::to_string(::getpid())))
      .string();
}

std::vector<std::byte> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// A sample record of `sample_type`: identifier, ip, pid/tid, time, period.
std::vector<std::byte> make_sample(std::uint64_t id, std::uint64_t ip, std::uint32_t tid,
                                   std::uint64_t time) {
  std::uint64_t words[6] = {};
  abi::RecordHeader header{static_cast<std::uint32_t>(abi::RecordType::sample),
                           abi::record_misc::user, sizeof words};
  std::memcpy(&words[0], &header, sizeof header);
  words[1] = id;
  words[2] = ip;
  words[3] = (std::uint64_t{tid} << 32) | tid;
  words[4] = time;
  words[5] = 1000;
  std::vector<std::byte> bytes(sizeof words);
  std::memcpy(bytes.data(), words, sizeof words);
  return bytes;
}

PerfDataEvent make_event(const char* name, std::uint64_t id) {
  PerfDataEvent event;
  event.attr.type = static_cast<std::uint32_t>(abi::EventType::software);
  event.attr.size = sizeof event.attr;
  event.attr.sample_type = sample_type;
  event.attr.flags = abi::attr_flag::sample_id_all;
  event.name = name;
  event.ids = {id, id + 1};
  return event;
}

std::string write_known_file(const char* name, bool finish) {
  std::string path = temp_path(name);
  PerfDataWriter writer(path, {make_event("first", 100), make_event("second", 200)});
  // Two rounds, the second holding a record older than the first round's last one.
  writer.append(make_sample(100, 0x1000, 7, 30));
  writer.append(make_sample(200, 0x2000, 8, 10));
  writer.end_round();
  writer.append(make_sample(101, 0x3000, 7, 20));
  writer.append(make_sample(201, 0x4000, 8, 40));
  writer.end_round();
  if (finish) {
    PerfDataFeatures features = describe_host({"/bin/test", "record"});
    features.build_ids.push_back({abi::record_misc::user, -1, {1, 2, 3, 4}, "/bin/true"});
    writer.finish(features);
  }
  return path;
}

TEST(PerfDataTest, RoundTripsRecordsEventsAndFeatures) {
  std::string path = write_known_file("roundtrip", true);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);

  PerfDataReader reader = PerfDataReader::open(path);
  EXPECT_FALSE(reader.pipe_mode());
  EXPECT_TRUE(reader.notes().empty());
  ASSERT_EQ(reader.events().size(), 2u);
  EXPECT_EQ(reader.events()[0].name, "first");
  EXPECT_EQ(reader.events()[1].name, "second");
  EXPECT_EQ(reader.events()[1].ids, (std::vector<std::uint64_t>{200, 201}));
  EXPECT_EQ(reader.events()[0].attr.sample_type, sample_type);
  EXPECT_EQ(reader.events()[0].file_attr_size, perf_data::portable_attr_size);

  const auto& features = reader.features();
  ASSERT_TRUE(features.cmdline);
  EXPECT_EQ(*features.cmdline, (std::vector<std::string>{"/bin/test", "record"}));
  EXPECT_TRUE(features.hostname && !features.hostname->empty());
  EXPECT_TRUE(features.osrelease && features.arch && features.version);
  EXPECT_EQ(features.nr_cpus_online.value_or(0),
            static_cast<std::uint32_t>(::sysconf(_SC_NPROCESSORS_ONLN)));
  ASSERT_TRUE(features.cpu_topology);
  EXPECT_EQ(features.cpu_topology->cpus.size(), features.nr_cpus_available.value_or(0));
  ASSERT_EQ(features.build_ids.size(), 1u);
  EXPECT_EQ(features.build_ids[0].filename, "/bin/true");
  EXPECT_EQ(features.build_ids[0].build_id, (std::vector<std::uint8_t>{1, 2, 3, 4}));
  // The vDSO image travels in perfscope's own feature, byte for byte, with its build id.
  std::vector<std::byte> vdso = perfscope::this_process_vdso_image();
  if (!vdso.empty()) {
    ASSERT_EQ(features.embedded_files.size(), 1u);
    EXPECT_EQ(features.embedded_files[0].kind, "vdso");
    EXPECT_EQ(features.embedded_files[0].name, "[vdso]");
    EXPECT_EQ(features.embedded_files[0].bytes, vdso);
    EXPECT_EQ(features.embedded_files[0].build_id, perfscope::elf_image_build_id(vdso));
    EXPECT_NE(std::find(features.present.begin(), features.present.end(),
                        perf_data::perfscope_feature_embedded_files),
              features.present.end());
  }

  // File order, and each record's event from its IDENTIFIER.
  std::vector<std::pair<std::uint64_t, std::size_t>> in_file;
  auto error = reader.for_each_record([&](const PerfDataRecord& record) {
    if (record.view.type() == static_cast<std::uint32_t>(abi::RecordType::sample))
      in_file.emplace_back(record.time, record.event);
  });
  EXPECT_FALSE(error);
  EXPECT_EQ(in_file, (std::vector<std::pair<std::uint64_t, std::size_t>>{
                         {30, 0}, {10, 1}, {20, 0}, {40, 1}}));
  // Time order across rounds.
  std::vector<std::uint64_t> times;
  reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    if (record.time) times.push_back(record.time);
  });
  EXPECT_EQ(times, (std::vector<std::uint64_t>{10, 20, 30, 40}));
  std::filesystem::remove(path);
}

TEST(PerfDataTest, UnfinishedFileReadsEveryWholeRecord) {
  std::string path = temp_path("unfinished");
  {
    PerfDataWriter writer(path, {make_event("only", 5)});
    writer.append(make_sample(5, 0x10, 1, 1));
    writer.end_round();
    writer.append(make_sample(5, 0x20, 1, 2));
    writer.end_round();
    // Destroyed without finish(): like a recorder that died after its last round.
  }
  auto bytes = read_all(path);
  // Half a record more, as a kill in the middle of a write leaves it.
  auto torn = make_sample(5, 0x30, 1, 3);
  bytes.insert(bytes.end(), torn.begin(), torn.begin() + 20);
  // And the header's data size never updated.
  std::uint64_t zero = 0;
  std::memcpy(bytes.data() + perf_data::data_size_offset, &zero, sizeof zero);

  PerfDataReader reader = PerfDataReader::from_bytes(bytes);
  EXPECT_FALSE(reader.notes().empty());
  std::vector<std::uint64_t> ips;
  SampleRecord sample;
  auto error = reader.for_each_record([&](const PerfDataRecord& record) {
    DecodeError decode_error;
    if (record.view.type() == static_cast<std::uint32_t>(abi::RecordType::sample) &&
        decode_sample(record.view, reader.events()[0].config, sample, decode_error))
      ips.push_back(sample.ip);
  });
  EXPECT_FALSE(error);
  EXPECT_EQ(ips, (std::vector<std::uint64_t>{0x10, 0x20}));
  std::filesystem::remove(path);
}

TEST(PerfDataTest, CorruptFilesGiveErrorsWithOffsets) {
  std::string path = write_known_file("corrupt", true);
  auto bytes = read_all(path);
  std::filesystem::remove(path);
  std::size_t errors = 0, opened = 0;
  auto try_read = [&](std::vector<std::byte> input) {
    try {
      PerfDataReader reader = PerfDataReader::from_bytes(std::move(input));
      ++opened;
      reader.for_each_record_ordered([](const PerfDataRecord&) {});
    } catch (const PerfDataError& error) {
      ++errors;
      EXPECT_NE(std::string(error.what()).find("offset"), std::string::npos);
    }
  };
  for (std::size_t length = 0; length < bytes.size(); length += 7) {
    try_read(
        std::vector<std::byte>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length)));
  }
  for (std::size_t at = 0; at < bytes.size(); at += 3) {
    auto flipped = bytes;
    flipped[at] ^= std::byte{0x80};
    try_read(std::move(flipped));
  }
  EXPECT_GT(errors, 0u);
  EXPECT_GT(opened, 0u);

  // A truncated finished file: the records before the cut are read, then the error.
  perf_data::FileHeader header;
  std::memcpy(&header, bytes.data(), sizeof header);
  std::size_t cut_at = header.data.offset + 60;  // inside the second record
  std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut_at));
  PerfDataReader reader = PerfDataReader::from_bytes(cut);
  std::size_t samples = 0;
  auto error = reader.for_each_record([&](const PerfDataRecord& record) {
    samples += record.view.type() == static_cast<std::uint32_t>(abi::RecordType::sample);
  });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->offset(), cut_at);
  EXPECT_EQ(samples, 1u);
  EXPECT_THROW(PerfDataReader::from_bytes(std::vector<std::byte>(10)), PerfDataError);
}

// Record bytes built field by field.
using perfscope::test::RecordBuilder;
using perfscope::test::user_type;

// The zstd stream `perf record -z` writes: one stream, flushed at the end of each chunk, each
// chunk's output the payload of one COMPRESSED record (81, unpadded) or COMPRESSED2 (83: a data
// size, then the data padded to 8 bytes).
class PerfCompressor {
 public:
  PerfCompressor() : context_(ZSTD_createCCtx(), &ZSTD_freeCCtx) {
    ZSTD_CCtx_setParameter(context_.get(), ZSTD_c_compressionLevel, 1);
  }
  std::vector<std::byte> record(std::span<const std::byte> chunk, bool version2) {
    std::vector<std::byte> payload(ZSTD_compressBound(chunk.size()) + 64);
    ZSTD_inBuffer in{chunk.data(), chunk.size(), 0};
    ZSTD_outBuffer out{payload.data(), payload.size(), 0};
    std::size_t left;
    do {
      left = ZSTD_compressStream2(context_.get(), &out, &in, ZSTD_e_flush);
      EXPECT_FALSE(ZSTD_isError(left));
    } while (left != 0 && !ZSTD_isError(left));
    payload.resize(out.pos);
    std::vector<std::byte> bytes;
    abi::RecordHeader header{
        user_type(version2 ? abi::UserRecordType::compressed2 : abi::UserRecordType::compressed), 0,
        0};
    std::size_t size = sizeof header + (version2 ? 8 : 0) + payload.size();
    if (version2) size = (size + 7) & ~std::size_t{7};
    header.size = static_cast<std::uint16_t>(size);
    bytes.resize(size);
    std::memcpy(bytes.data(), &header, sizeof header);
    std::uint64_t data_size = payload.size();
    if (version2) std::memcpy(bytes.data() + 8, &data_size, sizeof data_size);
    std::memcpy(bytes.data() + sizeof header + (version2 ? 8 : 0), payload.data(), payload.size());
    return bytes;
  }

 private:
  std::unique_ptr<ZSTD_CCtx, std::size_t (*)(ZSTD_CCtx*)> context_;
};

// Each record of an ordered walk: its offset, time, event and bytes; `pipelined`: the walk on a
// second thread (forced, whatever the file's size).
std::vector<std::tuple<std::uint64_t, std::uint64_t, std::size_t, std::vector<std::byte>>>
walked_records(const PerfDataReader& reader, bool pipelined) {
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::size_t, std::vector<std::byte>>> out;
  auto visit = [&](const PerfDataRecord& record) {
    EXPECT_EQ(record.view.bytes.size(), record.view.header.size);
    out.emplace_back(record.offset, record.time, record.event,
                     std::vector<std::byte>(record.view.bytes.begin(), record.view.bytes.end()));
  };
  auto error = pipelined ? reader.for_each_record_ordered_pipelined(visit, 0)
                         : reader.for_each_record_ordered(visit);
  EXPECT_FALSE(error) << error->what();
  return out;
}

std::uint16_t record_type_at(const std::vector<std::byte>& file, std::uint64_t offset) {
  abi::RecordHeader header;
  std::memcpy(&header, file.data() + offset, sizeof header);
  return static_cast<std::uint16_t>(header.type);
}

TEST(PerfDataTest, CompressedRecordsAreDecompressedInPlace) {
  // 20 samples as one stream, cut into three chunks inside the 3rd and the 11th sample: those
  // two straddle two COMPRESSED records each.
  std::vector<std::byte> stream;
  for (std::uint64_t i = 0; i < 20; ++i) {
    auto sample = make_sample(5, 0x1000 + i, 7, 100 + 10 * i);
    stream.insert(stream.end(), sample.begin(), sample.end());
  }
  std::span<const std::byte> all(stream);
  // The first cut (inside the 3rd sample, bytes 96-143) is chosen so that the first COMPRESSED
  // record's size is not a multiple of 8: the plain sample after it sits off an 8-byte boundary.
  std::vector<std::byte> first, second, third;
  for (std::size_t cut = 100; cut < 144; ++cut) {
    PerfCompressor compressor;
    first = compressor.record(all.subspan(0, cut), false);
    if (first.size() % 8 == 0) continue;
    second = compressor.record(all.subspan(cut, 500 - cut), true);
    third = compressor.record(all.subspan(500), false);
    break;
  }
  ASSERT_NE(first.size() % 8, 0u);
  auto plain = make_sample(5, 0xaaaa, 8, 155);

  std::string path = temp_path("compressed");
  {
    PerfDataWriter writer(path, {make_event("z", 5)});
    writer.append(first);
    writer.append(plain);
    writer.end_round();
    writer.append(second);
    writer.append(third);
    writer.end_round();
    writer.finish(describe_host({"/bin/test"}));
  }
  auto file = read_all(path);
  PerfDataReader reader = PerfDataReader::open(path);
  std::vector<std::uint64_t> ips, offsets;
  SampleRecord sample;
  auto error = reader.for_each_record([&](const PerfDataRecord& record) {
    if (record.view.type() != static_cast<std::uint32_t>(abi::RecordType::sample)) return;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(record.view.bytes.data()) % 8, 0u);
    DecodeError decode_error;
    ASSERT_TRUE(decode_sample(record.view, reader.events()[0].config, sample, decode_error));
    ips.push_back(sample.ip);
    offsets.push_back(record.offset);
  });
  ASSERT_FALSE(error) << error->what();
  ASSERT_EQ(ips.size(), 21u);
  std::vector<std::uint64_t> expected_ips{0x1000, 0x1001, 0xaaaa};
  for (std::uint64_t i = 2; i < 20; ++i) expected_ips.push_back(0x1000 + i);
  EXPECT_EQ(ips, expected_ips);
  // A decompressed record carries the offset of the COMPRESSED record that completed it.
  std::uint64_t compressed = user_type(abi::UserRecordType::compressed);
  std::uint64_t compressed2 = user_type(abi::UserRecordType::compressed2);
  EXPECT_EQ(record_type_at(file, offsets[0]), compressed);
  EXPECT_EQ(offsets[0], offsets[1]);
  EXPECT_EQ(offsets[2], offsets[0] + first.size());          // the plain one, in place
  EXPECT_EQ(record_type_at(file, offsets[3]), compressed2);  // the 3rd sample
  EXPECT_EQ(offsets[3], offsets[10]);                        // through the 10th
  EXPECT_EQ(record_type_at(file, offsets[11]), compressed);  // the 11th, straddling
  EXPECT_EQ(offsets[20], offsets[11]);

  // Time order across rounds, with the decompressed records queued as copies.
  std::vector<std::uint64_t> times, ordered_ips;
  error = reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    if (record.view.type() != static_cast<std::uint32_t>(abi::RecordType::sample)) return;
    DecodeError decode_error;
    ASSERT_TRUE(decode_sample(record.view, reader.events()[0].config, sample, decode_error));
    times.push_back(sample.time);
    ordered_ips.push_back(sample.ip);
  });
  ASSERT_FALSE(error) << error->what();
  EXPECT_TRUE(std::is_sorted(times.begin(), times.end()));
  ASSERT_EQ(times.size(), 21u);
  EXPECT_EQ(ordered_ips[6], 0xaaaau);  // time 155, between 150 and 160
  EXPECT_EQ(ordered_ips[20], 0x1013u);
  // The walk on a thread of its own hands over the same records, the decompressed and the
  // realigned ones as copies of their bytes.
  EXPECT_EQ(walked_records(reader, true), walked_records(reader, false));

  // The last COMPRESSED record lost: the stream ends inside the 11th sample.
  std::filesystem::remove(path);
  {
    PerfDataWriter writer(path, {make_event("z", 5)});
    writer.append(first);
    writer.append(second);
    writer.end_round();
    writer.finish(describe_host({"/bin/test"}));
  }
  PerfDataReader cut = PerfDataReader::open(path);
  std::size_t samples = 0;
  error = cut.for_each_record([&](const PerfDataRecord&) { ++samples; });
  ASSERT_TRUE(error);
  EXPECT_EQ(samples, 11u);  // 10 samples and the FINISHED_ROUND
  EXPECT_EQ(record_type_at(read_all(path), error->offset()), compressed2);
  EXPECT_NE(std::string(error->what()).find("into a record"), std::string::npos) << error->what();
  std::filesystem::remove(path);
}

TEST(PerfDataTest, PipeModeUserRecordsAreDecoded) {
  auto attr_record = [](std::uint64_t first_id) {
    abi::PerfEventAttr attr{};
    attr.type = static_cast<std::uint32_t>(abi::EventType::software);
    attr.size = sizeof attr;
    attr.sample_type = sample_type;
    attr.flags = abi::attr_flag::sample_id_all;
    return RecordBuilder(user_type(abi::UserRecordType::header_attr))
        .add(attr)
        .add(first_id)
        .add(first_id + 1)
        .done();
  };
  auto update = [](std::uint64_t type, std::uint64_t id) {
    RecordBuilder record(user_type(abi::UserRecordType::event_update));
    record.add(type).add(id);
    return record;
  };
  std::vector<std::vector<std::byte>> records;
  records.push_back(attr_record(100));
  records.push_back(attr_record(200));
  records.push_back(update(2, 101).text("renamed").done());
  records.push_back(update(0, 100).text("msec").done());
  records.push_back(update(1, 100).add(0.25).done());
  // A CPU list: type 0, count 2, CPUs 1 and 3.
  records.push_back(update(3, 100)
                        .add(std::uint16_t{0})
                        .add(std::uint16_t{2})
                        .add(std::uint16_t{1})
                        .add(std::uint16_t{3})
                        .done());
  // A mask of 64-bit words: type 1, one word, word size 8, 4 bytes of padding, CPUs 1 and 2.
  records.push_back(update(3, 200)
                        .add(std::uint16_t{1})
                        .add(std::uint16_t{1})
                        .add(std::uint16_t{8})
                        .add(std::uint32_t{0})
                        .add(std::uint64_t{0b110})
                        .done());
  records.push_back(RecordBuilder(user_type(abi::UserRecordType::id_index))
                        .add(std::uint64_t{2})
                        .add(perf_data::IdIndexEntry{100, 0, 1, 77})
                        .add(perf_data::IdIndexEntry{201, 1, 3, 78})
                        .done());
  std::size_t id_index_at = records.size() - 1;
  records.push_back(RecordBuilder(user_type(abi::UserRecordType::time_conv))
                        .add(std::uint64_t{10})
                        .add(std::uint64_t{20})
                        .add(std::uint64_t{30})
                        .add(std::uint64_t{40})
                        .add(std::uint64_t{50})
                        .add(std::uint64_t{1})  // cap_user_time_zero, then _short 0
                        .done());
  std::uint8_t build_id[24] = {0xab, 0xcd};
  build_id[20] = 2;  // its size, valid with build_id_size_misc
  records.push_back(RecordBuilder(user_type(abi::UserRecordType::header_build_id))
                        .misc(abi::record_misc::user | perf_data::build_id_size_misc)
                        .add(std::int32_t{42})
                        .add(build_id)
                        .text("/usr/bin/x")
                        .done());
  records.push_back(
      RecordBuilder(user_type(abi::UserRecordType::thread_map)).add(std::uint64_t{0}).done());
  records.push_back(RecordBuilder(user_type(abi::UserRecordType::cpu_map))
                        .add(std::uint16_t{2})  // a range: CPUs 0-1, and "any"
                        .add(std::uint8_t{1})
                        .add(std::uint8_t{0})
                        .add(std::uint16_t{0})
                        .add(std::uint16_t{1})
                        .done());
  records.push_back(
      RecordBuilder(user_type(abi::UserRecordType::stat_config)).add(std::uint64_t{0}).done());
  records.push_back(RecordBuilder(user_type(abi::UserRecordType::stat))
                        .add(std::uint64_t{100})
                        .add(std::uint64_t{0})
                        .add(std::uint64_t{1})
                        .add(std::uint64_t{2})
                        .add(std::uint64_t{3})
                        .done());
  records.push_back(RecordBuilder(user_type(abi::UserRecordType::stat_round))
                        .add(std::uint64_t{0})
                        .add(std::uint64_t{99})
                        .done());
  records.push_back(RecordBuilder(user_type(abi::UserRecordType::finished_init)).done());
  records.push_back(make_sample(201, 0x5000, 9, 1234));

  std::vector<std::byte> bytes(sizeof(perf_data::PipeHeader));
  perf_data::PipeHeader pipe_header;
  std::memcpy(bytes.data(), &pipe_header, sizeof pipe_header);
  std::uint64_t id_index_offset = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (i == id_index_at) id_index_offset = bytes.size();
    bytes.insert(bytes.end(), records[i].begin(), records[i].end());
  }

  PerfDataReader reader = PerfDataReader::from_bytes(bytes);
  ASSERT_TRUE(reader.pipe_mode());
  EXPECT_FALSE(reader.data_error()) << reader.data_error()->what();
  ASSERT_EQ(reader.events().size(), 2u);
  const auto& first = reader.events()[0];
  EXPECT_EQ(first.name, "renamed");
  EXPECT_EQ(first.unit, "msec");
  EXPECT_EQ(first.scale, 0.25);
  EXPECT_EQ(first.cpus, (std::vector<int>{1, 3}));
  EXPECT_EQ(reader.events()[1].cpus, (std::vector<int>{1, 2}));
  // No EVENT_UPDATE named it: the name perf derives from the attr.
  EXPECT_EQ(reader.events()[1].name, "cpu-clock:HG");
  ASSERT_EQ(reader.id_index().size(), 2u);
  EXPECT_EQ(reader.id_index()[1].id, 201u);
  EXPECT_EQ(reader.id_index()[1].idx, 1u);
  EXPECT_EQ(reader.id_index()[1].cpu, 3u);
  EXPECT_EQ(reader.id_index()[1].tid, 78u);
  ASSERT_TRUE(reader.time_conversion());
  EXPECT_EQ(reader.time_conversion()->time_shift, 10u);
  EXPECT_EQ(reader.time_conversion()->time_mult, 20u);
  EXPECT_EQ(reader.time_conversion()->time_zero, 30u);
  EXPECT_EQ(reader.time_conversion()->time_mask, 50u);
  EXPECT_TRUE(reader.time_conversion()->cap_user_time_zero);
  EXPECT_FALSE(reader.time_conversion()->cap_user_time_short);
  ASSERT_EQ(reader.features().build_ids.size(), 1u);
  EXPECT_EQ(reader.features().build_ids[0].filename, "/usr/bin/x");
  EXPECT_EQ(reader.features().build_ids[0].pid, 42);
  EXPECT_EQ(reader.features().build_ids[0].build_id, (std::vector<std::uint8_t>{0xab, 0xcd}));
  using T = abi::UserRecordType;
  EXPECT_EQ(reader.user_records_seen(T::header_attr), 2u);
  EXPECT_EQ(reader.user_records_seen(T::event_update), 5u);
  for (auto type : {T::id_index, T::time_conv, T::header_build_id, T::thread_map, T::cpu_map,
                    T::stat_config, T::stat, T::stat_round, T::finished_init}) {
    EXPECT_EQ(reader.user_records_seen(type), 1u) << static_cast<int>(type);
  }
  EXPECT_EQ(reader.user_records_seen(T::compressed), 0u);
  std::vector<std::size_t> sample_events;
  auto error = reader.for_each_record([&](const PerfDataRecord& record) {
    if (record.view.type() == static_cast<std::uint32_t>(abi::RecordType::sample))
      sample_events.push_back(record.event);
  });
  EXPECT_FALSE(error);
  EXPECT_EQ(sample_events, (std::vector<std::size_t>{1}));

  // An ID_INDEX that claims more entries than it holds stops the stream there.
  auto broken = bytes;
  std::uint64_t huge = 1000;
  std::memcpy(broken.data() + id_index_offset + 8, &huge, sizeof huge);
  PerfDataReader damaged = PerfDataReader::from_bytes(broken);
  ASSERT_TRUE(damaged.data_error());
  EXPECT_EQ(damaged.data_error()->offset(), id_index_offset);
  EXPECT_EQ(damaged.events()[0].name, "renamed");  // what came before it was read
  EXPECT_TRUE(damaged.id_index().empty());
}

// RssAnon of this process in KiB: the heap and other private memory, not a mapped file's pages.
std::size_t anonymous_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoul(line.substr(8));
  }
  return 0;
}

TEST(PerfDataTest, LargeFileIsMappedNotCopied) {
  constexpr std::size_t samples = 2'000'000;  // 96 MB of records
  std::string path = temp_path("large");
  {
    PerfDataWriter writer(path, {make_event("big", 5)});
    for (std::size_t i = 0; i < samples; ++i) {
      writer.append(make_sample(5, 0x1000 + i % 4096, 7, i + 1));
      if (i % 1000 == 999) writer.end_round();
    }
    writer.finish(describe_host({"/bin/test"}));
  }
  ASSERT_GT(std::filesystem::file_size(path), samples * 48);
  std::size_t before = anonymous_kib();
  std::size_t peak = before;
  std::size_t seen = 0;
  {
    PerfDataReader reader = PerfDataReader::open(path);
    auto count = [&](const PerfDataRecord& record) {
      if (record.view.type() != static_cast<std::uint32_t>(abi::RecordType::sample)) return;
      if (++seen % 100'000 == 0) peak = std::max(peak, anonymous_kib());
    };
    EXPECT_FALSE(reader.for_each_record(count));
    EXPECT_FALSE(reader.for_each_record_ordered(count));
    peak = std::max(peak, anonymous_kib());
  }
  EXPECT_EQ(seen, 2 * samples);
  // A copy of the file would be 96 MB; the events, features and a round's queue are far less.
  EXPECT_LT(peak - before, 16u * 1024) << "KiB of anonymous memory while reading";
  std::filesystem::remove(path);
}

TEST(PerfDataTest, ClockDataRoundTripsInPerfsLayout) {
  auto now = [](clockid_t clock) {
    struct timespec t {};
    ::clock_gettime(clock, &t);
    return static_cast<std::uint64_t>(t.tv_sec) * 1000000000ULL +
           static_cast<std::uint64_t>(t.tv_nsec);
  };
  std::uint64_t wall_before = now(CLOCK_REALTIME), clock_before = now(CLOCK_MONOTONIC);
  auto clock = clock_reference(CLOCK_MONOTONIC);
  std::uint64_t wall_after = now(CLOCK_REALTIME), clock_after = now(CLOCK_MONOTONIC);
  ASSERT_TRUE(clock);
  EXPECT_EQ(clock->clockid, static_cast<std::uint32_t>(CLOCK_MONOTONIC));
  EXPECT_GE(clock->wall_clock_ns, wall_before);
  EXPECT_LE(clock->wall_clock_ns, wall_after);
  EXPECT_GE(clock->clockid_time_ns, clock_before);
  EXPECT_LE(clock->clockid_time_ns, clock_after);

  // perf's write_clock_data layout: u32 version 1, u32 clockid, u64 wall clock, u64 clock.
  PerfDataFeatures features;
  features.clock_data = ClockData{1, 1'700'000'000'123'456'789, 42'000'000'007};
  auto bytes = encode_feature(perf_data::bit(perf_data::Feature::clock_data), features, {}, 0);
  ASSERT_EQ(bytes.size(), 24u);
  std::uint32_t words[2];
  std::uint64_t times[2];
  std::memcpy(words, bytes.data(), sizeof words);
  std::memcpy(times, bytes.data() + 8, sizeof times);
  EXPECT_EQ(words[0], 1u);
  EXPECT_EQ(words[1], 1u);
  EXPECT_EQ(times[0], 1'700'000'000'123'456'789u);
  EXPECT_EQ(times[1], 42'000'000'007u);
  EXPECT_EQ(features.clock_data->wall_clock_at_zero(),
            1'700'000'000'123'456'789u - 42'000'000'007u);

  std::string path = temp_path("clock_data");
  {
    PerfDataWriter writer(path, {make_event("only", 5)});
    writer.append(make_sample(5, 0x1000, 7, 30));
    writer.end_round();
    PerfDataFeatures written = describe_host({"/bin/test"});
    written.clock_data = *clock;
    writer.finish(written);
  }
  PerfDataReader reader = PerfDataReader::open(path);
  ASSERT_TRUE(reader.features().clock_data);
  EXPECT_EQ(reader.features().clock_data->clockid, clock->clockid);
  EXPECT_EQ(reader.features().clock_data->wall_clock_ns, clock->wall_clock_ns);
  EXPECT_EQ(reader.features().clock_data->clockid_time_ns, clock->clockid_time_ns);
  EXPECT_TRUE(reader.notes().empty());
  std::filesystem::remove(path);
}

// Two CPUs' records interleaved in rounds, as perf writes a large recording: the pipelined walk
// (its default size threshold passed) hands over every record in the same time order.
TEST(PerfDataTest, PipelinedWalkOfALargeFileEqualsTheOrderedWalk) {
  std::string path = temp_path("pipelined");
  constexpr std::uint64_t rounds = 120, per_cpu = 1000;
  {
    PerfDataWriter writer(path, {make_event("a", 5), make_event("b", 16)});
    for (std::uint64_t round = 0; round < rounds; ++round) {
      std::uint64_t base = round * 2 * per_cpu * 10;
      for (int cpu = 0; cpu < 2; ++cpu) {
        for (std::uint64_t i = 0; i < per_cpu; ++i) {
          writer.append(
              make_sample(cpu == 0 ? 5 : 16, 0x1000 + i, 7 + cpu, 1 + base + i * 20 + cpu));
        }
      }
      writer.end_round();
    }
    writer.finish({});
  }
  PerfDataReader reader = PerfDataReader::open(path);
  ASSERT_GT(reader.data_end() - reader.data_offset(), PerfDataReader::pipelined_min_bytes);
  std::vector<std::uint64_t> times;
  std::size_t records = 0;
  auto error = reader.for_each_record_ordered_pipelined([&](const PerfDataRecord& record) {
    ++records;
    if (record.time != 0) times.push_back(record.time);
  });
  ASSERT_FALSE(error) << error->what();
  EXPECT_EQ(times.size(), rounds * 2 * per_cpu);
  EXPECT_TRUE(std::is_sorted(times.begin(), times.end()));
  EXPECT_EQ(walked_records(reader, true), walked_records(reader, false));
  // An exception in the visitor stops the walk and reaches the caller.
  std::size_t visited = 0;
  EXPECT_THROW(reader.for_each_record_ordered_pipelined([&](const PerfDataRecord&) {
    if (++visited == 50000) throw std::runtime_error("stop");
  }),
               std::runtime_error);
  EXPECT_EQ(visited, 50000u);
  std::filesystem::remove(path);
}

// A COMM record of `tid` named `name` at `time`, with its sample_id (tid, time, identifier).
std::vector<std::byte> make_comm(std::uint64_t id, std::uint32_t tid, const char* name,
                                 std::uint64_t time) {
  std::vector<std::byte> bytes(8 + 8 + 16 + 24);
  abi::RecordHeader header{static_cast<std::uint32_t>(abi::RecordType::comm), 0,
                           static_cast<std::uint16_t>(bytes.size())};
  std::memcpy(bytes.data(), &header, sizeof header);
  std::uint32_t ids[2] = {tid, tid};
  std::memcpy(bytes.data() + 8, ids, sizeof ids);
  std::strncpy(reinterpret_cast<char*>(bytes.data() + 16), name, 15);
  std::uint64_t trailer[3] = {(std::uint64_t{tid} << 32) | tid, time, id};
  std::memcpy(bytes.data() + 32, trailer, sizeof trailer);
  return bytes;
}

// The walk fanned out to three workers: every record other than samples reaches every worker in
// order, each chunk's samples exactly one, and the samples of the chunks, chunk after chunk, are
// the ordered walk's.
TEST(PerfDataTest, FannedOutWalkHandsEachChunkToOneWorkerAndTheOtherRecordsToAll) {
  std::string path = temp_path("fanned_out");
  constexpr std::uint64_t rounds = 40, per_round = 3000;
  {
    PerfDataWriter writer(path, {make_event("a", 5)});
    for (std::uint64_t round = 0; round < rounds; ++round) {
      std::uint64_t base = round * per_round * 10;
      for (std::uint64_t i = 0; i < per_round; ++i) {
        writer.append(make_sample(5, 0x1000 + i, 7, 1 + base + i * 10));
        if (i % 500 == 0) writer.append(make_comm(5, 7, "renamed", 2 + base + i * 10));
      }
      writer.end_round();
    }
    writer.finish({});
  }
  PerfDataReader reader = PerfDataReader::open(path);
  constexpr std::size_t workers = 3;
  struct Seen {
    std::uint64_t chunk, offset;
    bool owned, sample;
  };
  std::vector<std::vector<Seen>> seen(workers);
  std::vector<std::vector<std::uint64_t>> taken(workers);
  auto error = reader.for_each_record_ordered_fanned_out(
      workers,
      [&](std::size_t worker, std::uint64_t chunk, bool owned, const PerfDataRecord& record) {
        bool sample =
            record.view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample);
        seen[worker].push_back({chunk, record.offset, owned, sample});
      },
      {}, [&](std::size_t worker, std::uint64_t chunk) { taken[worker].push_back(chunk); });
  ASSERT_FALSE(error) << error->what();

  std::vector<std::uint64_t> all_samples, others;
  ASSERT_FALSE(reader.for_each_record_ordered([&](const PerfDataRecord& record) {
    bool sample = record.view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample);
    (sample ? all_samples : others).push_back(record.offset);
  }));
  ASSERT_EQ(all_samples.size(), rounds * per_round);
  std::map<std::uint64_t, std::size_t> owner;  // chunk -> worker
  std::map<std::uint64_t, std::vector<std::uint64_t>> samples_by_chunk;
  for (std::size_t worker = 0; worker < workers; ++worker) {
    std::vector<std::uint64_t> worker_others;
    for (const Seen& record : seen[worker]) {
      if (!record.sample) worker_others.push_back(record.offset);
      if (!record.owned) {
        EXPECT_FALSE(record.sample) << "a sample of a chunk the worker did not take";
        continue;
      }
      auto [found, inserted] = owner.emplace(record.chunk, worker);
      EXPECT_EQ(found->second, worker) << "chunk " << record.chunk << " taken twice";
      if (record.sample) samples_by_chunk[record.chunk].push_back(record.offset);
    }
    EXPECT_EQ(worker_others, others) << "worker " << worker;
    EXPECT_TRUE(std::is_sorted(taken[worker].begin(), taken[worker].end()));
  }
  std::vector<std::uint64_t> joined;
  for (const auto& [chunk, offsets] : samples_by_chunk) {
    joined.insert(joined.end(), offsets.begin(), offsets.end());
  }
  EXPECT_EQ(joined, all_samples);
  EXPECT_GE(owner.size(), 8u) << "chunks: the file is too small to test the fan-out";
  std::size_t taken_count = 0;
  for (const auto& list : taken) taken_count += list.size();
  EXPECT_EQ(taken_count, owner.size());

  // An exception in a worker stops the walk and reaches the caller.
  std::atomic<std::size_t> visited{0};
  EXPECT_THROW(reader.for_each_record_ordered_fanned_out(
                   workers,
                   [&](std::size_t, std::uint64_t, bool, const PerfDataRecord&) {
                     if (++visited == 20000) throw std::runtime_error("stop");
                   }),
               std::runtime_error);
  std::filesystem::remove(path);
}

}  // namespace
