#include "perfscope/core/records.hpp"

#include <bit>
#include <cstring>

#include "perfscope/abi/data_source.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/parse_config.hpp"

namespace perfscope {

namespace sf = abi::sample_format;
using abi::RecordType;

ParseConfig ParseConfig::from_attr(const abi::PerfEventAttr& attr) noexcept {
  ParseConfig config;
  config.sample_type = attr.sample_type;
  config.read_format = attr.read_format;
  config.branch_sample_type = attr.branch_sample_type;
  config.sample_regs_user = attr.sample_regs_user;
  config.sample_regs_intr = attr.sample_regs_intr;
  config.sample_id_all = (attr.flags & abi::attr_flag::sample_id_all) != 0;
  return config;
}

std::size_t ParseConfig::sample_id_size() const noexcept {
  if (!sample_id_all) return 0;
  // Computed for every record: bit tests summed without a loop (and without std::popcount,
  // a libgcc call on x86-64 builds without -mpopcnt).
  auto bit = [this](std::uint64_t mask) -> std::size_t { return (sample_type & mask) ? 1 : 0; };
  return (bit(sf::tid) + bit(sf::time) + bit(sf::id) + bit(sf::stream_id) + bit(sf::cpu) +
          bit(sf::identifier)) *
         sizeof(std::uint64_t);
}

std::size_t ReadValues::member_count() const noexcept {
  if (words.empty()) return 0;
  return (read_format & abi::read_format::group) ? static_cast<std::size_t>(words[0]) : 1;
}

std::optional<std::uint64_t> RegisterSet::value(unsigned reg) const noexcept {
  if (reg >= 64 || !((mask >> reg) & 1) || abi == 0) return std::nullopt;
  auto index = static_cast<std::size_t>(std::popcount(mask & ((1ULL << reg) - 1)));
  if (index >= values.size()) return std::nullopt;
  return values[index];
}

DataSource DataSource::decode(std::uint64_t word) noexcept {
  namespace ds = abi::data_source;
  DataSource source;
  source.op = ds::op.get(word);
  source.level = ds::level.get(word);
  source.snoop = ds::snoop.get(word);
  source.lock = ds::lock.get(word);
  source.dtlb = ds::dtlb.get(word);
  source.level_number = ds::level_number.get(word);
  source.remote = ds::remote.get(word);
  source.snoopx = ds::snoopx.get(word);
  source.block = ds::block.get(word);
  source.hops = ds::hops.get(word);
  return source;
}

namespace {

// Bounds-checked sequential reader over one record. Every read checks the remaining length;
// the first failure latches, so decoders can read a run of fields and check once.
class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, std::size_t start, std::size_t end) noexcept
      : bytes_(bytes), position_(start), end_(end) {}

  bool ok() const noexcept { return ok_; }
  std::size_t position() const noexcept { return position_; }
  std::size_t remaining() const noexcept { return ok_ ? end_ - position_ : 0; }

  // Inlined into the decoders: a call per field was a sixth of a report's sample decoding.
  [[gnu::always_inline]] std::uint64_t u64() noexcept {
    std::uint64_t value = 0;
    if (take(sizeof value))
      std::memcpy(&value, bytes_.data() + position_ - sizeof value, sizeof value);
    return value;
  }
  [[gnu::always_inline]] void u32_pair(std::uint32_t& first, std::uint32_t& second) noexcept {
    std::uint64_t word = u64();
    first = static_cast<std::uint32_t>(word);
    second = static_cast<std::uint32_t>(word >> 32);
  }
  std::span<const std::byte> bytes(std::size_t count) noexcept {
    if (!take(count)) return {};
    return bytes_.subspan(position_ - count, count);
  }
  // `count` u64 words in place (records are 8-byte aligned).
  std::span<const std::uint64_t> words(std::uint64_t count) noexcept {
    if (count > remaining() / sizeof(std::uint64_t)) {
      ok_ = false;
      return {};
    }
    auto raw = bytes(static_cast<std::size_t>(count) * sizeof(std::uint64_t));
    return {reinterpret_cast<const std::uint64_t*>(raw.data()), static_cast<std::size_t>(count)};
  }
  // A NUL-terminated string padded to 8 bytes, ending at or before `limit`.
  std::string_view padded_string(std::size_t limit) noexcept {
    if (!ok_ || limit < position_ || limit > end_) {
      ok_ = false;
      return {};
    }
    const char* begin = reinterpret_cast<const char*>(bytes_.data() + position_);
    std::size_t room = limit - position_;
    std::size_t length = ::strnlen(begin, room);
    position_ = limit;
    return {begin, length};
  }
  void fail() noexcept { ok_ = false; }

