// Over 800 lines on purpose: every PERF_SAMPLE_* field and record type of the one decoder, built
// byte by byte with the writers below, so that each layout is checked beside the others.
//
// The record decoder against hand-built bytes laid out as kernel/events/core.c writes them
// (perf_output_sample, perf_event_*_output): every PERF_SAMPLE_* field alone and all together,
// every record type with and without the sample_id_all trailer, unknown types, and truncated or
// inconsistent records, which must fail with an offset and never read outside the record (the
// truncation tests copy each record into an allocation of exactly its size, so an ASan build
// catches any read past it).
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "perfscope/abi/branch_entry.hpp"
#include "perfscope/abi/data_source.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"

namespace pabi = perfscope::abi;
namespace sf = pabi::sample_format;
namespace rf = pabi::read_format;
namespace bs = pabi::branch_sample;
namespace misc = pabi::record_misc;
using pabi::RecordType;
using perfscope::DecodeError;
using perfscope::ParseConfig;
using perfscope::Record;
using perfscope::RecordView;
using perfscope::SampleRecord;

namespace {

// Builds one record the way the kernel lays it out: a header, then fields appended in order,
// each run of bytes padded to 8. The backing store is u64 words, so the record is 8-byte aligned.
class RecordBuilder {
 public:
  explicit RecordBuilder(RecordType type, std::uint16_t misc_bits = 0)
      : RecordBuilder(static_cast<std::uint32_t>(type), misc_bits) {}
  RecordBuilder(std::uint32_t type, std::uint16_t misc_bits) : type_(type), misc_(misc_bits) {
    words_.push_back(0);  // the header, written by view()
    size_ = sizeof(pabi::RecordHeader);
  }

  RecordBuilder& u64(std::uint64_t value) {
    append(&value, sizeof value);
    return *this;
  }
  RecordBuilder& u32_pair(std::uint32_t low, std::uint32_t high) {
    return u64(static_cast<std::uint64_t>(high) << 32 | low);
  }
  // Bytes as they are, unpadded (callers pad with pad()).
  RecordBuilder& raw(const void* data, std::size_t count) {
    append(data, count);
    return *this;
  }
  RecordBuilder& u32(std::uint32_t value) { return raw(&value, sizeof value); }
  RecordBuilder& u16(std::uint16_t value) { return raw(&value, sizeof value); }
  RecordBuilder& u8(std::uint8_t value) { return raw(&value, sizeof value); }
  RecordBuilder& pad() {
    static constexpr std::array<std::byte, 8> zeros{};
    append(zeros.data(), (8 - size_ % 8) % 8);
    return *this;
  }
  // Bytes padded to 8.
  RecordBuilder& bytes(const void* data, std::size_t count) { return raw(data, count).pad(); }
  // A NUL-terminated string padded to 8, as the kernel writes comm/filename/name/path.
  RecordBuilder& string(std::string_view text) {
    raw(text.data(), text.size());
    return u8(0).pad();
  }

  std::size_t size() const noexcept { return size_; }

  static constexpr std::size_t own_size = ~std::size_t{0};

  // The record with header.size == its length, or `header_size` to make it lie.
  RecordView view(std::size_t header_size = own_size) {
    pad();
    pabi::RecordHeader header{
        type_, misc_, static_cast<std::uint16_t>(header_size == own_size ? size_ : header_size)};
    std::memcpy(words_.data(), &header, sizeof header);
    RecordView record;
    record.header = header;
    record.bytes = {reinterpret_cast<const std::byte*>(words_.data()), size_};
    return record;
  }

 private:
  void append(const void* data, std::size_t count) {
    words_.resize((size_ + count + 7) / 8);
    std::memcpy(reinterpret_cast<std::byte*>(words_.data()) + size_, data, count);
    size_ += count;
  }

  std::uint32_t type_;
  std::uint16_t misc_;
  std::vector<std::uint64_t> words_;
  std::size_t size_ = 0;
};

// A copy of a record's first `size` bytes in an allocation of exactly that size, with
// header.size set to it: reading one byte past it is a heap overflow under ASan.
class ExactCopy {
 public:
  ExactCopy(const RecordView& source, std::size_t size) : words_(size / 8) {
    std::memcpy(words_.data(), source.bytes.data(), size);
    pabi::RecordHeader header = source.header;
    header.size = static_cast<std::uint16_t>(size);
    if (size >= sizeof header) std::memcpy(words_.data(), &header, sizeof header);
    view_.header = header;
    view_.bytes = {reinterpret_cast<const std::byte*>(words_.data()), size};
  }
  const RecordView& view() const noexcept { return view_; }

 private:
  std::vector<std::uint64_t> words_;
  RecordView view_;
};

ParseConfig sample_config(std::uint64_t sample_type) {
  ParseConfig config;
  config.sample_type = sample_type;
  return config;
}

SampleRecord decode_ok(const RecordView& view, const ParseConfig& config) {
  SampleRecord sample;
  DecodeError error;
  EXPECT_TRUE(perfscope::decode_sample(view, config, sample, error))
      << error.what << " at offset " << error.offset;
  // decode_record agrees with decode_sample.
  Record record;
  EXPECT_TRUE(perfscope::decode_record(view, config, record, error));
  EXPECT_TRUE(std::holds_alternative<SampleRecord>(record));
  return sample;
}

// The record decodes, and every shorter prefix of it (header.size cut to a multiple of 8) is
// rejected: the decoder read exactly the bytes the layout says, no fewer.
void expect_exact_length(const RecordView& view, const ParseConfig& config) {
  Record record;
  DecodeError error;
  ASSERT_TRUE(perfscope::decode_record(view, config, record, error))
      << error.what << " at offset " << error.offset;
  for (std::size_t size = sizeof(pabi::RecordHeader); size < view.header.size; size += 8) {
    ExactCopy cut(view, size);
    error = {};
    EXPECT_FALSE(perfscope::decode_record(cut.view(), config, record, error))
        << "a " << size << "-byte prefix of a " << view.header.size << "-byte "
        << perfscope::record_type_name(view.header.type) << " record decoded";
    EXPECT_NE(std::string_view(error.what), "");
    EXPECT_LE(error.offset, size);
  }
}

// --- PERF_RECORD_SAMPLE, one field at a time -------------------------------------------------

TEST(SampleField, Identifier) {
  RecordBuilder b(RecordType::sample);
  b.u64(0xabcdef);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::identifier));
  EXPECT_EQ(s.identifier, 0xabcdefU);
  EXPECT_EQ(s.id, 0xabcdefU);  // IDENTIFIER stands in for ID when ID is not sampled
  EXPECT_TRUE(s.has(sf::identifier));
  EXPECT_FALSE(s.has(sf::ip));
  expect_exact_length(view, sample_config(sf::identifier));
}

TEST(SampleField, IpKeepsMiscBits) {
  RecordBuilder b(RecordType::sample, misc::user | misc::exact_ip);
  b.u64(0x401234);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::ip));
  EXPECT_EQ(s.ip, 0x401234U);
  EXPECT_EQ(s.misc & misc::cpumode_mask, misc::user);
  EXPECT_TRUE(s.misc & misc::exact_ip);
  expect_exact_length(view, sample_config(sf::ip));
}

TEST(SampleField, Tid) {
  RecordBuilder b(RecordType::sample);
  b.u32_pair(1234, 5678);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::tid));
  EXPECT_EQ(s.pid, 1234U);
  EXPECT_EQ(s.tid, 5678U);
  expect_exact_length(view, sample_config(sf::tid));
}

TEST(SampleField, Time) {
  RecordBuilder b(RecordType::sample);
  b.u64(987654321012345ULL);
  auto view = b.view();
  EXPECT_EQ(decode_ok(view, sample_config(sf::time)).time, 987654321012345ULL);
  expect_exact_length(view, sample_config(sf::time));
}

TEST(SampleField, Addr) {
  RecordBuilder b(RecordType::sample);
  b.u64(0x7ffd'0000'1000ULL);
  auto view = b.view();
  EXPECT_EQ(decode_ok(view, sample_config(sf::addr)).addr, 0x7ffd'0000'1000ULL);
  expect_exact_length(view, sample_config(sf::addr));
}

TEST(SampleField, IdWinsOverIdentifierWhenBothAreSampled) {
  RecordBuilder b(RecordType::sample);
  b.u64(77).u64(78);  // IDENTIFIER comes first, ID in its own place after the others
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::identifier | sf::id));
  EXPECT_EQ(s.identifier, 77U);
  EXPECT_EQ(s.id, 78U);
  RecordBuilder alone(RecordType::sample);
  alone.u64(99);
  auto alone_view = alone.view();
  EXPECT_EQ(decode_ok(alone_view, sample_config(sf::id)).id, 99U);
  expect_exact_length(alone_view, sample_config(sf::id));
}

TEST(SampleField, StreamId) {
  RecordBuilder b(RecordType::sample);
  b.u64(4242);
  auto view = b.view();
  EXPECT_EQ(decode_ok(view, sample_config(sf::stream_id)).stream_id, 4242U);
  expect_exact_length(view, sample_config(sf::stream_id));
}

TEST(SampleField, CpuIgnoresTheReservedHalf) {
  RecordBuilder b(RecordType::sample);
  b.u32_pair(3, 0xffffffff);
  auto view = b.view();
  EXPECT_EQ(decode_ok(view, sample_config(sf::cpu)).cpu, 3U);
  expect_exact_length(view, sample_config(sf::cpu));
}

TEST(SampleField, Period) {
  RecordBuilder b(RecordType::sample);
  b.u64(100003);
  auto view = b.view();
  EXPECT_EQ(decode_ok(view, sample_config(sf::period)).period, 100003U);
  expect_exact_length(view, sample_config(sf::period));
}

