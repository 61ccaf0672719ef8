// Hand-built jitdumps, byte by byte as the specification lays them out: every record type, code
// moved and addresses reused (named by time), a last record cut short, a wrong magic, a header cut
// short, and the same dump in the other byte order.
#include "perfscope/analysis/symbols/jitdump.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "perfscope/analysis/symbols/symbolizer.hpp"
#include "perfscope/core/error.hpp"
#include "support/test_support.hpp"

namespace {

using perfscope::JitCode;
using perfscope::Jitdump;
namespace jd = perfscope::jitdump;

// Writes a jitdump in native or swapped byte order.
class DumpBuilder {
 public:
  explicit DumpBuilder(bool swapped = false, std::uint64_t flags = 0) : swapped_(swapped) {
    u32(jd::magic);
    u32(1);  // version
    u32(jd::header_size);
    u32(62);  // EM_X86_64
    u32(0);
    u32(4242);  // pid
    u64(1000);  // timestamp
    u64(flags);
  }

  DumpBuilder& load(std::string_view name, std::uint64_t address, std::uint64_t index,
                    std::uint64_t time, std::vector<std::uint8_t> code) {
    std::size_t at = begin(jd::code_load, time);
    u32(4242), u32(4243), u64(address), u64(address), u64(code.size()), u64(index);
    text(name);
    bytes_.insert(bytes_.end(), code.begin(), code.end());
    return end(at);
  }
  DumpBuilder& move(std::uint64_t from, std::uint64_t to, std::uint64_t size, std::uint64_t index,
                    std::uint64_t time) {
    std::size_t at = begin(jd::code_move, time);
    u32(4242), u32(4243), u64(to), u64(from), u64(to), u64(size), u64(index);
    return end(at);
  }
  struct Line {
    std::uint64_t address;
    std::uint32_t line;
    std::string file;
  };
  DumpBuilder& debug_info(std::uint64_t address, const std::vector<Line>& lines,
                          std::uint64_t time) {
    std::size_t at = begin(jd::code_debug_info, time);
    u64(address), u64(lines.size());
    for (const Line& line : lines) {
      u64(line.address), u32(line.line), u32(0);
      text(line.file);
    }
    return end(at);
  }
  DumpBuilder& unwinding(std::size_t hdr_size, std::size_t size, std::uint64_t time) {
    std::size_t at = begin(jd::code_unwinding_info, time);
    u64(size), u64(hdr_size), u64(size);
    for (std::size_t i = 0; i < size; ++i) bytes_.push_back(static_cast<std::uint8_t>(i));
    return end(at);
  }
  DumpBuilder& close(std::uint64_t time) { return end(begin(jd::code_close, time)); }
  DumpBuilder& unknown(std::uint64_t time) {
    std::size_t at = begin(77, time);
    u64(5);
    return end(at);
  }

  std::vector<std::uint8_t> bytes() const { return bytes_; }

 private:
  std::size_t begin(std::uint32_t id, std::uint64_t time) {
    std::size_t at = bytes_.size();
    u32(id), u32(0), u64(time);
    return at;
  }
  DumpBuilder& end(std::size_t at) {
    auto size = static_cast<std::uint32_t>(bytes_.size() - at);
    if (swapped_) size = __builtin_bswap32(size);
    std::memcpy(bytes_.data() + at + 4, &size, sizeof size);
    return *this;
  }
  void u32(std::uint32_t value) {
    if (swapped_) value = __builtin_bswap32(value);
    append(&value, sizeof value);
  }
  void u64(std::uint64_t value) {
    if (swapped_) value = __builtin_bswap64(value);
    append(&value, sizeof value);
  }
  void text(std::string_view value) {
    append(value.data(), value.size());
    bytes_.push_back(0);
  }
  void append(const void* data, std::size_t size) {
    const auto* begin = static_cast<const std::uint8_t*>(data);
    bytes_.insert(bytes_.end(), begin, begin + size);
  }

