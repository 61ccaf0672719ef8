// NamedFunctionSieve (annotate of named functions): the annotation it gives is the one the whole
// profile gives, on a file built to hold every case a sample's time decides (before its
// process mapped the file, at the mapping's own time, after a map over it, across an exec, in a
// forked child that inherited the mapping), kernel samples, samples elsewhere in the binary, and
// enough samples for the scan on two threads; the same file compressed (the sieve in the
// ordered walk); and the known-answer workload recorded for real (by perfscope and by perf).
#include <elf.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/perf_data/record_builder.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/annotate/annotation_output.hpp"
#include "perfscope/analysis/annotate/annotator.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/symbols/elf_image.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"
#include "support/test_support.hpp"

namespace {

using namespace perfscope;
using perfscope::test::FileBuilder;
using perfscope::test::RecordBuilder;
using perfscope::test::user_type;
namespace abi = perfscope::abi;
namespace sf = abi::sample_format;
namespace misc = abi::record_misc;
namespace pt = perfscope::testing;

const std::string known_answer_fp = PERFSCOPE_KNOWN_ANSWER_FP_PATH;

constexpr std::uint64_t sample_type = sf::ip | sf::tid | sf::time | sf::period;
constexpr std::uint64_t base = 0x555555554000;  // where the synthetic processes map the binary
constexpr std::uint64_t kernel_ip = 0xffffffff81000040;

// Annotates `names` twice: through the sieve and through the whole profile (or the error each
// gave).
struct BothWays {
  Annotation sieved, whole;
  std::string sieved_error, whole_error;
};

BothWays annotate_both_ways(const PerfDataReader& reader, std::vector<std::string> names) {
  AnnotateOptions options;
  options.symbols = std::move(names);
  options.profile.symbols.parameter_lists = false;
  BothWays both;
  try {
    both.sieved = annotate(reader, options);
  } catch (const AnnotateError& error) {
    both.sieved_error = error.what();
  }
  options.sieve_samples = false;
  try {
    both.whole = annotate(reader, options);
  } catch (const AnnotateError& error) {
    both.whole_error = error.what();
  }
  return both;
}

// The same annotation: totals, functions, every instruction's samples, the text and JSON views;
// the sieve leaves out warnings about files none of whose samples it resolved, and adds none.
// Or the same error.
void expect_same(const BothWays& both) {
  EXPECT_EQ(both.sieved_error, both.whole_error);
  const Annotation& a = both.sieved;
  const Annotation& b = both.whole;
  EXPECT_EQ(a.total_samples, b.total_samples);
  EXPECT_EQ(a.total_period, b.total_period);
  ASSERT_EQ(a.functions.size(), b.functions.size());
  for (std::size_t i = 0; i < a.functions.size(); ++i) {
    EXPECT_EQ(a.functions[i].name, b.functions[i].name);
    EXPECT_EQ(a.functions[i].dso, b.functions[i].dso);
    EXPECT_EQ(a.functions[i].samples, b.functions[i].samples);
    EXPECT_EQ(a.functions[i].unplaced_samples, b.functions[i].unplaced_samples);
  }
  EXPECT_EQ(render_annotation(a, AnnotateView::interleaved),
            render_annotation(b, AnnotateView::interleaved));
  EXPECT_EQ(render_annotation(a, AnnotateView::source), render_annotation(b, AnnotateView::source));
  // JSON holds the warnings too: the same but for those.
  auto without_warnings = [](const Annotation& annotation) {
    nlohmann::json document = nlohmann::json::parse(annotation_json(annotation));
    document.erase("warnings");
    document.erase("notes");  // the debug files read for all functions or only the chosen one
    return document.dump(1);
  };
  EXPECT_EQ(without_warnings(a), without_warnings(b));
  for (const std::string& warning : a.warnings) {
    EXPECT_NE(std::find(b.warnings.begin(), b.warnings.end(), warning), b.warnings.end())
        << "a warning the whole profile does not give: " << warning;
  }
}

// The synthetic recording's processes, the binary's code segment and where leaf_60 and leaf_30
// lie in the file.
class SyntheticRecording {
 public:
  SyntheticRecording() {
    std::string error;
    auto image = ElfImage::open(known_answer_fp, error);
    EXPECT_TRUE(image) << error;
    if (!image) return;
    for (const ElfImage::Segment& segment : image->segments()) {
      if (segment.flags & PF_X) code_ = segment;
    }
    Symbolizer symbolizer;
    leaf_60_ = first_offset(symbolizer, "leaf_60");
    leaf_30_ = first_offset(symbolizer, "leaf_30");
  }
  bool ready() const { return code_.size != 0 && leaf_60_ != 0 && leaf_30_ != 0; }