TEST(SampleField, ReadSingleWithEveryFormatBit) {
  // perf_output_read_one: value, enabled, running, id, lost.
  RecordBuilder b(RecordType::sample);
  b.u64(500).u64(2000).u64(1000).u64(31).u64(2);
  auto view = b.view();
  auto config = sample_config(sf::read);
  config.read_format = rf::total_time_enabled | rf::total_time_running | rf::id | rf::lost;
  auto s = decode_ok(view, config);
  EXPECT_EQ(s.read.member_count(), 1U);
  std::array<perfscope::Reading, 1> out{};
  ASSERT_EQ(s.read.decode(out), 1U);
  EXPECT_EQ(out[0].value, 500U);
  EXPECT_EQ(out[0].enabled, 2000U);
  EXPECT_EQ(out[0].running, 1000U);
  EXPECT_EQ(out[0].id, 31U);
  EXPECT_EQ(out[0].lost, 2U);
  expect_exact_length(view, config);
}

TEST(SampleField, ReadSingleValueOnly) {
  // No read_format bits: one value, and CALLCHAIN follows right after it.
  auto config = sample_config(sf::read | sf::callchain);
  RecordBuilder b(RecordType::sample);
  b.u64(7).u64(1).u64(0x400000);
  auto view = b.view();
  auto s = decode_ok(view, config);
  std::array<perfscope::Reading, 1> out{};
  ASSERT_EQ(s.read.decode(out), 1U);
  EXPECT_EQ(out[0].value, 7U);
  ASSERT_EQ(s.callchain.size(), 1U);
  EXPECT_EQ(s.callchain[0], 0x400000U);
  expect_exact_length(view, config);
}

TEST(SampleField, ReadGroupWithEveryFormatBit) {
  // perf_output_read_group: nr, enabled, running, then {value, id, lost} per member.
  RecordBuilder b(RecordType::sample);
  b.u64(3).u64(9000).u64(4500);
  b.u64(10).u64(100).u64(0);
  b.u64(20).u64(101).u64(1);
  b.u64(30).u64(102).u64(5);
  auto view = b.view();
  auto config = sample_config(sf::read);
  config.read_format =
      rf::group | rf::total_time_enabled | rf::total_time_running | rf::id | rf::lost;
  auto s = decode_ok(view, config);
  EXPECT_EQ(s.read.member_count(), 3U);
  EXPECT_EQ(s.read.words.size(), 12U);
  std::array<perfscope::Reading, 3> out{};
  ASSERT_EQ(s.read.decode(out), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].value, 10 * (i + 1));
    EXPECT_EQ(out[i].id, 100 + i);
    EXPECT_EQ(out[i].enabled, 9000U);
    EXPECT_EQ(out[i].running, 4500U);
  }
  EXPECT_EQ(out[2].lost, 5U);
  expect_exact_length(view, config);
}

TEST(SampleField, ReadGroupWithoutTimes) {
  auto config = sample_config(sf::read);
  config.read_format = rf::group;
  RecordBuilder b(RecordType::sample);
  b.u64(2).u64(11).u64(12);  // nr, value, value
  auto view = b.view();
  auto s = decode_ok(view, config);
  std::array<perfscope::Reading, 2> out{};
  ASSERT_EQ(s.read.decode(out), 2U);
  EXPECT_EQ(out[0].value, 11U);
  EXPECT_EQ(out[1].value, 12U);
  expect_exact_length(view, config);
}

TEST(SampleField, CallchainKeepsContextMarkers) {
  namespace ctx = pabi::callchain_context;
  const std::array<std::uint64_t, 6> ips{
      ctx::kernel, 0xffffffff81000010ULL, 0xffffffff81000020ULL, ctx::user, 0x401000, 0x402000};
  RecordBuilder b(RecordType::sample);
  b.u64(ips.size());
  for (auto ip : ips) b.u64(ip);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::callchain));
  ASSERT_EQ(s.callchain.size(), ips.size());
  for (std::size_t i = 0; i < ips.size(); ++i) EXPECT_EQ(s.callchain[i], ips[i]);
  EXPECT_TRUE(ctx::is_marker(s.callchain[0]));
  EXPECT_TRUE(ctx::is_marker(s.callchain[3]));
  EXPECT_FALSE(ctx::is_marker(s.callchain[1]));
  EXPECT_EQ(static_cast<std::int64_t>(ctx::kernel), -128);
  EXPECT_EQ(static_cast<std::int64_t>(ctx::user), -512);
  expect_exact_length(view, sample_config(sf::callchain));
}

TEST(SampleField, CallchainEmpty) {
  RecordBuilder b(RecordType::sample);
  b.u64(0).u64(55);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::callchain | sf::weight));
  EXPECT_TRUE(s.callchain.empty());
  EXPECT_EQ(s.weight.full, 55U);
}

TEST(SampleField, RawAsTheKernelPadsIt) {
  // The kernel makes size + 4 a multiple of 8 (size counts the padding).
  const std::array<std::uint8_t, 12> payload{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  // WEIGHT after RAW shows where the decoder resumes.
  auto config = sample_config(sf::raw | sf::weight);
  RecordBuilder b(RecordType::sample);
  b.u32(12).raw(payload.data(), payload.size()).pad().u64(0x2222);
  auto view = b.view();
  auto s = decode_ok(view, config);
  ASSERT_EQ(s.raw.size(), 12U);
  EXPECT_EQ(std::memcmp(s.raw.data(), payload.data(), payload.size()), 0);
  EXPECT_EQ(s.weight.full, 0x2222U);
  expect_exact_length(view, config);
}

TEST(SampleField, RawWithUnalignedSizeSkipsToTheNextWord) {
  // A size the kernel would not write (4 + 5 = 9): the decoder still skips to the next u64.
  const std::array<std::uint8_t, 5> payload{0xa, 0xb, 0xc, 0xd, 0xe};
  RecordBuilder b(RecordType::sample);
  b.u32(5).raw(payload.data(), payload.size()).pad().u64(0x3333);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::raw | sf::data_src));
  ASSERT_EQ(s.raw.size(), 5U);
  EXPECT_EQ(static_cast<std::uint8_t>(s.raw[4]), 0xe);
  EXPECT_EQ(s.data_src, 0x3333U);
}

TEST(SampleField, RawEmptyAsWrittenWithoutData) {
  // No raw data: the kernel writes {size = 4, data = 0}.
  RecordBuilder b(RecordType::sample);
  b.u32(4).u32(0);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::raw));
  EXPECT_EQ(s.raw.size(), 4U);
  expect_exact_length(view, sample_config(sf::raw));
}

std::uint64_t branch_flags_word(bool mispred, bool predicted, bool in_tx, bool abort,
                                std::uint64_t cycles, std::uint64_t type, std::uint64_t spec,
                                std::uint64_t new_type, std::uint64_t priv) {
  // struct perf_branch_entry's bitfields, lowest first: 1,1,1,1,16,4,2,4,3.
  return static_cast<std::uint64_t>(mispred) | static_cast<std::uint64_t>(predicted) << 1 |
         static_cast<std::uint64_t>(in_tx) << 2 | static_cast<std::uint64_t>(abort) << 3 |
         cycles << 4 | type << 20 | spec << 24 | new_type << 26 | priv << 30;
}

void add_branch_entries(RecordBuilder& b) {
  b.u64(0x401000).u64(0x402000);
  b.u64(branch_flags_word(true, false, false, false, 123, 4 /*call*/, 2, 0, 1));
  b.u64(0x402010).u64(0x401008);
  b.u64(branch_flags_word(false, true, true, true, 0xffff, 6 /*ret*/, 3, 9, 7));
}

void check_branch_entries(const perfscope::BranchStack& stack) {
  namespace bf = pabi::branch_flags;
  ASSERT_EQ(stack.entries.size(), 2U);
  const auto& first = stack.entries[0];
  EXPECT_EQ(first.from, 0x401000U);
  EXPECT_EQ(first.to, 0x402000U);
  EXPECT_EQ(bf::mispred.get(first.flags), 1U);
  EXPECT_EQ(bf::predicted.get(first.flags), 0U);
  EXPECT_EQ(bf::cycles.get(first.flags), 123U);
  EXPECT_EQ(bf::type.get(first.flags), static_cast<std::uint64_t>(pabi::BranchType::call));
  EXPECT_EQ(bf::spec.get(first.flags), 2U);
  EXPECT_EQ(bf::priv.get(first.flags), 1U);
  const auto& second = stack.entries[1];
  EXPECT_EQ(second.from, 0x402010U);
  EXPECT_EQ(bf::mispred.get(second.flags), 0U);
  EXPECT_EQ(bf::predicted.get(second.flags), 1U);
  EXPECT_EQ(bf::in_tx.get(second.flags), 1U);
  EXPECT_EQ(bf::abort.get(second.flags), 1U);
  EXPECT_EQ(bf::cycles.get(second.flags), 0xffffU);
  EXPECT_EQ(bf::type.get(second.flags), static_cast<std::uint64_t>(pabi::BranchType::ret));
  EXPECT_EQ(bf::spec.get(second.flags), 3U);
  EXPECT_EQ(bf::new_type.get(second.flags), 9U);
  EXPECT_EQ(bf::priv.get(second.flags), 7U);
}

TEST(SampleField, BranchStackWithoutHwIndex) {
  RecordBuilder b(RecordType::sample);
  b.u64(2);
  add_branch_entries(b);
  auto view = b.view();
  auto config = sample_config(sf::branch_stack);
  config.branch_sample_type = bs::any | bs::user;
  auto s = decode_ok(view, config);
  EXPECT_FALSE(s.branch_stack.has_hw_index);
  EXPECT_TRUE(s.branch_stack.counters.empty());
  check_branch_entries(s.branch_stack);
  expect_exact_length(view, config);
}

TEST(SampleField, BranchStackWithHwIndex) {
  RecordBuilder b(RecordType::sample);
  b.u64(2).u64(17);  // nr, then hw_idx, then the entries
  add_branch_entries(b);
  auto view = b.view();
  auto config = sample_config(sf::branch_stack);
  config.branch_sample_type = bs::any | bs::hw_index;
  auto s = decode_ok(view, config);
  EXPECT_TRUE(s.branch_stack.has_hw_index);
  EXPECT_EQ(s.branch_stack.hw_index, 17U);
  check_branch_entries(s.branch_stack);
  expect_exact_length(view, config);
}