 private:
  [[gnu::always_inline]] bool take(std::size_t count) noexcept {
    if (!ok_ || count > end_ - position_) {
      ok_ = false;
      return false;
    }
    position_ += count;
    return true;
  }

  std::span<const std::byte> bytes_;
  std::size_t position_;
  std::size_t end_;
  bool ok_ = true;
};

bool check_view(const RecordView& view, DecodeError& error) noexcept {
  if (view.bytes.size() < abi::record_header_size || view.header.size < abi::record_header_size ||
      view.header.size > view.bytes.size()) {
    error = {0, "record size is smaller than its header or larger than the bytes given"};
    return false;
  }
  if (reinterpret_cast<std::uintptr_t>(view.bytes.data()) % alignof(std::uint64_t) != 0) {
    error = {0, "record is not 8-byte aligned"};
    return false;
  }
  return true;
}

// Inlined, like every function handed the Cursor: one out-of-line call takes its address and
// keeps the decoder's position in memory instead of a register for the whole sample.
[[gnu::always_inline]] inline ReadValues read_values(Cursor& cursor,
                                                     std::uint64_t read_format) noexcept {
  namespace rf = abi::read_format;
  std::size_t per_member =
      1 + ((read_format & rf::id) ? 1 : 0) + ((read_format & rf::lost) ? 1 : 0);
  std::size_t header = ((read_format & rf::total_time_enabled) ? 1 : 0) +
                       ((read_format & rf::total_time_running) ? 1 : 0);
  ReadValues values;
  values.read_format = read_format;
  if (read_format & rf::group) {
    std::span<const std::uint64_t> count = cursor.words(1);
    if (!cursor.ok()) return values;
    std::uint64_t members = count[0];
    if (members > cursor.remaining() / sizeof(std::uint64_t)) {
      cursor.fail();
      return values;
    }
    std::span<const std::uint64_t> rest = cursor.words(header + per_member * members);
    if (cursor.ok()) values.words = {count.data(), rest.size() + 1};
  } else {
    values.words = cursor.words(header + per_member);
  }
  return values;
}

[[gnu::always_inline]] inline RegisterSet register_set(Cursor& cursor,
                                                       std::uint64_t mask) noexcept {
  RegisterSet regs;
  regs.mask = mask;
  regs.abi = cursor.u64();
  if (regs.abi != 0) regs.values = cursor.words(static_cast<std::uint64_t>(std::popcount(mask)));
  return regs;
}

void read_sample_id(Cursor& cursor, std::uint64_t sample_type, SampleId& id) noexcept {
  id.fields =
      sample_type & (sf::tid | sf::time | sf::id | sf::stream_id | sf::cpu | sf::identifier);
  if (sample_type & sf::tid) cursor.u32_pair(id.pid, id.tid);
  if (sample_type & sf::time) id.time = cursor.u64();
  if (sample_type & sf::id) id.id = cursor.u64();
  if (sample_type & sf::stream_id) id.stream_id = cursor.u64();
  if (sample_type & sf::cpu) {
    std::uint32_t reserved = 0;
    cursor.u32_pair(id.cpu, reserved);
  }
  if (sample_type & sf::identifier) id.id = cursor.u64();
  if (!(sample_type & sf::id) && !(sample_type & sf::identifier)) id.fields &= ~sf::id;
}

