// libFuzzer target for the record decoder. Input: a 49-byte parse config (sample_type,
// read_format, branch_sample_type, sample_regs_user, sample_regs_intr, and a second sample_type
// used for every other record, as little-endian u64, then a byte whose low bit is
// sample_id_all), followed by records as they sit in a ring buffer.
// Each record is copied into an 8-byte-aligned allocation of exactly header.size bytes (or
// what is left of the input), so a read past the record is a heap overflow ASan reports, and
// the copy is freed before the next record is decoded.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <variant>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"

namespace {

constexpr std::size_t config_bytes = 6 * sizeof(std::uint64_t) + 1;

std::uint64_t load_u64(const std::uint8_t* data) {
  std::uint64_t value = 0;
  std::memcpy(&value, data, sizeof value);
  return value;
}

// Touches every byte a view claims, so a view that points outside its record is caught.
std::uint64_t touch(std::span<const std::byte> bytes) {
  std::uint64_t sum = 0;
  for (std::byte b : bytes) sum += static_cast<std::uint8_t>(b);
  return sum;
}
std::uint64_t touch(std::span<const std::uint64_t> words) { return touch(std::as_bytes(words)); }
std::uint64_t touch(std::string_view text) { return touch(std::as_bytes(std::span(text))); }

std::uint64_t touch_record(const perfscope::Record& record) {
  return std::visit(
      [](const auto& r) -> std::uint64_t {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, perfscope::SampleRecord>) {
          std::array<perfscope::Reading, 4> readings{};
          return touch(r.read.words) + r.read.decode(readings) + r.read.member_count() +
                 touch(r.callchain) + touch(r.raw) + touch(std::as_bytes(r.branch_stack.entries)) +
                 touch(r.branch_stack.counters) + touch(r.regs_user.values) +
                 r.regs_user.value(3).value_or(0) + touch(r.stack_user) +
                 touch(r.stack_user_valid()) + touch(r.regs_intr.values) + touch(r.aux) +
                 perfscope::DataSource::decode(r.data_src).hops;
        } else if constexpr (std::is_same_v<T, perfscope::MmapRecord>) {
          return touch(r.filename);
        } else if constexpr (std::is_same_v<T, perfscope::Mmap2Record>) {
          return touch(r.filename) + touch(r.build_id);
        } else if constexpr (std::is_same_v<T, perfscope::CommRecord>) {
          return touch(r.comm);
        } else if constexpr (std::is_same_v<T, perfscope::ReadRecord>) {
          return touch(r.values.words);
        } else if constexpr (std::is_same_v<T, perfscope::NamespacesRecord>) {
          return touch(r.dev_inode_pairs) + r.count();
        } else if constexpr (std::is_same_v<T, perfscope::KsymbolRecord>) {
          return touch(r.name);
        } else if constexpr (std::is_same_v<T, perfscope::BpfEventRecord>) {
          return touch(r.tag);
        } else if constexpr (std::is_same_v<T, perfscope::CgroupRecord>) {
          return touch(r.path);
        } else if constexpr (std::is_same_v<T, perfscope::TextPokeRecord>) {
          return touch(r.old_bytes) + touch(r.new_bytes);
        } else if constexpr (std::is_same_v<T, perfscope::DeferredCallchainRecord>) {
          return touch(r.ips);
        } else if constexpr (std::is_same_v<T, perfscope::UnknownRecord>) {
          return touch(r.payload);
        } else {
          return 0;
        }
      },
      record);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < config_bytes) return 0;
  perfscope::ParseConfig config;
  config.sample_type = load_u64(data);
  config.read_format = load_u64(data + 8);
  config.branch_sample_type = load_u64(data + 16);
  config.sample_regs_user = load_u64(data + 24);
  config.sample_regs_intr = load_u64(data + 32);
  const std::uint64_t sample_types[2] = {config.sample_type, load_u64(data + 40)};
  config.sample_id_all = (data[48] & 1) != 0;
  data += config_bytes;
  size -= config_bytes;

  volatile std::uint64_t sink = 0;
  // One Record for the whole stream, as a consumer reuses it: a view left over from an earlier
  // record would point into that record's freed copy, which ASan reports when touched.
  perfscope::Record record;
  for (std::size_t index = 0; size >= sizeof(perfscope::abi::RecordHeader); ++index) {
    // Two sample_types in turn: the SampleRecord is reused across a change of layout.
    config.sample_type = sample_types[index % 2];
    perfscope::abi::RecordHeader header;
    std::memcpy(&header, data, sizeof header);
    // A header.size past the input is a truncated record: hand the decoder what there is.
    std::size_t available = header.size <= size ? header.size : size;
    if (available < sizeof header) available = sizeof header;
    available &= ~std::size_t{7};
    // A fresh allocation per record: a reused, larger one would hide overreads from ASan.
    auto storage = std::make_unique<std::uint64_t[]>(available / 8);
    std::memcpy(storage.get(), data, available);

    perfscope::RecordView view;
    view.header = header;
    view.bytes = {reinterpret_cast<const std::byte*>(storage.get()), available};
    perfscope::DecodeError error;
    if (perfscope::decode_record(view, config, record, error)) {
      sink = sink + touch_record(record);
    } else if (error.offset > available || error.what == nullptr) {
      __builtin_trap();  // an error must point inside the record and say what was wrong
    }
    perfscope::SampleId id;
    if (perfscope::decode_sample_id(view, config, id)) sink = sink + id.time;
    sink = sink + perfscope::record_identifier(view).value_or(0);
    sink = sink + perfscope::record_type_name(header.type).size();

    if (header.size < sizeof header) break;  // the stream cannot go on past a record of size 0
    std::size_t step = (static_cast<std::size_t>(header.size) + 7) & ~std::size_t{7};
    if (step >= size) break;
    data += step;
    size -= step;
  }
  return 0;
}