  // The address of file offset `offset` in a process that mapped the code segment at `base`.
  std::uint64_t ip_of(std::uint64_t offset) const {
    return base + code_.address + (offset - code_.offset);
  }
  std::uint64_t leaf_60() const { return leaf_60_; }
  std::uint64_t leaf_30() const { return leaf_30_; }

  // The file: `samples_per_process` samples in each of leaf_60 and leaf_30 for the processes
  // that are named below, a kernel sample for every ten; FINISHED_ROUND every 512 records.
  // Returns how many samples must be named leaf_60.
  // `decoys`: around the middle of the samples, THROTTLE records whose id reads as a
  // FINISHED_ROUND header (the first pass's guess at a record to split at, which its check must
  // then refuse).
  std::uint64_t build(FileBuilder& file, std::uint64_t samples_per_process,
                      bool decoys = false) const {
    abi::PerfEventAttr attr{};
    attr.type = static_cast<std::uint32_t>(abi::EventType::software);
    attr.config = 0;  // cpu-clock
    attr.sample_type = sample_type;
    attr.sample_period_or_freq = 10000;
    attr.flags = abi::attr_flag::sample_id_all;
    file.events.push_back({attr, {}});
    std::uint64_t in_leaf_60 = 0;
    std::uint64_t records = 0;
    auto add = [&](const std::vector<std::byte>& record) {
      file.append(record);
      if (++records % 512 == 0) file.append(finished_round());
    };
    add(comm(100, "synthetic", 100));
    add(comm(300, "synthetic", 100));
    // Before its process mapped anything: [unknown], not leaf_60.
    add(sample(ip_of(leaf_60_), 100, 150, misc::user));
    add(mmap2(100, known_answer_fp, 200));
    add(mmap2(300, known_answer_fp, 210));
    // At the mapping's own time: after it in the file, so after it in time order too.
    add(sample(ip_of(leaf_60_ + 1), 100, 200, misc::user));
    ++in_leaf_60;
    std::uint64_t time = 1000;
    for (std::uint64_t i = 0; i < samples_per_process; ++i) {
      for (std::uint32_t pid : {100u, 300u}) {
        add(sample(ip_of(leaf_60_ + i % 8), pid, ++time, misc::user));
        add(sample(ip_of(leaf_30_ + i % 4), pid, ++time, misc::user));
        in_leaf_60 += 1;
        if (i % 10 == 0) add(sample(kernel_ip, pid, ++time, misc::kernel));
      }
      if (decoys && i > samples_per_process * 2 / 5 && i < samples_per_process * 3 / 5) {
        add(throttle(++time));
      }
    }
    // A child that inherited the mapping (no MMAP of its own): resolved the usual way.
    add(fork(200, 100, ++time));
    for (int i = 0; i < 7; ++i) add(sample(ip_of(leaf_60_), 200, ++time, misc::user));
    in_leaf_60 += 7;
    // JIT code mapped over leaf_60 in process 100: its samples there are not leaf_60's.
    add(mmap2(100, "//anon", ++time));
    for (int i = 0; i < 5; ++i) add(sample(ip_of(leaf_60_), 100, ++time, misc::user));
    // Process 300 execs something else: its old maps name no user-mode sample after the exec
    // (they name only the pc at which a sample inside execve entered the kernel), so these
    // samples at the old address are not leaf_60's.
    add(comm(300, "other", ++time));
    for (int i = 0; i < 3; ++i) add(sample(ip_of(leaf_60_), 300, ++time, misc::user));
    // The new image maps over the old addresses: they are not leaf_60's any more.
    add(mmap2(300, "//anon", ++time));
    for (int i = 0; i < 2; ++i) add(sample(ip_of(leaf_60_), 300, ++time, misc::user));
    file.append(finished_round());
    return in_leaf_60;
  }

