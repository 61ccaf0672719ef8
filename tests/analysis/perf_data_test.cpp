// perf.data writer and reader without the kernel: a file written from known records reads back
// the same, with its features; truncated and bit-flipped files give errors, never crashes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/host_description.hpp"
#include "perfscope/analysis/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data_writer.hpp"

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

}  // namespace