// Where the payload of a non-sample record ends and its sample_id trailer begins.
std::size_t payload_end(const RecordView& view, const ParseConfig& config) noexcept {
  std::size_t trailer = config.sample_id_size();
  return view.header.size >= abi::record_header_size + trailer ? view.header.size - trailer
                                                               : abi::record_header_size;
}

bool finish(Cursor& cursor, const RecordView& view, const ParseConfig& config, SampleId& id,
            DecodeError& error, const char* what) noexcept {
  if (!cursor.ok()) {
    error = {cursor.position(), what};
    return false;
  }
  std::size_t trailer = config.sample_id_size();
  if (trailer != 0) {
    if (view.header.size < abi::record_header_size + trailer ||
        cursor.position() > view.header.size - trailer) {
      error = {cursor.position(), "sample_id trailer overlaps the record payload"};
      return false;
    }
    Cursor tail(view.bytes, view.header.size - trailer, view.header.size);
    read_sample_id(tail, config.sample_type, id);
    if (!tail.ok()) {
      error = {tail.position(), "sample_id trailer is truncated"};
      return false;
    }
  }
  return true;
}

}  // namespace

bool decode_sample_id(const RecordView& view, const ParseConfig& config, SampleId& out) noexcept {
  DecodeError error;
  if (!check_view(view, error)) return false;
  std::size_t trailer = config.sample_id_size();
  if (trailer == 0 || view.header.size < abi::record_header_size + trailer) return false;
  Cursor tail(view.bytes, view.header.size - trailer, view.header.size);
  read_sample_id(tail, config.sample_type, out);
  return tail.ok();
}

namespace {

bool decode_checked_sample(const RecordView& view, const ParseConfig& config, SampleRecord& s,
                           DecodeError& error) noexcept {
  Cursor c(view.bytes, abi::record_header_size, view.header.size);
  const std::uint64_t type = config.sample_type;
  // Fields outside s.fields hold their defaults, so a record decoded again with the same
  // sample_type (every sample of an event) needs no reset: zeroing the whole ~400-byte struct
  // per sample was half the decoding time. Every field of `type` is assigned below in full.
  if (s.fields & ~type) s = SampleRecord{};
  s.fields = type;
  s.misc = view.header.misc;
  if (type & sf::identifier) s.identifier = c.u64();
  if (type & sf::ip) s.ip = c.u64();
  if (type & sf::tid) c.u32_pair(s.pid, s.tid);
  if (type & sf::time) s.time = c.u64();
  if (type & sf::addr) s.addr = c.u64();
  if (type & sf::id) s.id = c.u64();
  if (type & sf::stream_id) s.stream_id = c.u64();
  if (type & sf::cpu) {
    std::uint32_t reserved = 0;
    c.u32_pair(s.cpu, reserved);
  }
  if (type & sf::period) s.period = c.u64();
  if (!(type & sf::id) && (type & sf::identifier)) s.id = s.identifier;
  if (type & sf::read) s.read = read_values(c, config.read_format);
  if (type & sf::callchain) s.callchain = c.words(c.u64());
  if (type & sf::raw) {
    s.raw = {};
    // u32 size, then size bytes; the kernel pads so that size + 4 is a multiple of 8.
    auto first = c.bytes(sizeof(std::uint32_t));
    if (c.ok()) {
      std::uint32_t size = 0;
      std::memcpy(&size, first.data(), sizeof size);
      s.raw = c.bytes(size);
      std::size_t consumed = sizeof(std::uint32_t) + size;
      std::size_t padding = (8 - consumed % 8) % 8;
      c.bytes(padding);
    }
  }
  if (type & sf::branch_stack) {
    s.branch_stack = BranchStack{};
    std::uint64_t count = c.u64();
    if (config.branch_sample_type & abi::branch_sample::hw_index) {
      s.branch_stack.has_hw_index = true;
      s.branch_stack.hw_index = c.u64();
    }
    if (count > c.remaining() / sizeof(abi::PerfBranchEntry)) {
      c.fail();
    } else {
      auto raw = c.bytes(static_cast<std::size_t>(count) * sizeof(abi::PerfBranchEntry));
      s.branch_stack.entries = {reinterpret_cast<const abi::PerfBranchEntry*>(raw.data()),
                                static_cast<std::size_t>(count)};
      if (config.branch_sample_type & abi::branch_sample::counters) {
        s.branch_stack.counters = c.words(count);
      }
    }
  }
  if (type & sf::regs_user) s.regs_user = register_set(c, config.sample_regs_user);
  if (type & sf::stack_user) {
    s.stack_user = {};
    s.stack_user_dyn_size = 0;
    std::uint64_t size = c.u64();
    if (size > c.remaining()) {
      c.fail();
    } else {
      s.stack_user = c.bytes(static_cast<std::size_t>(size));
      if (size != 0) s.stack_user_dyn_size = c.u64();
    }
  }
  if (type & sf::weight_type) s.weight.full = c.u64();
  if (type & sf::data_src) s.data_src = c.u64();
  if (type & sf::transaction) s.transaction = c.u64();
  if (type & sf::regs_intr) s.regs_intr = register_set(c, config.sample_regs_intr);
  if (type & sf::phys_addr) s.phys_addr = c.u64();
  if (type & sf::cgroup) s.cgroup = c.u64();
  if (type & sf::data_page_size) s.data_page_size = c.u64();
  if (type & sf::code_page_size) s.code_page_size = c.u64();
  if (type & sf::aux) {
    s.aux = {};
    std::uint64_t size = c.u64();
    if (size > c.remaining()) {
      c.fail();
    } else {
      s.aux = c.bytes(static_cast<std::size_t>(size));
    }
  }
  if (!c.ok()) {
    error = {c.position(), "sample is shorter than its sample_type says"};
    return false;
  }
  return true;
}

}  // namespace