 private:
  static std::uint64_t first_offset(Symbolizer& symbolizer, const std::string& name) {
    auto ranges = symbolizer.file_ranges_of_functions(
        known_answer_fp, {}, name, [&](std::string_view shown) { return shown == name; });
    return ranges && !ranges->empty() ? ranges->front().first : 0;
  }

  static std::vector<std::byte> trailer(RecordBuilder& record, std::uint32_t pid,
                                        std::uint64_t time) {
    return record.add(pid).add(pid).add(time).done();
  }
  static std::vector<std::byte> sample(std::uint64_t ip, std::uint32_t pid, std::uint64_t time,
                                       std::uint16_t cpumode) {
    return RecordBuilder(static_cast<std::uint32_t>(abi::RecordType::sample))
        .misc(cpumode)
        .add(ip)
        .add(pid)
        .add(pid)
        .add(time)
        .add(std::uint64_t{10000})
        .done();
  }
  static std::vector<std::byte> comm(std::uint32_t pid, const std::string& name,
                                     std::uint64_t time) {
    RecordBuilder record(static_cast<std::uint32_t>(abi::RecordType::comm));
    record.misc(misc::comm_exec).add(pid).add(pid).text(name);
    record.pad();
    return trailer(record, pid, time);
  }
  static std::vector<std::byte> fork(std::uint32_t pid, std::uint32_t parent, std::uint64_t time) {
    RecordBuilder record(static_cast<std::uint32_t>(abi::RecordType::fork));
    record.add(pid).add(parent).add(pid).add(parent).add(time);
    return trailer(record, pid, time);
  }
  std::vector<std::byte> mmap2(std::uint32_t pid, const std::string& path,
                               std::uint64_t time) const {
    RecordBuilder record(static_cast<std::uint32_t>(abi::RecordType::mmap2));
    record.misc(misc::user)
        .add(pid)
        .add(pid)
        .add(base + code_.address)
        .add(code_.size)
        .add(code_.offset)
        .add(std::uint32_t{8})  // maj, min
        .add(std::uint32_t{1})
        .add(std::uint64_t{1234})  // ino
        .add(std::uint64_t{0})
        .add(std::uint32_t{5})  // PROT_READ | PROT_EXEC
        .add(std::uint32_t{2})  // MAP_PRIVATE
        .text(path);
    record.pad();
    return trailer(record, pid, time);
  }
  static std::vector<std::byte> throttle(std::uint64_t time) {
    constexpr std::uint64_t looks_like_finished_round = 0x0008000000000044;  // type 68, size 8
    RecordBuilder record(static_cast<std::uint32_t>(abi::RecordType::throttle));
    record.add(time).add(looks_like_finished_round).add(std::uint64_t{0});
    return trailer(record, 100, time);
  }
  static std::vector<std::byte> finished_round() {
    return RecordBuilder(user_type(abi::UserRecordType::finished_round)).done();
  }