TEST(SampleField, BranchStackWithHwIndexAndCounters) {
  RecordBuilder b(RecordType::sample);
  b.u64(2).u64(5);
  add_branch_entries(b);
  b.u64(0x0102).u64(0x0304);  // one counters word per entry, after all entries
  b.u64(0xd5);                // DATA_SRC follows
  auto view = b.view();
  auto config = sample_config(sf::branch_stack | sf::data_src);
  config.branch_sample_type = bs::any | bs::hw_index | bs::counters;
  auto s = decode_ok(view, config);
  EXPECT_EQ(s.branch_stack.hw_index, 5U);
  check_branch_entries(s.branch_stack);
  ASSERT_EQ(s.branch_stack.counters.size(), 2U);
  EXPECT_EQ(s.branch_stack.counters[0], 0x0102U);
  EXPECT_EQ(s.branch_stack.counters[1], 0x0304U);
  EXPECT_EQ(s.data_src, 0xd5U);
  expect_exact_length(view, config);
}

TEST(SampleField, BranchStackWithCountersOnly) {
  RecordBuilder b(RecordType::sample);
  b.u64(2);
  add_branch_entries(b);
  b.u64(8).u64(9);
  auto view = b.view();
  auto config = sample_config(sf::branch_stack);
  config.branch_sample_type = bs::any | bs::counters;
  auto s = decode_ok(view, config);
  EXPECT_FALSE(s.branch_stack.has_hw_index);
  check_branch_entries(s.branch_stack);
  ASSERT_EQ(s.branch_stack.counters.size(), 2U);
  EXPECT_EQ(s.branch_stack.counters[1], 9U);
  expect_exact_length(view, config);
}

TEST(SampleField, RegsUserWithAbiNoneHasNoValues) {
  // A kernel thread: abi 0 and no registers; STACK_USER then writes just size 0.
  RecordBuilder b(RecordType::sample);
  b.u64(0).u64(0).u64(0x77);
  auto view = b.view();
  auto config = sample_config(sf::regs_user | sf::stack_user | sf::weight);
  config.sample_regs_user = 0xff;
  auto s = decode_ok(view, config);
  EXPECT_EQ(s.regs_user.abi, 0U);
  EXPECT_TRUE(s.regs_user.values.empty());
  EXPECT_FALSE(s.regs_user.value(0).has_value());
  EXPECT_TRUE(s.stack_user.empty());
  EXPECT_EQ(s.stack_user_dyn_size, 0U);
  EXPECT_EQ(s.weight.full, 0x77U);
  expect_exact_length(view, config);
}

TEST(SampleField, RegsUserAbi64ValuesInMaskOrder) {
  // Registers 1, 6 and 7 (x86: bx, bp, sp), one u64 each in bit order.
  RecordBuilder b(RecordType::sample);
  b.u64(static_cast<std::uint64_t>(pabi::SampleRegsAbi::abi64)).u64(0xb1).u64(0xb6).u64(0xb7);
  auto view = b.view();
  auto config = sample_config(sf::regs_user);
  config.sample_regs_user = (1ULL << 1) | (1ULL << 6) | (1ULL << 7);
  auto s = decode_ok(view, config);
  EXPECT_EQ(s.regs_user.abi, 2U);
  EXPECT_EQ(s.regs_user.values.size(), 3U);
  EXPECT_EQ(s.regs_user.value(1), 0xb1U);
  EXPECT_EQ(s.regs_user.value(6), 0xb6U);
  EXPECT_EQ(s.regs_user.value(7), 0xb7U);
  EXPECT_FALSE(s.regs_user.value(0).has_value());   // not in the mask
  EXPECT_FALSE(s.regs_user.value(64).has_value());  // no such register
  expect_exact_length(view, config);
}

TEST(SampleField, StackUserSizeZeroHasNoDynSize) {
  RecordBuilder b(RecordType::sample);
  b.u64(0).u64(0x99);
  auto view = b.view();
  auto config = sample_config(sf::stack_user | sf::weight);
  auto s = decode_ok(view, config);
  EXPECT_TRUE(s.stack_user.empty());
  EXPECT_TRUE(s.stack_user_valid().empty());
  EXPECT_EQ(s.weight.full, 0x99U);
  expect_exact_length(view, config);
}

TEST(SampleField, StackUserWithDynSize) {
  std::array<std::uint8_t, 32> stack{};
  for (std::size_t i = 0; i < stack.size(); ++i) stack[i] = static_cast<std::uint8_t>(i + 1);
  RecordBuilder b(RecordType::sample);
  b.u64(stack.size()).bytes(stack.data(), stack.size()).u64(20);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::stack_user));
  ASSERT_EQ(s.stack_user.size(), 32U);
  EXPECT_EQ(s.stack_user_dyn_size, 20U);
  ASSERT_EQ(s.stack_user_valid().size(), 20U);
  EXPECT_EQ(static_cast<std::uint8_t>(s.stack_user_valid()[19]), 20);
  expect_exact_length(view, sample_config(sf::stack_user));
}

TEST(SampleField, Weight) {
  RecordBuilder b(RecordType::sample);
  b.u64(0x1234'5678'9abc'def0ULL);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::weight));
  EXPECT_EQ(s.weight.full, 0x1234'5678'9abc'def0ULL);
  expect_exact_length(view, sample_config(sf::weight));
}

TEST(SampleField, WeightStruct) {
  // union perf_sample_weight: u32 var1_dw, u16 var2_w, u16 var3_w.
  RecordBuilder b(RecordType::sample);
  b.u32(0x11223344).u16(0x5566).u16(0x7788);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::weight_struct));
  EXPECT_EQ(s.weight.var1_dw(), 0x11223344U);
  EXPECT_EQ(s.weight.var2_w(), 0x5566U);
  EXPECT_EQ(s.weight.var3_w(), 0x7788U);
  expect_exact_length(view, sample_config(sf::weight_struct));
}

TEST(SampleField, DataSourceDecodesEveryField) {
  namespace ds = pabi::data_source;
  // Shifts from include/uapi/linux/perf_event.h (PERF_MEM_*_SHIFT), written out independently
  // of abi::data_source so a wrong BitField there shows up here.
  const std::uint64_t word =
      ds::op_bits::load << 0 | (ds::level_bits::hit | ds::level_bits::l3) << 5 |
      ds::snoop_bits::hitm << 19 | ds::lock_bits::locked << 24 |
      (ds::dtlb_bits::hit | ds::dtlb_bits::l2) << 26 | ds::level_number_values::l3 << 33 |
      1ULL << 37 | ds::snoopx_bits::fwd << 38 | ds::block_bits::data << 40 |
      ds::hops_values::socket << 43;
  RecordBuilder b(RecordType::sample);
  b.u64(word);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::data_src));
  EXPECT_EQ(s.data_src, word);
  auto source = perfscope::DataSource::decode(s.data_src);
  EXPECT_EQ(source.op, ds::op_bits::load);
  EXPECT_EQ(source.level, ds::level_bits::hit | ds::level_bits::l3);
  EXPECT_EQ(source.snoop, ds::snoop_bits::hitm);
  EXPECT_EQ(source.lock, ds::lock_bits::locked);
  EXPECT_EQ(source.dtlb, ds::dtlb_bits::hit | ds::dtlb_bits::l2);
  EXPECT_EQ(source.level_number, ds::level_number_values::l3);
  EXPECT_EQ(source.remote, 1U);
  EXPECT_EQ(source.snoopx, ds::snoopx_bits::fwd);
  EXPECT_EQ(source.block, ds::block_bits::data);
  EXPECT_EQ(source.hops, ds::hops_values::socket);
  expect_exact_length(view, sample_config(sf::data_src));
}

TEST(SampleField, DataSourceFieldsDoNotBleedIntoEachOther) {
  namespace ds = pabi::data_source;
  auto all = perfscope::DataSource::decode(~0ULL);
  EXPECT_EQ(all.op, 0x1fU);
  EXPECT_EQ(all.level, 0x3fffU);
  EXPECT_EQ(all.snoop, 0x1fU);
  EXPECT_EQ(all.lock, 0x3U);
  EXPECT_EQ(all.dtlb, 0x7fU);
  EXPECT_EQ(all.level_number, 0xfU);
  EXPECT_EQ(all.remote, 1U);
  EXPECT_EQ(all.snoopx, 3U);
  EXPECT_EQ(all.block, 7U);
  EXPECT_EQ(all.hops, 7U);
  // NA everywhere, as perf writes for "not available" (PERF_MEM_NA = 0x0842_1001... per field).
  auto na = perfscope::DataSource::decode(ds::op_bits::na << 0 | ds::level_bits::na << 5 |
                                          ds::snoop_bits::na << 19 | ds::lock_bits::na << 24 |
                                          ds::dtlb_bits::na << 26);
  EXPECT_EQ(na.op, ds::op_bits::na);
  EXPECT_EQ(na.level, ds::level_bits::na);
  EXPECT_EQ(na.snoop, ds::snoop_bits::na);
  EXPECT_EQ(na.lock, ds::lock_bits::na);
  EXPECT_EQ(na.dtlb, ds::dtlb_bits::na);
  EXPECT_EQ(na.level_number, 0U);
  EXPECT_EQ(na.hops, 0U);
}

TEST(SampleField, Transaction) {
  namespace tx = pabi::transaction;
  const std::uint64_t word = tx::transaction | tx::conflict | (0xabULL << tx::abort_code_shift);
  RecordBuilder b(RecordType::sample);
  b.u64(word);
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::transaction));
  EXPECT_EQ(s.transaction, word);
  EXPECT_EQ((s.transaction & tx::abort_code_mask) >> tx::abort_code_shift, 0xabU);
  expect_exact_length(view, sample_config(sf::transaction));
}