bool decode_sample(const RecordView& view, const ParseConfig& config, SampleRecord& s,
                   DecodeError& error) noexcept {
  if (!check_view(view, error)) return false;
  return decode_checked_sample(view, config, s, error);
}

bool decode_record(const RecordView& view, const ParseConfig& config, Record& out,
                   DecodeError& error) noexcept {
  if (!check_view(view, error)) return false;
  if (view.header.type == static_cast<std::uint32_t>(RecordType::sample)) {
    // Nearly every record is a sample: decode into the SampleRecord `out` already holds, and
    // skip the trailer arithmetic samples do not need.
    auto* sample = std::get_if<SampleRecord>(&out);
    if (sample == nullptr) sample = &out.emplace<SampleRecord>();
    return decode_checked_sample(view, config, *sample, error);
  }
  const std::size_t end = payload_end(view, config);
  Cursor c(view.bytes, abi::record_header_size, end);
  switch (static_cast<RecordType>(view.header.type)) {
    case RecordType::sample: break;  // decoded above, never reached
    case RecordType::mmap: {
      auto& r = out.emplace<MmapRecord>();
      c.u32_pair(r.pid, r.tid);
      r.addr = c.u64();
      r.len = c.u64();
      r.pgoff = c.u64();
      r.filename = c.padded_string(end);
      return finish(c, view, config, r.sample_id, error, "MMAP record is truncated");
    }
    case RecordType::mmap2: {
      auto& r = out.emplace<Mmap2Record>();
      c.u32_pair(r.pid, r.tid);
      r.addr = c.u64();
      r.len = c.u64();
      r.pgoff = c.u64();
      if (view.header.misc & abi::record_misc::mmap_build_id) {
        auto id = c.bytes(24);  // u8 size, u8 + u16 reserved, u8 build_id[20]
        if (c.ok()) {
          auto size = std::min<std::size_t>(static_cast<std::size_t>(id[0]), 20);
          r.has_build_id = true;
          r.build_id = id.subspan(4, size);
        }
      } else {
        c.u32_pair(r.maj, r.min);
        r.ino = c.u64();
        r.ino_generation = c.u64();
      }
      c.u32_pair(r.prot, r.flags);
      r.filename = c.padded_string(end);
      return finish(c, view, config, r.sample_id, error, "MMAP2 record is truncated");
    }
    case RecordType::lost: {
      auto& r = out.emplace<LostRecord>();
      r.id = c.u64();
      r.lost = c.u64();
      return finish(c, view, config, r.sample_id, error, "LOST record is truncated");
    }
    case RecordType::comm: {
      auto& r = out.emplace<CommRecord>();
      c.u32_pair(r.pid, r.tid);
      r.comm = c.padded_string(end);
      r.exec = (view.header.misc & abi::record_misc::comm_exec) != 0;
      return finish(c, view, config, r.sample_id, error, "COMM record is truncated");
    }
    case RecordType::exit:
    case RecordType::fork: {
      auto& r = out.emplace<TaskRecord>();
      c.u32_pair(r.pid, r.ppid);
      c.u32_pair(r.tid, r.ptid);
      r.time = c.u64();
      return finish(c, view, config, r.sample_id, error, "FORK/EXIT record is truncated");
    }
    case RecordType::throttle:
    case RecordType::unthrottle: {
      auto& r = out.emplace<ThrottleRecord>();
      r.time = c.u64();
      r.id = c.u64();
      r.stream_id = c.u64();
      return finish(c, view, config, r.sample_id, error, "THROTTLE record is truncated");
    }
    case RecordType::read: {
      auto& r = out.emplace<ReadRecord>();
      c.u32_pair(r.pid, r.tid);
      r.values = read_values(c, config.read_format);
      return finish(c, view, config, r.sample_id, error, "READ record is truncated");
    }
    case RecordType::aux: {
      auto& r = out.emplace<AuxRecord>();
      r.aux_offset = c.u64();
      r.aux_size = c.u64();
      r.flags = c.u64();
      return finish(c, view, config, r.sample_id, error, "AUX record is truncated");
    }
    case RecordType::itrace_start: {
      auto& r = out.emplace<ItraceStartRecord>();
      c.u32_pair(r.pid, r.tid);
      return finish(c, view, config, r.sample_id, error, "ITRACE_START record is truncated");
    }
    case RecordType::lost_samples: {
      auto& r = out.emplace<LostSamplesRecord>();
      r.lost = c.u64();
      return finish(c, view, config, r.sample_id, error, "LOST_SAMPLES record is truncated");
    }
    case RecordType::switch_:
    case RecordType::switch_cpu_wide: {
      auto& r = out.emplace<SwitchRecord>();
      r.out = (view.header.misc & abi::record_misc::switch_out) != 0;
      r.preempted = (view.header.misc & abi::record_misc::switch_out_preempt) != 0;
      r.cpu_wide = view.header.type == static_cast<std::uint32_t>(RecordType::switch_cpu_wide);
      if (r.cpu_wide) c.u32_pair(r.next_prev_pid, r.next_prev_tid);
      return finish(c, view, config, r.sample_id, error, "SWITCH record is truncated");
    }
    case RecordType::namespaces: {
      auto& r = out.emplace<NamespacesRecord>();
      c.u32_pair(r.pid, r.tid);
      std::uint64_t count = c.u64();
      if (count > c.remaining() / 16) c.fail();
      r.dev_inode_pairs = c.words(count * 2);
      return finish(c, view, config, r.sample_id, error, "NAMESPACES record is truncated");
    }
    case RecordType::ksymbol: {
      auto& r = out.emplace<KsymbolRecord>();
      r.addr = c.u64();
      std::uint64_t word = c.u64();
      r.len = static_cast<std::uint32_t>(word);
      r.ksym_type = static_cast<std::uint16_t>(word >> 32);
      r.flags = static_cast<std::uint16_t>(word >> 48);
      r.name = c.padded_string(end);
      return finish(c, view, config, r.sample_id, error, "KSYMBOL record is truncated");
    }
    case RecordType::bpf_event: {
      auto& r = out.emplace<BpfEventRecord>();
      std::uint64_t word = c.u64();
      r.event_type = static_cast<std::uint16_t>(word);
      r.flags = static_cast<std::uint16_t>(word >> 16);
      r.id = static_cast<std::uint32_t>(word >> 32);
      r.tag = c.bytes(8);
      return finish(c, view, config, r.sample_id, error, "BPF_EVENT record is truncated");
    }
    case RecordType::cgroup: {
      auto& r = out.emplace<CgroupRecord>();
      r.id = c.u64();
      r.path = c.padded_string(end);
      return finish(c, view, config, r.sample_id, error, "CGROUP record is truncated");
    }
    case RecordType::text_poke: {
      auto& r = out.emplace<TextPokeRecord>();
      r.addr = c.u64();
      auto lengths = c.bytes(4);
      if (c.ok()) {
        std::uint16_t old_len = 0, new_len = 0;
        std::memcpy(&old_len, lengths.data(), 2);
        std::memcpy(&new_len, lengths.data() + 2, 2);
        r.old_bytes = c.bytes(old_len);
        r.new_bytes = c.bytes(new_len);
      }
      if (c.ok()) c = Cursor(view.bytes, end, end);  // skip the padding up to the trailer
      return finish(c, view, config, r.sample_id, error, "TEXT_POKE record is truncated");
    }
    case RecordType::aux_output_hw_id: {
      auto& r = out.emplace<AuxOutputHwIdRecord>();
      r.hw_id = c.u64();
      return finish(c, view, config, r.sample_id, error, "AUX_OUTPUT_HW_ID record is truncated");
    }
    case RecordType::callchain_deferred: {
      auto& r = out.emplace<DeferredCallchainRecord>();
      r.cookie = c.u64();
      r.ips = c.words(c.u64());
      return finish(c, view, config, r.sample_id, error, "CALLCHAIN_DEFERRED record is truncated");
    }
  }
  auto& unknown = out.emplace<UnknownRecord>();
  unknown.type = view.header.type;
  unknown.payload =
      view.bytes.subspan(abi::record_header_size, view.header.size - abi::record_header_size);
  return true;
}