  bool swapped_;
  std::vector<std::uint8_t> bytes_;
};

// Every record type: two functions, lines for one, unwinding information for the other, one
// moved, and the dump closed.
DumpBuilder every_record_type(bool swapped) {
  DumpBuilder dump(swapped);
  dump.debug_info(0x1000, {{0x1000, 10, "app.js"}, {0x1008, 12, "\xff"}, {0x1010, 20, "lib.js"}},
                  2000)
      .load("JS:*hot app.js:1", 0x1000, 1, 2001, std::vector<std::uint8_t>(32, 0x90))
      .unwinding(8, 24, 2002)
      .load("JS:~cold app.js:9", 0x2000, 2, 2003, {0x55, 0x48, 0x89, 0xe5, 0xc3})
      .unknown(2004)
      .move(0x2000, 0x3000, 5, 2, 3000)
      .close(9000);
  return dump;
}

void expect_every_record_type(const Jitdump& dump) {
  EXPECT_EQ(dump.pid(), 4242u);
  EXPECT_EQ(dump.elf_machine(), 62u);
  EXPECT_EQ(dump.records(), 7u);
  ASSERT_EQ(dump.code().size(), 3u);  // hot, cold before and after its move

  const JitCode* hot = dump.find(0x1009, 2500);
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(hot->name, "JS:*hot app.js:1");
  EXPECT_EQ(hot->size, 32u);
  EXPECT_EQ(hot->bytes.size(), 32u);
  EXPECT_EQ(hot->bytes[0], 0x90);
  ASSERT_EQ(hot->lines.size(), 3u);
  const perfscope::JitLine* line = hot->line_of(0x1009);
  ASSERT_NE(line, nullptr);
  EXPECT_EQ(line->line, 12u);
  EXPECT_EQ(line->file, "app.js");  // "\xff" repeats the previous entry's file
  EXPECT_EQ(hot->line_of(0x1011)->file, "lib.js");
  EXPECT_TRUE(hot->unwinding.empty());

  const JitCode* cold = dump.find(0x2001, 2500);
  ASSERT_NE(cold, nullptr);
  EXPECT_EQ(cold->name, "JS:~cold app.js:9");
  EXPECT_EQ(cold->unwinding.size(), 24u);  // the CODE_UNWINDING_INFO before its load
  EXPECT_EQ(cold->eh_frame_hdr_size, 8u);
  EXPECT_EQ(cold->until, 3000u);
  // After the move the code is at 0x3000, and 0x2000 holds nothing at that time...
  const JitCode* moved = dump.find(0x3002, 3500);
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(moved->name, "JS:~cold app.js:9");
  EXPECT_EQ(moved->from, 3000u);
  EXPECT_EQ(moved->bytes[0], 0x55);
  // ... but a lookup there without a usable time still names what was there last.
  EXPECT_EQ(dump.find(0x2001, 0)->name, "JS:~cold app.js:9");
  EXPECT_EQ(dump.find(0x5000, 2500), nullptr);
  // CODE_CLOSE ends every piece of code's time.
  EXPECT_EQ(moved->until, 9000u);
  ASSERT_EQ(dump.warnings().size(), 1u);
  EXPECT_NE(dump.warnings()[0].find("1 records of types this reader does not know"),
            std::string::npos)
      << dump.warnings()[0];
}

TEST(Jitdump, ReadsEveryRecordType) {
  expect_every_record_type(Jitdump::parse(every_record_type(false).bytes(), "jit-4242.dump"));
}

TEST(Jitdump, ReadsTheOtherByteOrder) {
  Jitdump dump = Jitdump::parse(every_record_type(true).bytes(), "jit-4242.dump");
  EXPECT_TRUE(dump.byte_swapped());
  expect_every_record_type(dump);
}

// An address freed and reused by later code names, at each sample's time, the code there then.
TEST(Jitdump, ReusedAddressesAreNamedByTime) {
  DumpBuilder builder;
  builder.load("first", 0x1000, 1, 100, std::vector<std::uint8_t>(64, 1))
      .load("second", 0x1000, 2, 200, std::vector<std::uint8_t>(16, 2))
      .load("third", 0x1020, 3, 300, std::vector<std::uint8_t>(16, 3));
  Jitdump dump = Jitdump::parse(builder.bytes(), "jit-4242.dump");
  EXPECT_EQ(dump.find(0x1008, 150)->name, "first");
  EXPECT_EQ(dump.find(0x1008, 250)->name, "second");
  EXPECT_EQ(dump.find(0x1028, 250)->name, "first");  // past second's end: still first's code
  EXPECT_EQ(dump.find(0x1028, 350)->name, "third");
  EXPECT_EQ(dump.find(0x1008, 50)->name, "first");  // before any load: the code that came next
  EXPECT_EQ(dump.find(0x1008, 0)->name, "second");  // no time: the last loaded there
}

TEST(Jitdump, KeepsTheRecordsBeforeATruncatedLastOne) {
  std::vector<std::uint8_t> bytes = DumpBuilder()
                                        .load("whole", 0x1000, 1, 100, {1, 2, 3})
                                        .load("cut", 0x2000, 2, 200, {4, 5, 6, 7})
                                        .bytes();
  bytes.resize(bytes.size() - 6);
  Jitdump dump = Jitdump::parse(bytes, "jit-4242.dump");
  ASSERT_EQ(dump.code().size(), 1u);
  EXPECT_EQ(dump.code()[0].name, "whole");
  ASSERT_EQ(dump.warnings().size(), 1u);
  EXPECT_NE(dump.warnings()[0].find("ends inside its last record (CODE_LOAD"), std::string::npos)
      << dump.warnings()[0];
  EXPECT_NE(dump.warnings()[0].find("the 1 complete records before it are read"), std::string::npos)
      << dump.warnings()[0];

  bytes.resize(jd::header_size + 30);  // inside the first record
  Jitdump early = Jitdump::parse(bytes, "jit-4242.dump");
  EXPECT_TRUE(early.code().empty());
  ASSERT_EQ(early.warnings().size(), 1u);
}

TEST(Jitdump, RefusesWhatIsNotAJitdump) {
  try {
    Jitdump::parse(std::vector<std::uint8_t>(64, 'x'), "perf-1.map");
    FAIL() << "a file of 'x' was read as a jitdump";
  } catch (const perfscope::Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("perf-1.map is not a jitdump: its magic number is "
                        "0x78787878, not \"JiTD\""),
              std::string::npos)
        << error.what();
  }
  std::vector<std::uint8_t> short_header = DumpBuilder().bytes();
  short_header.resize(20);
  try {
    Jitdump::parse(short_header, "jit-1.dump");
    FAIL() << "a 20-byte header was read";
  } catch (const perfscope::Error& error) {
    EXPECT_NE(std::string(error.what()).find("its header is cut short at 20 bytes of 40"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(Jitdump::parse({}, "jit-1.dump"), perfscope::Error);
}

TEST(Jitdump, SaysWhichMoveFoundNoCode) {
  Jitdump dump = Jitdump::parse(DumpBuilder().move(0x1000, 0x2000, 16, 9, 100).bytes(), "d");
  EXPECT_TRUE(dump.code().empty());
  ASSERT_EQ(dump.warnings().size(), 1u);
  EXPECT_NE(dump.warnings()[0].find("moves code index 9 from 0x1000, which no load put there"),
            std::string::npos)
      << dump.warnings()[0];
}

TEST(Jitdump, KnowsItsFileNames) {
  EXPECT_TRUE(perfscope::is_jitdump_path("/tmp/jit-1234.dump"));
  EXPECT_TRUE(perfscope::is_jitdump_path("jit-1.dump"));
  EXPECT_FALSE(perfscope::is_jitdump_path("/tmp/jit-.dump"));
  EXPECT_FALSE(perfscope::is_jitdump_path("/tmp/jit-12a.dump"));
  EXPECT_FALSE(perfscope::is_jitdump_path("/tmp/perf-12.map"));
}

// The runtime maps its dump after code in an anonymous mapping was looked up (its trampolines run
// early; whether a sample lands there first depends on the recorder's timing): the dump is read
// when it is announced, the addresses are named from it, and the warning that nothing names them
// is taken back. (Once, a node recording under load lost all its JIT names this way.)
TEST(Jitdump, ADumpAnnouncedAfterTheFirstLookupStillNames) {
  perfscope::testing::TempDir dir;
  std::vector<std::uint8_t> bytes =
      DumpBuilder().load("JS:*sieve", 0x7000, 1, 100, std::vector<std::uint8_t>(64, 0x90)).bytes();
  std::string path = dir.path() + "/jit-4242.dump";
  {
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  perfscope::SymbolizerOptions options;
  options.jit_map_dir = dir.path();  // no perf-4242.map there
  perfscope::Symbolizer symbolizer(options);
  auto before = symbolizer.resolve_jit(4242, 0x7010, 200);
  EXPECT_TRUE(before.symbol.empty());
  ASSERT_EQ(symbolizer.warnings().size(), 1u);
  EXPECT_NE(symbolizer.warnings()[0].find("no perf-4242.map"), std::string::npos);
  symbolizer.add_jitdump(4242, path);
  auto after = symbolizer.resolve_jit(4242, 0x7010, 200);
  EXPECT_EQ(after.symbol, "JS:*sieve");
  EXPECT_EQ(after.offset, 0x10u);
  EXPECT_TRUE(symbolizer.warnings().empty()) << symbolizer.warnings()[0];
  EXPECT_TRUE(symbolizer.missing_files().empty());
}

}  // namespace