  ElfImage::Segment code_{0, 0, 0};
  std::uint64_t leaf_60_ = 0, leaf_30_ = 0;
};

// Every record of `data` inside COMPRESSED records of about `chunk` bytes each, as perf record -z
// writes them.
std::vector<std::byte> compressed(const std::vector<std::byte>& data, std::size_t chunk) {
  std::unique_ptr<ZSTD_CCtx, std::size_t (*)(ZSTD_CCtx*)> context(ZSTD_createCCtx(),
                                                                  &ZSTD_freeCCtx);
  std::vector<std::byte> out;
  std::size_t at = 0;
  while (at < data.size()) {
    // Whole records per chunk.
    std::size_t end = at;
    while (end < data.size() && end - at < chunk) {
      abi::RecordHeader header;
      std::memcpy(&header, data.data() + end, sizeof header);
      end += header.size;
    }
    std::vector<std::byte> payload(ZSTD_compressBound(end - at) + 64);
    ZSTD_inBuffer in{data.data() + at, end - at, 0};
    ZSTD_outBuffer compressed_out{payload.data(), payload.size(), 0};
    std::size_t left;
    do {
      left = ZSTD_compressStream2(context.get(), &compressed_out, &in, ZSTD_e_flush);
    } while (left != 0 && !ZSTD_isError(left));
    payload.resize(compressed_out.pos);
    abi::RecordHeader header{user_type(abi::UserRecordType::compressed), 0,
                             static_cast<std::uint16_t>(sizeof header + payload.size())};
    // Unpadded, as perf writes COMPRESSED (version 1) records.
    std::size_t record_at = out.size();
    out.resize(record_at + header.size);
    std::memcpy(out.data() + record_at, &header, sizeof header);
    std::memcpy(out.data() + record_at + sizeof header, payload.data(), payload.size());
    at = end;
  }
  return out;
}

// The tests on SyntheticRecording's files.
class SyntheticSieve : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(recording_.ready()) << "no code segment or no leaf_60 in " << known_answer_fp;
  }
  // annotate_both_ways of leaf_60, which must have `in_leaf_60` samples, and `sieved` of them
  // and of the others counted without time order.
  static BothWays expect_leaf_60(const PerfDataReader& reader, std::uint64_t in_leaf_60,
                                 std::uint64_t sieved) {
    BothWays both = annotate_both_ways(reader, {"leaf_60"});
    EXPECT_EQ(both.whole.functions.size(), 1u);
    if (!both.whole.functions.empty()) {
      EXPECT_EQ(both.whole.functions[0].samples, in_leaf_60);
    }
    EXPECT_EQ(both.sieved.sieved_samples, sieved);
    expect_same(both);
    return both;
  }
  SyntheticRecording recording_;
  FileBuilder file_;
};

TEST_F(SyntheticSieve, AnnotatesAsTheWholeProfileDoes) {
  // Over 8 MB of records: the sieve scans it on two threads.
  std::uint64_t in_leaf_60 = recording_.build(file_, 90000);
  ASSERT_GT(file_.data.size(), std::size_t{8} << 20);
  PerfDataReader reader = PerfDataReader::from_bytes(file_.bytes());
  // Counted without time order: leaf_60's samples in its windows, and the kernel's. Not those
  // whose time decides (before the mapping, at its time, the child's, after the JIT map and the
  // exec and the map after it), nor leaf_30's: JIT code was mapped over its addresses too (in one
  // process, which keeps those addresses' samples of every process for the usual way).
  BothWays both = expect_leaf_60(reader, in_leaf_60, 90000 * 2 + 9000 * 2);
  EXPECT_EQ(both.whole.total_samples, 2 + 90000 * 4 + 9000 * 2 + 7 + 5 + 3 + 2);
  EXPECT_EQ(both.whole.sieved_samples, 0u);
  // Two names, one call.
  expect_same(annotate_both_ways(reader, {"leaf_30", "leaf_60"}));
}

TEST_F(SyntheticSieve, FirstPassSplitAtARecordThatIsNoneIsWalkedWhole) {
  std::uint64_t in_leaf_60 = recording_.build(file_, 90000, true);
  PerfDataReader reader = PerfDataReader::from_bytes(file_.bytes());
  // The guess lands inside a THROTTLE record: the first part's walk steps past it.
  std::uint64_t middle = reader.data_offset() + (reader.data_end() - reader.data_offset()) / 2;
  std::optional<std::uint64_t> guess = reader.finished_round_after(middle);
  ASSERT_TRUE(guess);
  std::uint64_t stopped = 0;
  EXPECT_FALSE(
      reader.for_each_record_but_samples([](const PerfDataRecord&) {}, 0, *guess, &stopped));
  EXPECT_GT(stopped, *guess);
  expect_leaf_60(reader, in_leaf_60, 90000 * 2 + 9000 * 2);
}

TEST_F(SyntheticSieve, CompressedRecordingIsSievedInTheOrderedWalk) {
  std::uint64_t in_leaf_60 = recording_.build(file_, 3000);
  file_.data = compressed(file_.data, 16 << 10);
  PerfDataReader reader = PerfDataReader::from_bytes(file_.bytes());
  expect_leaf_60(reader, in_leaf_60, 3000 * 2 + 300 * 2);
}