std::optional<std::uint64_t> record_identifier(const RecordView& view) noexcept {
  if (view.header.size < abi::record_header_size + sizeof(std::uint64_t) ||
      view.header.size > view.bytes.size()) {
    return std::nullopt;
  }
  std::size_t at = view.header.type == static_cast<std::uint32_t>(RecordType::sample)
                       ? abi::record_header_size
                       : view.header.size - sizeof(std::uint64_t);
  std::uint64_t id = 0;
  std::memcpy(&id, view.bytes.data() + at, sizeof id);
  return id;
}

std::string_view record_type_name(std::uint32_t type) noexcept {
  switch (static_cast<RecordType>(type)) {
    case RecordType::mmap: return "MMAP";
    case RecordType::lost: return "LOST";
    case RecordType::comm: return "COMM";
    case RecordType::exit: return "EXIT";
    case RecordType::throttle: return "THROTTLE";
    case RecordType::unthrottle: return "UNTHROTTLE";
    case RecordType::fork: return "FORK";
    case RecordType::read: return "READ";
    case RecordType::sample: return "SAMPLE";
    case RecordType::mmap2: return "MMAP2";
    case RecordType::aux: return "AUX";
    case RecordType::itrace_start: return "ITRACE_START";
    case RecordType::lost_samples: return "LOST_SAMPLES";
    case RecordType::switch_: return "SWITCH";
    case RecordType::switch_cpu_wide: return "SWITCH_CPU_WIDE";
    case RecordType::namespaces: return "NAMESPACES";
    case RecordType::ksymbol: return "KSYMBOL";
    case RecordType::bpf_event: return "BPF_EVENT";
    case RecordType::cgroup: return "CGROUP";
    case RecordType::text_poke: return "TEXT_POKE";
    case RecordType::aux_output_hw_id: return "AUX_OUTPUT_HW_ID";
    case RecordType::callchain_deferred: return "CALLCHAIN_DEFERRED";
  }
  return "";
}

}  // namespace perfscope