TEST(SampleField, RegsIntrUsesItsOwnMask) {
  RecordBuilder b(RecordType::sample);
  b.u64(static_cast<std::uint64_t>(pabi::SampleRegsAbi::abi64)).u64(0x1f0).u64(0x1f8);
  auto view = b.view();
  auto config = sample_config(sf::regs_intr);
  config.sample_regs_user = 0xffff;  // ignored for REGS_INTR
  config.sample_regs_intr = (1ULL << 8) | (1ULL << 16);
  auto s = decode_ok(view, config);
  EXPECT_EQ(s.regs_intr.value(8), 0x1f0U);
  EXPECT_EQ(s.regs_intr.value(16), 0x1f8U);
  EXPECT_FALSE(s.regs_intr.value(0).has_value());
  EXPECT_TRUE(s.regs_user.values.empty());
  expect_exact_length(view, config);
}

TEST(SampleField, PhysAddr) {
  RecordBuilder b(RecordType::sample);
  b.u64(0x1'2345'6000ULL);
  auto view = b.view();
  EXPECT_EQ(decode_ok(view, sample_config(sf::phys_addr)).phys_addr, 0x1'2345'6000ULL);
  expect_exact_length(view, sample_config(sf::phys_addr));
}

TEST(SampleField, Aux) {
  std::array<std::uint8_t, 16> data{};
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(0xa0 + i);
  RecordBuilder b(RecordType::sample);
  b.u64(data.size()).bytes(data.data(), data.size());
  auto view = b.view();
  auto s = decode_ok(view, sample_config(sf::aux));
  ASSERT_EQ(s.aux.size(), 16U);
  EXPECT_EQ(static_cast<std::uint8_t>(s.aux[15]), 0xafU);
  expect_exact_length(view, sample_config(sf::aux));
}

TEST(SampleField, Cgroup) {
  RecordBuilder b(RecordType::sample);
  b.u64(0x2a0);
  auto view = b.view();
  EXPECT_EQ(decode_ok(view, sample_config(sf::cgroup)).cgroup, 0x2a0U);
  expect_exact_length(view, sample_config(sf::cgroup));
}

TEST(SampleField, DataPageSize) {
  RecordBuilder b(RecordType::sample);
  b.u64(2 << 20);
  auto view = b.view();
  EXPECT_EQ(decode_ok(view, sample_config(sf::data_page_size)).data_page_size, 2U << 20);
  expect_exact_length(view, sample_config(sf::data_page_size));
}

TEST(SampleField, CodePageSize) {
  RecordBuilder b(RecordType::sample);
  b.u64(4096);
  auto view = b.view();
  EXPECT_EQ(decode_ok(view, sample_config(sf::code_page_size)).code_page_size, 4096U);
  expect_exact_length(view, sample_config(sf::code_page_size));
}

// --- every field at once, in perf_output_sample's order --------------------------------------

constexpr std::uint64_t every_field =
    sf::identifier | sf::ip | sf::tid | sf::time | sf::addr | sf::id | sf::stream_id | sf::cpu |
    sf::period | sf::read | sf::callchain | sf::raw | sf::branch_stack | sf::regs_user |
    sf::stack_user | sf::weight_struct | sf::data_src | sf::transaction | sf::regs_intr |
    sf::phys_addr | sf::cgroup | sf::data_page_size | sf::code_page_size | sf::aux;

ParseConfig every_field_config() {
  ParseConfig config = sample_config(every_field);
  config.read_format = rf::group | rf::total_time_enabled | rf::total_time_running | rf::id;
  config.branch_sample_type = bs::any | bs::hw_index | bs::counters;
  config.sample_regs_user = 0b101;
  config.sample_regs_intr = 0b11;
  config.sample_id_all = true;
  return config;
}