// The errors come from the whole profile: no sampled function of that name was sieved.
std::string annotate_error(const PerfDataReader& reader, const std::string& name) {
  AnnotateOptions options;
  options.symbols = {name};
  try {
    annotate(reader, options);
  } catch (const AnnotateError& error) {
    return error.what();
  }
  return "annotated";
}

TEST_F(SyntheticSieve, NamesTheSieveCannotFindTakeTheWholeProfile) {
  recording_.build(file_, 100);
  PerfDataReader reader = PerfDataReader::from_bytes(file_.bytes());
  EXPECT_NE(annotate_error(reader, "leaf_6").find("did you mean: leaf_60"), std::string::npos);
  // Defined in the binary, never sampled: said so, as the whole profile says it.
  EXPECT_NE(annotate_error(reader, "leaf_10").find("leaf_10 has no samples"), std::string::npos);
}

// The known-answer workload recorded for real, by perfscope (with call chains: the sieve reads
// past them) and by perf.
TEST(NamedFunctionSieve, RealRecordingsAnnotateAsTheWholeProfileDoes) {
  std::string ours = pt::temp_path("sieve_ours");
  pt::CommandResult recorded = pt::run_perfscope(
      {"record", "-g", "-F", "4000", "-e", "cpu-clock", "-o", ours, "--", known_answer_fp, "60"});
  ASSERT_EQ(recorded.exit_status, 0) << recorded.err;
  std::vector<std::string> files{ours};
  std::string perfs = pt::temp_path("sieve_perf");
  if (pt::run_command({"/usr/bin/perf", "record", "-q", "-F", "4000", "-e", "cpu-clock", "-o",
                       perfs, "--", known_answer_fp, "60"})
          .exit_status == 0) {
    files.push_back(perfs);
  }
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    PerfDataReader reader = PerfDataReader::open(path);
    for (std::vector<std::string> names :
         {std::vector<std::string>{"leaf_60"}, {"work_60"}, {"leaf_30", "leaf_10"}, {"main"}}) {
      SCOPED_TRACE(names.front());
      BothWays both = annotate_both_ways(reader, names);
      expect_same(both);
      // The workload's own samples, but for its start and end, need no time order.
      if (names.front() == "leaf_60") {
        EXPECT_GT(both.sieved.sieved_samples, both.sieved.total_samples / 2);
      }
    }
    std::filesystem::remove(path);
  }
}

// The corpus of files other tools and machines wrote (beside the checkout, where there is one):
// each file's hottest functions, annotated both ways. Most of their binaries are not here, and
// some are here in another build: the sieve must step aside for both.
TEST(NamedFunctionSieve, ForeignRecordingsAnnotateAsTheWholeProfileDoes) {
  std::filesystem::path corpus =
      std::filesystem::path(PERFSCOPE_SOURCE_DIR).parent_path() / "shared/corpus/perf-data";
  if (!std::filesystem::is_directory(corpus)) {
    GTEST_SKIP() << "no corpus of foreign perf.data files at " << corpus;
  }
  int compared = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(corpus)) {
    if (!entry.is_regular_file() || entry.path().extension() == ".md" ||
        entry.path().extension() == ".py" || entry.path().extension() == ".zlib") {
      continue;
    }
    SCOPED_TRACE(entry.path().string());
    std::optional<PerfDataReader> reader;
    Annotation hottest;
    try {
      reader.emplace(PerfDataReader::open(entry.path().string()));
      AnnotateOptions options;
      options.profile.symbols.parameter_lists = false;
      hottest = annotate(*reader, options);
    } catch (const std::exception&) {
      continue;  // a file perfscope refuses, or one without functions that hot
    }
    for (const AnnotatedFunction& function : hottest.functions) {
      if (function.kernel || function.name.starts_with("0x") ||
          function.name == std::string(16, '0')) {
        continue;
      }
      expect_same(annotate_both_ways(*reader, {function.name}));
      ++compared;
    }
  }
  // Named functions only: an unresolved address is a function of its own (as perf's rows are),
  // and most of the corpus's binaries are not here (7 named hot functions today).
  EXPECT_GE(compared, 5);
}

}  // namespace