RecordBuilder every_field_sample() {
  RecordBuilder b(RecordType::sample, misc::kernel);
  b.u64(1001);                          // IDENTIFIER
  b.u64(0xffffffff81234567ULL);         // IP
  b.u32_pair(10, 11);                   // TID
  b.u64(123456789);                     // TIME
  b.u64(0xdead000);                     // ADDR
  b.u64(1001);                          // ID
  b.u64(2002);                          // STREAM_ID
  b.u32_pair(1, 0);                     // CPU
  b.u64(4000);                          // PERIOD
  b.u64(2).u64(50).u64(40);             // READ: nr, enabled, running
  b.u64(7).u64(1001).u64(8).u64(1002);  //       value, id per member
  b.u64(3)
      .u64(pabi::callchain_context::kernel)
      .u64(0xffffffff81000000ULL)
      .u64(0xffffffff81000100ULL);
  const std::array<std::uint8_t, 4> raw{0xde, 0xad, 0xbe, 0xef};
  b.u32(4).raw(raw.data(), raw.size()).pad();  // RAW
  b.u64(2).u64(3);                             // BRANCH_STACK: nr, hw_idx
  add_branch_entries(b);
  b.u64(100).u64(200);                                                                //   counters
  b.u64(static_cast<std::uint64_t>(pabi::SampleRegsAbi::abi64)).u64(0xa0).u64(0xa2);  // REGS_USER
  const std::array<std::uint8_t, 16> stack{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  b.u64(stack.size()).bytes(stack.data(), stack.size()).u64(8);  // STACK_USER
  b.u32(300).u16(2).u16(1);                                      // WEIGHT_STRUCT
  b.u64(0x2);                                                    // DATA_SRC
  b.u64(pabi::transaction::sync);                                // TRANSACTION
  b.u64(static_cast<std::uint64_t>(pabi::SampleRegsAbi::abi64)).u64(0xc0).u64(0xc1);  // REGS_INTR
  b.u64(0x7000'1000);                                                                 // PHYS_ADDR
  b.u64(0x5a);                                                                        // CGROUP
  b.u64(4096);                       // DATA_PAGE_SIZE
  b.u64(2 << 20);                    // CODE_PAGE_SIZE
  b.u64(8).u64(0x0123456789abcdef);  // AUX
  return b;
}

void check_every_field(const SampleRecord& s) {
  EXPECT_EQ(s.fields, every_field);
  EXPECT_EQ(s.misc, misc::kernel);
  EXPECT_EQ(s.identifier, 1001U);
  EXPECT_EQ(s.ip, 0xffffffff81234567ULL);
  EXPECT_EQ(s.pid, 10U);
  EXPECT_EQ(s.tid, 11U);
  EXPECT_EQ(s.time, 123456789U);
  EXPECT_EQ(s.addr, 0xdead000U);
  EXPECT_EQ(s.id, 1001U);
  EXPECT_EQ(s.stream_id, 2002U);
  EXPECT_EQ(s.cpu, 1U);
  EXPECT_EQ(s.period, 4000U);
  std::array<perfscope::Reading, 2> members{};
  ASSERT_EQ(s.read.decode(members), 2U);
  EXPECT_EQ(members[1].value, 8U);
  EXPECT_EQ(members[1].id, 1002U);
  EXPECT_EQ(members[1].running, 40U);
  ASSERT_EQ(s.callchain.size(), 3U);
  EXPECT_EQ(s.callchain[2], 0xffffffff81000100ULL);
  ASSERT_EQ(s.raw.size(), 4U);
  EXPECT_EQ(static_cast<std::uint8_t>(s.raw[3]), 0xef);
  EXPECT_EQ(s.branch_stack.hw_index, 3U);
  check_branch_entries(s.branch_stack);
  ASSERT_EQ(s.branch_stack.counters.size(), 2U);
  EXPECT_EQ(s.branch_stack.counters[1], 200U);
  EXPECT_EQ(s.regs_user.value(0), 0xa0U);
  EXPECT_EQ(s.regs_user.value(2), 0xa2U);
  EXPECT_EQ(s.stack_user.size(), 16U);
  EXPECT_EQ(s.stack_user_valid().size(), 8U);
  EXPECT_EQ(s.weight.var1_dw(), 300U);
  EXPECT_EQ(s.weight.var2_w(), 2U);
  EXPECT_EQ(s.weight.var3_w(), 1U);
  EXPECT_EQ(s.data_src, 0x2U);
  EXPECT_EQ(s.transaction, pabi::transaction::sync);
  EXPECT_EQ(s.regs_intr.value(0), 0xc0U);
  EXPECT_EQ(s.regs_intr.value(1), 0xc1U);
  EXPECT_EQ(s.phys_addr, 0x7000'1000U);
  EXPECT_EQ(s.cgroup, 0x5aU);
  EXPECT_EQ(s.data_page_size, 4096U);
  EXPECT_EQ(s.code_page_size, 2U << 20);
  ASSERT_EQ(s.aux.size(), 8U);
  EXPECT_EQ(static_cast<std::uint8_t>(s.aux[0]), 0xef);
}

TEST(SampleAllFields, DecodeInKernelOrder) {
  auto b = every_field_sample();
  auto view = b.view();
  auto config = every_field_config();
  check_every_field(decode_ok(view, config));
  // sample_id_all does not add a trailer to samples: the identity fields are in the sample.
  expect_exact_length(view, config);
  EXPECT_EQ(perfscope::record_identifier(view), 1001U);
}

TEST(SampleAllFields, EveryPrefixIsRejectedWithoutReadingPastIt) {
  auto b = every_field_sample();
  auto full = b.view();
  auto config = every_field_config();
  SampleRecord sample;
  for (std::size_t size = 8; size < full.header.size; size += 8) {
    ExactCopy cut(full, size);
    DecodeError error;
    EXPECT_FALSE(perfscope::decode_sample(cut.view(), config, sample, error)) << size;
    EXPECT_LE(error.offset, size);
  }
}

TEST(SampleAllFields, CorruptingAnyWordNeverReadsOutside) {
  // Every word of the record set to values that turn lengths into garbage: decoding may succeed
  // or fail, but must stay inside the record (ASan checks) and report an offset inside it.
  auto b = every_field_sample();
  auto full = b.view();
  auto config = every_field_config();
  const std::array<std::uint64_t, 6> poison{0,
                                            1,
                                            0xffffffffffffffffULL,
                                            0x8000000000000000ULL,
                                            0x00000000ffffffffULL,
                                            0x2000000000000001ULL};
  for (std::size_t word = 1; word < full.header.size / 8; ++word) {
    for (auto value : poison) {
      ExactCopy copy(full, full.header.size);
      std::memcpy(const_cast<std::byte*>(copy.view().bytes.data()) + word * 8, &value, 8);
      Record record;
      DecodeError error;
      if (!perfscope::decode_record(copy.view(), config, record, error)) {
        EXPECT_LE(error.offset, full.header.size);
        continue;
      }
      const auto& s = std::get<SampleRecord>(record);
      auto inside = [&](const void* data, std::size_t bytes) {
        auto* begin = reinterpret_cast<const std::byte*>(data);
        auto* record_begin = copy.view().bytes.data();
        EXPECT_TRUE(bytes == 0 ||
                    (begin >= record_begin && begin + bytes <= record_begin + full.header.size))
            << "word " << word;
      };
      inside(s.callchain.data(), s.callchain.size_bytes());
      inside(s.raw.data(), s.raw.size_bytes());
      inside(s.branch_stack.entries.data(), s.branch_stack.entries.size_bytes());
      inside(s.branch_stack.counters.data(), s.branch_stack.counters.size_bytes());
      inside(s.regs_user.values.data(), s.regs_user.values.size_bytes());
      inside(s.stack_user.data(), s.stack_user.size_bytes());
      inside(s.regs_intr.values.data(), s.regs_intr.values.size_bytes());
      inside(s.aux.data(), s.aux.size_bytes());
      inside(s.read.words.data(), s.read.words.size_bytes());
    }
  }
}

TEST(SampleReuse, ASmallerSampleTypeLeavesNoFieldOfTheLastRecord) {
  auto rich = every_field_sample();
  Record record;
  DecodeError error;
  ASSERT_TRUE(perfscope::decode_record(rich.view(), every_field_config(), record, error));
  RecordBuilder small(RecordType::sample);
  small.u64(0x401000).u64(77);
  auto config = sample_config(sf::ip | sf::period);
  ASSERT_TRUE(perfscope::decode_record(small.view(), config, record, error));
  const auto& s = std::get<SampleRecord>(record);
  EXPECT_EQ(s.fields, sf::ip | sf::period);
  EXPECT_EQ(s.ip, 0x401000U);
  EXPECT_EQ(s.period, 77U);
  EXPECT_EQ(s.identifier, 0U);
  EXPECT_EQ(s.id, 0U);
  EXPECT_EQ(s.time, 0U);
  EXPECT_EQ(s.pid, 0U);
  EXPECT_TRUE(s.read.words.empty());
  EXPECT_TRUE(s.callchain.empty());
  EXPECT_TRUE(s.raw.empty());
  EXPECT_TRUE(s.branch_stack.entries.empty());
  EXPECT_FALSE(s.branch_stack.has_hw_index);
  EXPECT_TRUE(s.regs_user.values.empty());
  EXPECT_TRUE(s.stack_user.empty());
  EXPECT_EQ(s.stack_user_dyn_size, 0U);
  EXPECT_EQ(s.weight.full, 0U);
  EXPECT_EQ(s.data_src, 0U);
  EXPECT_TRUE(s.regs_intr.values.empty());
  EXPECT_EQ(s.phys_addr, 0U);
  EXPECT_EQ(s.code_page_size, 0U);
  EXPECT_TRUE(s.aux.empty());
}

TEST(SampleReuse, TheSameSampleTypeOverwritesEveryOptionalPart) {
  // Second sample of the same event: empty branch stack, no user stack, no raw data, no regs.
  auto config = sample_config(sf::raw | sf::branch_stack | sf::regs_user | sf::stack_user);
  config.branch_sample_type = bs::any | bs::hw_index | bs::counters;
  config.sample_regs_user = 0b11;
  Record record;
  DecodeError error;
  RecordBuilder first(RecordType::sample);
  first.u32(4).u32(0xabcd).u64(2).u64(9);
  add_branch_entries(first);
  first.u64(1).u64(2).u64(2).u64(10).u64(11).u64(8).u64(0x55).u64(8);
  ASSERT_TRUE(perfscope::decode_record(first.view(), config, record, error)) << error.what;
  EXPECT_EQ(std::get<SampleRecord>(record).stack_user_dyn_size, 8U);
  RecordBuilder second(RecordType::sample);
  second.u32(4).u32(0).u64(0).u64(4).u64(0).u64(0);  // raw, nr 0 + hw_idx, abi none, stack 0
  ASSERT_TRUE(perfscope::decode_record(second.view(), config, record, error)) << error.what;
  const auto& s = std::get<SampleRecord>(record);
  EXPECT_TRUE(s.branch_stack.entries.empty());
  EXPECT_TRUE(s.branch_stack.counters.empty());
  EXPECT_EQ(s.branch_stack.hw_index, 4U);
  EXPECT_EQ(s.regs_user.abi, 0U);
  EXPECT_TRUE(s.regs_user.values.empty());
  EXPECT_TRUE(s.stack_user.empty());
  EXPECT_EQ(s.stack_user_dyn_size, 0U);
  // A sample that fails half-way leaves nothing of the previous one in the fields it reached.
  RecordBuilder broken(RecordType::sample);
  broken.u32(4).u32(0).u64(1000);
  EXPECT_FALSE(perfscope::decode_record(broken.view(), config, record, error));
  EXPECT_TRUE(std::get<SampleRecord>(record).branch_stack.entries.empty());
  EXPECT_TRUE(std::get<SampleRecord>(record).stack_user.empty());
}

// --- non-sample records ------------------------------------------------------------------------

// The sample_id trailer for TID|TIME|ID|STREAM_ID|CPU|IDENTIFIER, in the kernel's order.
constexpr std::uint64_t trailer_fields =
    sf::tid | sf::time | sf::id | sf::stream_id | sf::cpu | sf::identifier;

ParseConfig trailer_config(bool sample_id_all) {
  ParseConfig config;
  config.sample_type = trailer_fields | sf::ip | sf::period;
  config.sample_id_all = sample_id_all;
  return config;
}

void append_trailer(RecordBuilder& b) {
  b.u32_pair(4321, 4322);  // pid, tid
  b.u64(555000);           // time
  b.u64(66);               // id
  b.u64(67);               // stream_id
  b.u32_pair(1, 0);        // cpu, reserved
  b.u64(66);               // identifier
}

void check_trailer(const perfscope::SampleId& id) {
  EXPECT_EQ(id.fields, trailer_fields);
  EXPECT_EQ(id.pid, 4321U);
  EXPECT_EQ(id.tid, 4322U);
  EXPECT_EQ(id.time, 555000U);
  EXPECT_EQ(id.id, 66U);
  EXPECT_EQ(id.stream_id, 67U);
  EXPECT_EQ(id.cpu, 1U);
}

// Records that end in a NUL-padded string: a copy cut short by a word is indistinguishable from
// a record with a shorter string (and the trailer then read from the new end), so only records
// of fixed layout can be checked for rejecting every shorter prefix.
enum class Layout { fixed, ends_in_string };

// Builds a record twice (without and with the trailer), decodes both, hands each to `check`.
template <class Typed, class Build, class Check>
void for_both_layouts(RecordType type, std::uint16_t misc_bits, Build build, Check check,
                      Layout layout = Layout::fixed) {
  for (bool with_trailer : {false, true}) {
    SCOPED_TRACE(with_trailer ? "with sample_id_all" : "without sample_id_all");
    RecordBuilder b(type, misc_bits);
    build(b);
    if (with_trailer) append_trailer(b);
    auto view = b.view();
    auto config = trailer_config(with_trailer);
    Record record;
    DecodeError error;
    ASSERT_TRUE(perfscope::decode_record(view, config, record, error))
        << error.what << " at offset " << error.offset;
    ASSERT_TRUE(std::holds_alternative<Typed>(record));
    const auto& typed = std::get<Typed>(record);
    check(typed);
    if (with_trailer) {
      check_trailer(typed.sample_id);
      perfscope::SampleId id;
      ASSERT_TRUE(perfscope::decode_sample_id(view, config, id));
      check_trailer(id);
      EXPECT_EQ(perfscope::record_identifier(view), 66U);
    } else {
      EXPECT_EQ(typed.sample_id.fields, 0U);
      perfscope::SampleId id;
      EXPECT_FALSE(perfscope::decode_sample_id(view, config, id));
    }
    if (layout == Layout::fixed) expect_exact_length(view, config);
  }
}

TEST(NonSampleRecord, Mmap) {
  for_both_layouts<perfscope::MmapRecord>(
      RecordType::mmap, misc::user,
      [](RecordBuilder& b) {
        b.u32_pair(100, 101).u64(0x400000).u64(0x2000).u64(0x1000).string("/usr/bin/true");
      },
      [](const perfscope::MmapRecord& r) {
        EXPECT_EQ(r.pid, 100U);
        EXPECT_EQ(r.tid, 101U);
        EXPECT_EQ(r.addr, 0x400000U);
        EXPECT_EQ(r.len, 0x2000U);
        EXPECT_EQ(r.pgoff, 0x1000U);
        EXPECT_EQ(r.filename, "/usr/bin/true");
      },
      Layout::ends_in_string);
}

TEST(NonSampleRecord, Mmap2WithDeviceAndInode) {
  for_both_layouts<perfscope::Mmap2Record>(
      RecordType::mmap2, misc::user | misc::mmap_data,
      [](RecordBuilder& b) {
        b.u32_pair(7, 8).u64(0x7f0000000000).u64(0x21000).u64(0);
        b.u32_pair(8, 1).u64(123456).u64(3);  // maj, min, ino, ino_generation
        b.u32_pair(5, 2);                     // prot (r-x), flags (MAP_PRIVATE)
        b.string("/lib/x86_64-linux-gnu/libc.so.6");
      },
      [](const perfscope::Mmap2Record& r) {
        EXPECT_EQ(r.pid, 7U);
        EXPECT_EQ(r.addr, 0x7f0000000000U);
        EXPECT_EQ(r.len, 0x21000U);
        EXPECT_FALSE(r.has_build_id);
        EXPECT_EQ(r.maj, 8U);
        EXPECT_EQ(r.min, 1U);
        EXPECT_EQ(r.ino, 123456U);
        EXPECT_EQ(r.ino_generation, 3U);
        EXPECT_EQ(r.prot, 5U);
        EXPECT_EQ(r.flags, 2U);
        EXPECT_EQ(r.filename, "/lib/x86_64-linux-gnu/libc.so.6");
      },
      Layout::ends_in_string);
}

TEST(NonSampleRecord, Mmap2WithBuildId) {
  const std::array<std::uint8_t, 20> build_id{0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
                                              0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d,
                                              0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23};
  for_both_layouts<perfscope::Mmap2Record>(
      RecordType::mmap2, misc::user | misc::mmap_build_id,
      [&](RecordBuilder& b) {
        b.u32_pair(7, 8).u64(0x400000).u64(0x1000).u64(0);
        b.u8(20).u8(0).u16(0).raw(build_id.data(), build_id.size());  // 24 bytes
        b.u32_pair(5, 2).string("/usr/bin/app");
      },
      [&](const perfscope::Mmap2Record& r) {
        EXPECT_TRUE(r.has_build_id);
        ASSERT_EQ(r.build_id.size(), 20U);
        EXPECT_EQ(std::memcmp(r.build_id.data(), build_id.data(), 20), 0);
        EXPECT_EQ(r.maj, 0U);
        EXPECT_EQ(r.prot, 5U);
        EXPECT_EQ(r.flags, 2U);
        EXPECT_EQ(r.filename, "/usr/bin/app");
      },
      Layout::ends_in_string);
}

TEST(NonSampleRecord, Mmap2BuildIdSizeIsClampedTo20) {
  RecordBuilder b(RecordType::mmap2, misc::mmap_build_id);
  const std::array<std::uint8_t, 20> id{};
  b.u32_pair(1, 1).u64(0).u64(0).u64(0).u8(0xff).u8(0).u16(0).raw(id.data(), id.size());
  b.u32_pair(0, 0).string("x");
  Record record;
  DecodeError error;
  ASSERT_TRUE(perfscope::decode_record(b.view(), trailer_config(false), record, error));
  EXPECT_EQ(std::get<perfscope::Mmap2Record>(record).build_id.size(), 20U);
}

TEST(NonSampleRecord, Lost) {
  for_both_layouts<perfscope::LostRecord>(
      RecordType::lost, 0, [](RecordBuilder& b) { b.u64(66).u64(1234); },
      [](const perfscope::LostRecord& r) {
        EXPECT_EQ(r.id, 66U);
        EXPECT_EQ(r.lost, 1234U);
      });
}

TEST(NonSampleRecord, CommWithExec) {
  for_both_layouts<perfscope::CommRecord>(
      RecordType::comm, misc::comm_exec,
      [](RecordBuilder& b) { b.u32_pair(300, 300).string("worker-thread"); },
      [](const perfscope::CommRecord& r) {
        EXPECT_EQ(r.pid, 300U);
        EXPECT_EQ(r.comm, "worker-thread");
        EXPECT_TRUE(r.exec);
      },
      Layout::ends_in_string);
}

TEST(NonSampleRecord, CommWithoutExecAndExactlyEightBytes) {
  // "1234567" plus its NUL fills one word: no padding word follows.
  for_both_layouts<perfscope::CommRecord>(
      RecordType::comm, 0, [](RecordBuilder& b) { b.u32_pair(1, 2).string("1234567"); },
      [](const perfscope::CommRecord& r) {
        EXPECT_EQ(r.comm, "1234567");
        EXPECT_FALSE(r.exec);
      },
      Layout::ends_in_string);
}

TEST(NonSampleRecord, ForkAndExit) {
  for (auto type : {RecordType::fork, RecordType::exit}) {
    SCOPED_TRACE(perfscope::record_type_name(static_cast<std::uint32_t>(type)));
    for_both_layouts<perfscope::TaskRecord>(
        type, 0, [](RecordBuilder& b) { b.u32_pair(20, 10).u32_pair(21, 11).u64(999); },
        [](const perfscope::TaskRecord& r) {
          EXPECT_EQ(r.pid, 20U);
          EXPECT_EQ(r.ppid, 10U);
          EXPECT_EQ(r.tid, 21U);
          EXPECT_EQ(r.ptid, 11U);
          EXPECT_EQ(r.time, 999U);
        });
  }
}

TEST(NonSampleRecord, ThrottleAndUnthrottle) {
  for (auto type : {RecordType::throttle, RecordType::unthrottle}) {
    for_both_layouts<perfscope::ThrottleRecord>(
        type, 0, [](RecordBuilder& b) { b.u64(5000).u64(66).u64(67); },
        [](const perfscope::ThrottleRecord& r) {
          EXPECT_EQ(r.time, 5000U);
          EXPECT_EQ(r.id, 66U);
          EXPECT_EQ(r.stream_id, 67U);
        });
  }
}

TEST(NonSampleRecord, ReadWithGroupFormat) {
  for (bool with_trailer : {false, true}) {
    RecordBuilder b(RecordType::read);
    b.u32_pair(9, 10).u64(2).u64(70).u64(60).u64(1).u64(2);  // nr, enabled, running, values
    if (with_trailer) append_trailer(b);
    auto config = trailer_config(with_trailer);
    config.read_format = rf::group | rf::total_time_enabled | rf::total_time_running;
    auto view = b.view();
    Record record;
    DecodeError error;
    ASSERT_TRUE(perfscope::decode_record(view, config, record, error)) << error.what;
    const auto& r = std::get<perfscope::ReadRecord>(record);
    EXPECT_EQ(r.pid, 9U);
    EXPECT_EQ(r.tid, 10U);
    std::array<perfscope::Reading, 2> out{};
    ASSERT_EQ(r.values.decode(out), 2U);
    EXPECT_EQ(out[1].value, 2U);
    EXPECT_EQ(out[1].enabled, 70U);
    if (with_trailer) check_trailer(r.sample_id);
    expect_exact_length(view, config);
  }
}

TEST(NonSampleRecord, Aux) {
  for_both_layouts<perfscope::AuxRecord>(
      RecordType::aux, 0,
      [](RecordBuilder& b) { b.u64(0x10000).u64(0x800).u64(pabi::aux_flag::truncated); },
      [](const perfscope::AuxRecord& r) {
        EXPECT_EQ(r.aux_offset, 0x10000U);
        EXPECT_EQ(r.aux_size, 0x800U);
        EXPECT_EQ(r.flags, pabi::aux_flag::truncated);
      });
}

TEST(NonSampleRecord, ItraceStart) {
  for_both_layouts<perfscope::ItraceStartRecord>(
      RecordType::itrace_start, 0, [](RecordBuilder& b) { b.u32_pair(40, 41); },
      [](const perfscope::ItraceStartRecord& r) {
        EXPECT_EQ(r.pid, 40U);
        EXPECT_EQ(r.tid, 41U);
      });
}

TEST(NonSampleRecord, LostSamples) {
  for_both_layouts<perfscope::LostSamplesRecord>(
      RecordType::lost_samples, 0, [](RecordBuilder& b) { b.u64(17); },
      [](const perfscope::LostSamplesRecord& r) { EXPECT_EQ(r.lost, 17U); });
}

TEST(NonSampleRecord, SwitchOutPreempted) {
  for_both_layouts<perfscope::SwitchRecord>(
      RecordType::switch_, misc::switch_out | misc::switch_out_preempt, [](RecordBuilder&) {},
      [](const perfscope::SwitchRecord& r) {
        EXPECT_TRUE(r.out);
        EXPECT_TRUE(r.preempted);
        EXPECT_FALSE(r.cpu_wide);
      });
}

TEST(NonSampleRecord, SwitchIn) {
  for_both_layouts<perfscope::SwitchRecord>(
      RecordType::switch_, 0, [](RecordBuilder&) {},
      [](const perfscope::SwitchRecord& r) {
        EXPECT_FALSE(r.out);
        EXPECT_FALSE(r.preempted);
      });
}

TEST(NonSampleRecord, SwitchCpuWide) {
  for_both_layouts<perfscope::SwitchRecord>(
      RecordType::switch_cpu_wide, misc::switch_out, [](RecordBuilder& b) { b.u32_pair(50, 51); },
      [](const perfscope::SwitchRecord& r) {
        EXPECT_TRUE(r.cpu_wide);
        EXPECT_TRUE(r.out);
        EXPECT_EQ(r.next_prev_pid, 50U);
        EXPECT_EQ(r.next_prev_tid, 51U);
      });
}

TEST(NonSampleRecord, Namespaces) {
  for_both_layouts<perfscope::NamespacesRecord>(
      RecordType::namespaces, 0,
      [](RecordBuilder& b) {
        b.u32_pair(60, 61).u64(pabi::namespace_count);
        for (std::uint32_t i = 0; i < pabi::namespace_count; ++i) b.u64(4 + i).u64(0xf000 + i);
      },
      [](const perfscope::NamespacesRecord& r) {
        EXPECT_EQ(r.pid, 60U);
        ASSERT_EQ(r.count(), pabi::namespace_count);
        auto pid_ns = static_cast<std::size_t>(pabi::NamespaceIndex::pid);
        EXPECT_EQ(r.dev_inode_pairs[2 * pid_ns], 4 + pid_ns);
        EXPECT_EQ(r.dev_inode_pairs[2 * pid_ns + 1], 0xf000 + pid_ns);
      });
}

TEST(NonSampleRecord, Ksymbol) {
  for_both_layouts<perfscope::KsymbolRecord>(
      RecordType::ksymbol, 0,
      [](RecordBuilder& b) {
        b.u64(0xffffffffc0001000ULL).u32(0x200);
        b.u16(static_cast<std::uint16_t>(pabi::KsymbolType::bpf))
            .u16(pabi::ksymbol_flag_unregister);
        b.string("bpf_prog_6deef7357e7b4530_sd_fw_ingress");
      },
      [](const perfscope::KsymbolRecord& r) {
        EXPECT_EQ(r.addr, 0xffffffffc0001000ULL);
        EXPECT_EQ(r.len, 0x200U);
        EXPECT_EQ(r.ksym_type, static_cast<std::uint16_t>(pabi::KsymbolType::bpf));
        EXPECT_EQ(r.flags, pabi::ksymbol_flag_unregister);
        EXPECT_EQ(r.name, "bpf_prog_6deef7357e7b4530_sd_fw_ingress");
      },
      Layout::ends_in_string);
}

TEST(NonSampleRecord, BpfEvent) {
  const std::array<std::uint8_t, 8> tag{0x6d, 0xee, 0xf7, 0x35, 0x7e, 0x7b, 0x45, 0x30};
  for_both_layouts<perfscope::BpfEventRecord>(
      RecordType::bpf_event, 0,
      [&](RecordBuilder& b) {
        b.u16(static_cast<std::uint16_t>(pabi::BpfEventType::prog_load)).u16(0).u32(77);
        b.raw(tag.data(), tag.size());
      },
      [&](const perfscope::BpfEventRecord& r) {
        EXPECT_EQ(r.event_type, static_cast<std::uint16_t>(pabi::BpfEventType::prog_load));
        EXPECT_EQ(r.flags, 0U);
        EXPECT_EQ(r.id, 77U);
        ASSERT_EQ(r.tag.size(), 8U);
        EXPECT_EQ(std::memcmp(r.tag.data(), tag.data(), 8), 0);
      });
}

TEST(NonSampleRecord, Cgroup) {
  for_both_layouts<perfscope::CgroupRecord>(
      RecordType::cgroup, 0,
      [](RecordBuilder& b) { b.u64(0x1234).string("/system.slice/sshd.service"); },
      [](const perfscope::CgroupRecord& r) {
        EXPECT_EQ(r.id, 0x1234U);
        EXPECT_EQ(r.path, "/system.slice/sshd.service");
      },
      Layout::ends_in_string);
}

TEST(NonSampleRecord, TextPoke) {
  const std::array<std::uint8_t, 5> old_bytes{0x0f, 0x1f, 0x44, 0x00, 0x00};
  const std::array<std::uint8_t, 5> new_bytes{0xe9, 0x10, 0x20, 0x30, 0x40};
  for_both_layouts<perfscope::TextPokeRecord>(
      RecordType::text_poke, 0,
      [&](RecordBuilder& b) {
        b.u64(0xffffffff81001234ULL).u16(5).u16(5);
        b.raw(old_bytes.data(), 5).raw(new_bytes.data(), 5).pad();
      },
      [&](const perfscope::TextPokeRecord& r) {
        EXPECT_EQ(r.addr, 0xffffffff81001234ULL);
        ASSERT_EQ(r.old_bytes.size(), 5U);
        ASSERT_EQ(r.new_bytes.size(), 5U);
        EXPECT_EQ(std::memcmp(r.old_bytes.data(), old_bytes.data(), 5), 0);
        EXPECT_EQ(std::memcmp(r.new_bytes.data(), new_bytes.data(), 5), 0);
      });
}

TEST(NonSampleRecord, AuxOutputHwId) {
  for_both_layouts<perfscope::AuxOutputHwIdRecord>(
      RecordType::aux_output_hw_id, 0, [](RecordBuilder& b) { b.u64(0x33); },
      [](const perfscope::AuxOutputHwIdRecord& r) { EXPECT_EQ(r.hw_id, 0x33U); });
}

TEST(NonSampleRecord, CallchainDeferred) {
  for_both_layouts<perfscope::DeferredCallchainRecord>(
      RecordType::callchain_deferred, 0,
      [](RecordBuilder& b) {
        b.u64(0xc00c1e).u64(3).u64(pabi::callchain_context::user).u64(0x401000).u64(0x402000);
      },
      [](const perfscope::DeferredCallchainRecord& r) {
        EXPECT_EQ(r.cookie, 0xc00c1eU);
        ASSERT_EQ(r.ips.size(), 3U);
        EXPECT_EQ(r.ips[0], pabi::callchain_context::user);
        EXPECT_EQ(r.ips[2], 0x402000U);
      });
}

TEST(SampleIdTrailer, IsReadFromTheEndPastPaddingAndSpareBytes) {
  // A COMM whose string area is longer than the string (the kernel pads to 8; a record may carry
  // more). The trailer is found from header.size, not from where the string ends.
  RecordBuilder b(RecordType::comm);
  b.u32_pair(1, 2).string("ab").u64(0).u64(0);  // two spare zero words after the string
  append_trailer(b);
  auto config = trailer_config(true);
  Record record;
  DecodeError error;
  ASSERT_TRUE(perfscope::decode_record(b.view(), config, record, error)) << error.what;
  const auto& r = std::get<perfscope::CommRecord>(record);
  EXPECT_EQ(r.comm, "ab");
  check_trailer(r.sample_id);
}

TEST(SampleIdTrailer, OnlyTheSelectedFields) {
  // sample_type TIME|IDENTIFIER: a two-word trailer (time, identifier).
  RecordBuilder b(RecordType::lost);
  b.u64(5).u64(6).u64(777).u64(0x1d);
  ParseConfig config;
  config.sample_type = sf::time | sf::identifier | sf::ip | sf::callchain;
  config.sample_id_all = true;
  EXPECT_EQ(config.sample_id_size(), 16U);
  Record record;
  DecodeError error;
  ASSERT_TRUE(perfscope::decode_record(b.view(), config, record, error));
  const auto& r = std::get<perfscope::LostRecord>(record);
  EXPECT_EQ(r.lost, 6U);
  EXPECT_EQ(r.sample_id.time, 777U);
  EXPECT_EQ(r.sample_id.id, 0x1dU);
  EXPECT_TRUE(r.sample_id.has(sf::identifier));
  EXPECT_FALSE(r.sample_id.has(sf::tid));
}

TEST(SampleIdTrailer, SizeFollowsTheAttr) {
  pabi::PerfEventAttr attr{};
  attr.sample_type = sf::tid | sf::time | sf::cpu | sf::callchain;
  attr.flags = pabi::attr_flag::sample_id_all;
  attr.read_format = rf::id;
  attr.branch_sample_type = bs::any;
  attr.sample_regs_user = 0xf;
  attr.sample_regs_intr = 0x3;
  auto config = ParseConfig::from_attr(attr);
  EXPECT_TRUE(config.sample_id_all);
  EXPECT_EQ(config.sample_id_size(), 24U);
  EXPECT_EQ(config.read_format, rf::id);
  EXPECT_EQ(config.branch_sample_type, bs::any);
  EXPECT_EQ(config.sample_regs_user, 0xfU);
  EXPECT_EQ(config.sample_regs_intr, 0x3U);
  attr.flags = 0;
  EXPECT_EQ(ParseConfig::from_attr(attr).sample_id_size(), 0U);
}

TEST(SampleIdTrailer, LargerThanTheRecordIsAnError) {
  RecordBuilder b(RecordType::lost_samples);
  b.u64(3);  // 16 bytes in all; the trailer alone needs 48
  Record record;
  DecodeError error;
  EXPECT_FALSE(perfscope::decode_record(b.view(), trailer_config(true), record, error));
  EXPECT_NE(std::string_view(error.what), "");
  perfscope::SampleId id;
  EXPECT_FALSE(perfscope::decode_sample_id(b.view(), trailer_config(true), id));
}

// --- unknown types, identifiers, names ---------------------------------------------------------

TEST(UnknownRecord, NewerKernelTypeIsKeptWithItsPayload) {
  for (std::uint32_t type : {pabi::kernel_record_type_max, 63U, 68U, 0xffffU}) {
    RecordBuilder b(type, 0x1234);
    b.u64(0x0102030405060708ULL).u64(9);
    auto view = b.view();
    Record record;
    DecodeError error;
    ASSERT_TRUE(perfscope::decode_record(view, trailer_config(true), record, error));
    ASSERT_TRUE(std::holds_alternative<perfscope::UnknownRecord>(record));
    const auto& unknown = std::get<perfscope::UnknownRecord>(record);
    EXPECT_EQ(unknown.type, type);
    ASSERT_EQ(unknown.payload.size(), 16U);
    EXPECT_EQ(unknown.payload.data(), view.bytes.data() + 8);  // zero-copy
    EXPECT_EQ(static_cast<std::uint8_t>(unknown.payload[0]), 0x08);
    EXPECT_EQ(perfscope::record_type_name(type), "");
  }
}

TEST(UnknownRecord, HeaderOnly) {
  RecordBuilder b(99U, 0);
  Record record;
  DecodeError error;
  ASSERT_TRUE(perfscope::decode_record(b.view(), ParseConfig{}, record, error));
  EXPECT_TRUE(std::get<perfscope::UnknownRecord>(record).payload.empty());
}

TEST(RecordIdentifier, FirstWordOfSamplesLastWordOfOthers) {
  RecordBuilder sample(RecordType::sample);
  sample.u64(0x51).u64(0x400000).u64(0x52);
  EXPECT_EQ(perfscope::record_identifier(sample.view()), 0x51U);
  RecordBuilder mmap(RecordType::mmap);
  mmap.u32_pair(1, 1).u64(0).u64(0).u64(0).string("f").u64(0x61);
  EXPECT_EQ(perfscope::record_identifier(mmap.view()), 0x61U);
  RecordBuilder header_only(RecordType::switch_);
  EXPECT_FALSE(perfscope::record_identifier(header_only.view()).has_value());
  // header.size larger than the bytes: no guess.
  RecordBuilder lying(RecordType::lost);
  lying.u64(1);
  EXPECT_FALSE(perfscope::record_identifier(lying.view(24)).has_value());
}

TEST(RecordTypeName, EveryKernelType) {
  EXPECT_EQ(perfscope::record_type_name(1), "MMAP");
  EXPECT_EQ(perfscope::record_type_name(9), "SAMPLE");
  EXPECT_EQ(perfscope::record_type_name(10), "MMAP2");
  EXPECT_EQ(perfscope::record_type_name(14), "SWITCH");
  EXPECT_EQ(perfscope::record_type_name(21), "AUX_OUTPUT_HW_ID");
  EXPECT_EQ(perfscope::record_type_name(22), "CALLCHAIN_DEFERRED");
  for (std::uint32_t type = 1; type < pabi::kernel_record_type_max; ++type) {
    EXPECT_NE(perfscope::record_type_name(type), "") << type;
  }
  EXPECT_EQ(perfscope::record_type_name(0), "");
}

// --- inconsistent records ----------------------------------------------------------------------

DecodeError expect_rejected(const RecordView& view, const ParseConfig& config) {
  Record record;
  DecodeError error;
  EXPECT_FALSE(perfscope::decode_record(view, config, record, error));
  EXPECT_NE(std::string_view(error.what), "");
  EXPECT_LE(error.offset, view.bytes.size());
  return error;
}

TEST(Inconsistent, HeaderSizeSmallerThanTheHeader) {
  RecordBuilder b(RecordType::sample);
  b.u64(1);
  for (std::size_t size : {0, 4, 7}) {
    auto error = expect_rejected(b.view(size), sample_config(sf::ip));
    EXPECT_EQ(error.offset, 0U);
  }
}

TEST(Inconsistent, HeaderSizeLargerThanTheBytes) {
  RecordBuilder b(RecordType::lost);
  b.u64(1).u64(2);
  expect_rejected(b.view(64), ParseConfig{});
}

TEST(Inconsistent, FewerBytesThanAHeader) {
  std::array<std::uint64_t, 1> word{};
  RecordView view;
  view.header = {9, 0, 8};
  view.bytes = {reinterpret_cast<const std::byte*>(word.data()), 4};
  expect_rejected(view, ParseConfig{});
}

TEST(Inconsistent, MisalignedView) {
  std::array<std::uint64_t, 4> words{};
  pabi::RecordHeader header{static_cast<std::uint32_t>(RecordType::sample), 0, 16};
  auto* base = reinterpret_cast<std::byte*>(words.data()) + 4;
  std::memcpy(base, &header, sizeof header);
  RecordView view;
  view.header = header;
  view.bytes = {base, 16};
  auto error = expect_rejected(view, sample_config(sf::ip));
  EXPECT_NE(std::string_view(error.what).find("aligned"), std::string_view::npos);
}

TEST(Inconsistent, CallchainCountFarPastTheEnd) {
  for (std::uint64_t nr : {3ULL, 1ULL << 40, 0x2000000000000000ULL, ~0ULL}) {
    RecordBuilder b(RecordType::sample);
    b.u64(0x400000).u64(nr).u64(1).u64(2);
    auto error = expect_rejected(b.view(), sample_config(sf::ip | sf::callchain));
    EXPECT_EQ(error.offset, 24U) << "stops after reading nr";
  }
}

TEST(Inconsistent, RawSizePastTheEnd) {
  for (std::uint32_t size : {12U, 0xffffU, 0xffffffffU}) {
    RecordBuilder b(RecordType::sample);
    b.u32(size).u32(0);
    expect_rejected(b.view(), sample_config(sf::raw));
  }
}

TEST(Inconsistent, BranchStackCountPastTheEnd) {
  for (std::uint64_t nr : {2ULL, 0x0aaaaaaaaaaaaaabULL, ~0ULL}) {
    RecordBuilder b(RecordType::sample);
    b.u64(nr).u64(0).u64(0).u64(0);
    auto config = sample_config(sf::branch_stack);
    config.branch_sample_type = bs::any | bs::hw_index | bs::counters;
    expect_rejected(b.view(), config);
  }
  // Entries fit but the counters after them do not.
  RecordBuilder b(RecordType::sample);
  b.u64(1).u64(0x1).u64(0x2).u64(0);
  auto config = sample_config(sf::branch_stack);
  config.branch_sample_type = bs::any | bs::counters;
  expect_rejected(b.view(), config);
}

TEST(Inconsistent, ReadGroupCountPastTheEnd) {
  for (std::uint64_t nr : {2ULL, 1ULL << 62, ~0ULL}) {
    RecordBuilder b(RecordType::sample);
    b.u64(nr).u64(1).u64(2);
    auto config = sample_config(sf::read);
    config.read_format = rf::group | rf::id | rf::lost;
    expect_rejected(b.view(), config);
  }
}

TEST(Inconsistent, RegistersPastTheEnd) {
  RecordBuilder b(RecordType::sample);
  b.u64(2).u64(1).u64(2);
  auto config = sample_config(sf::regs_user);
  config.sample_regs_user = ~0ULL;  // 64 registers announced, 2 present
  expect_rejected(b.view(), config);
}

TEST(Inconsistent, StackUserAndAuxSizesPastTheEnd) {
  for (std::uint64_t size : {24ULL, 1ULL << 63, ~0ULL}) {
    RecordBuilder stack(RecordType::sample);
    stack.u64(size).u64(0).u64(0);
    expect_rejected(stack.view(), sample_config(sf::stack_user));
    RecordBuilder aux(RecordType::sample);
    aux.u64(size).u64(0);
    expect_rejected(aux.view(), sample_config(sf::aux));
  }
  // A stack that fits but no room left for dyn_size.
  RecordBuilder stack(RecordType::sample);
  stack.u64(16).u64(0).u64(0);
  expect_rejected(stack.view(), sample_config(sf::stack_user));
}

TEST(Inconsistent, NamespacesCountThatOverflowsWhenDoubled) {
  for (std::uint64_t count : {8ULL, 0x8000000000000000ULL, ~0ULL}) {
    RecordBuilder b(RecordType::namespaces);
    b.u32_pair(1, 1).u64(count).u64(1).u64(2);
    expect_rejected(b.view(), ParseConfig{});
  }
}

TEST(Inconsistent, TextPokeLengthsPastTheEnd) {
  RecordBuilder b(RecordType::text_poke);
  b.u64(0).u16(0xffff).u16(1).u32(0);
  expect_rejected(b.view(), ParseConfig{});
}

TEST(Inconsistent, StringWithoutTerminatorStaysInsideTheRecord) {
  RecordBuilder b(RecordType::comm);
  b.u32_pair(1, 1).raw("abcdefgh", 8);  // no NUL anywhere
  append_trailer(b);
  Record record;
  DecodeError error;
  ExactCopy exact(b.view(), b.size());
  ASSERT_TRUE(perfscope::decode_record(exact.view(), trailer_config(true), record, error));
  const auto& r = std::get<perfscope::CommRecord>(record);
  EXPECT_EQ(r.comm, "abcdefgh");  // bounded by where the trailer begins
  check_trailer(r.sample_id);
}

TEST(Inconsistent, EveryRecordTypeTruncatedToEveryLength) {
  // Records of every type with the trailer, cut to every length, in exact-size copies so ASan
  // sees any read past the cut. Fixed layouts must be rejected; string-ending ones may decode
  // as a shorter string, but every view they give stays inside the cut.
  struct Case {
    RecordBuilder builder;
    Layout layout;
  };
  std::vector<Case> cases;
  auto add = [&](RecordType type, Layout layout, auto build) {
    RecordBuilder b(type, 0);
    build(b);
    append_trailer(b);
    cases.push_back({std::move(b), layout});
  };
  add(RecordType::mmap, Layout::ends_in_string,
      [](RecordBuilder& b) { b.u32_pair(1, 1).u64(1).u64(2).u64(3).string("/a/b"); });
  add(RecordType::mmap2, Layout::ends_in_string, [](RecordBuilder& b) {
    b.u32_pair(1, 1).u64(1).u64(2).u64(3).u32_pair(1, 2).u64(3).u64(4).u32_pair(5, 6).string("/x");
  });
  add(RecordType::comm, Layout::ends_in_string,
      [](RecordBuilder& b) { b.u32_pair(1, 1).string("comm"); });
  add(RecordType::ksymbol, Layout::ends_in_string,
      [](RecordBuilder& b) { b.u64(1).u64(2).string("sym"); });
  add(RecordType::cgroup, Layout::ends_in_string, [](RecordBuilder& b) { b.u64(1).string("/"); });
  add(RecordType::read, Layout::fixed, [](RecordBuilder& b) { b.u32_pair(1, 1).u64(5); });
  add(RecordType::namespaces, Layout::fixed,
      [](RecordBuilder& b) { b.u32_pair(1, 1).u64(1).u64(2).u64(3); });
  add(RecordType::bpf_event, Layout::fixed, [](RecordBuilder& b) { b.u64(1).u64(2); });
  add(RecordType::text_poke, Layout::fixed,
      [](RecordBuilder& b) { b.u64(1).u16(2).u16(2).u32(0); });
  add(RecordType::callchain_deferred, Layout::fixed,
      [](RecordBuilder& b) { b.u64(1).u64(2).u64(3).u64(4); });
  add(RecordType::switch_cpu_wide, Layout::fixed, [](RecordBuilder& b) { b.u32_pair(1, 2); });
  auto config = trailer_config(true);
  for (auto& [builder, layout] : cases) {
    auto view = builder.view();
    SCOPED_TRACE(perfscope::record_type_name(view.header.type));
    Record record;
    DecodeError error;
    ASSERT_TRUE(perfscope::decode_record(view, config, record, error)) << error.what;
    for (std::size_t size = 8; size < view.header.size; size += 8) {
      ExactCopy cut(view, size);
      bool decoded = perfscope::decode_record(cut.view(), config, record, error);
      if (layout == Layout::fixed) {
        EXPECT_FALSE(decoded) << size;
        continue;
      }
      if (!decoded) continue;
      auto* begin = reinterpret_cast<const char*>(cut.view().bytes.data());
      auto inside = [&](std::string_view text) {
        EXPECT_TRUE(text.empty() ||
                    (text.data() >= begin && text.data() + text.size() <= begin + size))
            << size;
      };
      std::visit(
          [&](const auto& typed) {
            using T = std::decay_t<decltype(typed)>;
            if constexpr (std::is_same_v<T, perfscope::MmapRecord> ||
                          std::is_same_v<T, perfscope::Mmap2Record>) {
              inside(typed.filename);
            } else if constexpr (std::is_same_v<T, perfscope::CommRecord>) {
              inside(typed.comm);
            } else if constexpr (std::is_same_v<T, perfscope::KsymbolRecord>) {
              inside(typed.name);
            } else if constexpr (std::is_same_v<T, perfscope::CgroupRecord>) {
              inside(typed.path);
            }
          },
          record);
    }
  }
}

}  // namespace
