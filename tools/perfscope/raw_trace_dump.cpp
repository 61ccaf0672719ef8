#include "raw_trace_dump.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstring>
#include <iterator>
#include <map>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "perf_task_table.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/abi/user_registers.hpp"
#include "perfscope/analysis/perf_data/perf_data_format.hpp"
#include "perfscope/analysis/perf_data/stat_records.hpp"
#include "perfscope/core/records.hpp"
#include "report_statistics.hpp"

namespace perfscope::cli {

namespace {

namespace sf = abi::sample_format;
using abi::RecordType;
using abi::UserRecordType;

constexpr std::uint32_t type_of(RecordType type) { return static_cast<std::uint32_t>(type); }
constexpr std::uint32_t type_of(UserRecordType type) { return static_cast<std::uint32_t>(type); }

// C's "%#lx": 0 is "0", not "0x0".
std::string alt_hex(std::uint64_t value) {
  return value == 0 ? std::string("0") : fmt::format("{:#x}", value);
}

template <class T>
T read_at(std::span<const std::byte> bytes, std::size_t offset) {
  T value{};
  if (offset + sizeof(T) <= bytes.size()) std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// The records each perf command's tool handles; any other ends its line with ": unhandled!"
// (perf's stubs). The kernel's AUX, switch, ksymbol, BPF and text-poke records and the lost
// counts have default handlers in every tool.
bool handled(PerfDumpTool tool, std::uint32_t type) {
  switch (type) {
    case type_of(RecordType::lost):
    case type_of(RecordType::lost_samples):
    case type_of(RecordType::aux):
    case type_of(RecordType::itrace_start):
    case type_of(RecordType::switch_):
    case type_of(RecordType::switch_cpu_wide):
    case type_of(RecordType::ksymbol):
    case type_of(RecordType::bpf_event):
    case type_of(RecordType::text_poke):
    case type_of(RecordType::aux_output_hw_id):
    case type_of(UserRecordType::compressed): return true;
    default: break;
  }
  static constexpr std::array<std::uint32_t, 7> shared{
      type_of(RecordType::sample),    type_of(RecordType::mmap), type_of(RecordType::mmap2),
      type_of(RecordType::comm),      type_of(RecordType::exit), type_of(RecordType::fork),
      type_of(RecordType::namespaces)};
  if (std::find(shared.begin(), shared.end(), type) != shared.end()) {
    return tool != PerfDumpTool::sched || type == type_of(RecordType::sample) ||
           type == type_of(RecordType::comm) || type == type_of(RecordType::fork) ||
           type == type_of(RecordType::exit) || type == type_of(RecordType::mmap) ||
           type == type_of(RecordType::mmap2);
  }
  auto user = [](UserRecordType t) { return type_of(t); };
  switch (tool) {
    case PerfDumpTool::report:
      return type == type_of(RecordType::cgroup) || type == type_of(RecordType::read) ||
             type == user(UserRecordType::header_attr) ||
             type == user(UserRecordType::header_tracing_data) ||
             type == user(UserRecordType::header_build_id) ||
             type == user(UserRecordType::id_index) ||
             type == user(UserRecordType::auxtrace_info) ||
             type == user(UserRecordType::auxtrace) || type == user(UserRecordType::event_update) ||
             type == user(UserRecordType::header_feature);
    case PerfDumpTool::script:
      return type == type_of(RecordType::cgroup) || type == type_of(RecordType::throttle) ||
             type == type_of(RecordType::unthrottle) || type == user(UserRecordType::header_attr) ||
             type == user(UserRecordType::event_update) ||
             type == user(UserRecordType::header_tracing_data) ||
             type == user(UserRecordType::header_feature) ||
             type == user(UserRecordType::header_build_id) ||
             type == user(UserRecordType::id_index) ||
             type == user(UserRecordType::auxtrace_info) ||
             type == user(UserRecordType::auxtrace) ||
             type == user(UserRecordType::auxtrace_error) || type == user(UserRecordType::stat) ||
             type == user(UserRecordType::stat_round) ||
             type == user(UserRecordType::stat_config) ||
             type == user(UserRecordType::thread_map) || type == user(UserRecordType::cpu_map);
    case PerfDumpTool::annotate:
      return type == user(UserRecordType::header_attr) ||
             type == user(UserRecordType::header_build_id) ||
             type == user(UserRecordType::header_tracing_data) ||
             type == user(UserRecordType::id_index) ||
             type == user(UserRecordType::auxtrace_info) ||
             type == user(UserRecordType::auxtrace) || type == user(UserRecordType::header_feature);
    case PerfDumpTool::diff: return type == type_of(RecordType::cgroup);
    case PerfDumpTool::sched:
      return type == type_of(RecordType::lost) || type == user(UserRecordType::header_attr) ||
             type == user(UserRecordType::event_update) ||
             type == user(UserRecordType::header_tracing_data) ||
             type == user(UserRecordType::header_build_id) ||
             type == user(UserRecordType::id_index) || type == user(UserRecordType::header_feature);
  }
  return false;
}

// perf's cpu list: ranges "a-b" joined by ",".
std::string cpu_list(const std::vector<std::int32_t>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1 && cpus[i] >= 0) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

// perf's page size text: N/A, or the size in B, K, M or G.
std::string page_size_text(std::uint64_t size) {
  if (size == 0) return "N/A";
  static constexpr char units[] = {'B', 'K', 'M', 'G'};
  int unit = 0;
  while (unit < 3 && size / 1024 > 1) {
    size /= 1024;
    ++unit;
  }
  return fmt::format("{}{}", size, units[unit]);
}

// perf's branch type names (PERF_BR_*; EXTEND_ABI's new types as an x86 build names them).
std::string_view branch_type_name(std::uint64_t flags) {
  static constexpr std::array<std::string_view, 15> names{
      "",       "COND",      "UNCOND",   "IND",  "CALL", "IND_CALL", "RET",  "SYSCALL",
      "SYSRET", "COND_CALL", "COND_RET", "ERET", "IRQ",  "SERROR",   "NO_TX"};
  static constexpr std::array<std::string_view, 8> new_names{
      "FAULT_ALGN", "FAULT_DATA", "FAULT_INST", "ARCH_1", "ARCH_2", "ARCH_3", "ARCH_4", "ARCH_5"};
  auto type = static_cast<unsigned>((flags >> 20) & 0xf);
  if (type < names.size()) return names[type];
  auto extended = static_cast<unsigned>((flags >> 26) & 0xf);
  return extended < new_names.size() ? new_names[extended] : "(null)";
}

// One mapped file of a process (or of the kernel), as perf's maps name it.
struct MappedFile {
  std::uint64_t start = 0, end = 0;
  std::string name;
};

class RawTraceDump {
 public:
  RawTraceDump(const PerfDataReader& reader, const RawTraceDumpOptions& options, std::FILE* out)
      : reader_(reader), options_(options), out_(out) {
    path_ = reader.pipe_mode() ? "pipe" : options.path;
    // In a pipe the events come as ATTR records: until then perf knows none of them.
    known_events_ = reader.pipe_mode() ? 0 : reader.events().size();
    learn_events();
    const auto& arch = reader.features().arch;
    arm64_ = arch && (*arch == "aarch64" || *arch == "arm64");
    resolves_samples_ = options.tool != PerfDumpTool::sched;
    entries_.assign(reader.events().size(), 0);
    // perf report's branch mode, for recordings with branch stacks: a histogram entry per branch.
    const auto& present = reader.features().present;
    branch_mode_ =
        options.tool == PerfDumpTool::report &&
        std::find(present.begin(), present.end(),
                  static_cast<unsigned>(perf_data::Feature::branch_stack)) != present.end();
  }

  const std::vector<std::uint64_t>& histogram_entries() const { return entries_; }

  void learn_events() {
    all_sample_types_ = 0;
    for (std::size_t i = 0; i < known_events_ && i < reader_.events().size(); ++i) {
      all_sample_types_ |= reader_.events()[i].attr.sample_type;
    }
    first_sample_id_all_ = known_events_ > 0 && !reader_.events().empty() &&
                           reader_.events().front().config.sample_id_all;
  }

  std::optional<PerfDataError> run() {
    // perf delivers in file order where a recording cannot be ordered (no sample_id_all).
    const bool ordered = options_.ordered && (first_sample_id_all_ || reader_.pipe_mode());
    ordered_ = ordered;
    if (!first_sample_id_all_ && !reader_.pipe_mode() && options_.ordered) {
      print("WARNING: No sample_id_all support, falling back to unordered processing\n");
    }
    auto error = reader_.for_each_record([&](const PerfDataRecord& record) { on_record(record); });
    flush(~std::uint64_t{0});
    flush_text();
    return error;
  }

 private:
  struct Pending {
    std::vector<std::byte> bytes;
    std::uint64_t offset = 0;
    std::size_t event = 0;
  };

  void print(std::string_view text) { text_.append(text); }
  template <class... Args>
  void emit(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(text_), format, std::forward<Args>(args)...);
  }
  void flush_text() {
    std::fwrite(text_.data(), 1, text_.size(), out_);
    text_.clear();
  }

  // perf's read: its own records at once, the kernel's queued by time (those without a time
  // at once) and delivered a round behind.
  void on_record(const PerfDataRecord& record) {
    const std::uint32_t type = record.view.header.type;
    if (!ordered_ || type >= 64 || record.time == 0 || record.time == ~std::uint64_t{0}) {
      dispatch(record.view.bytes, record.offset, record.event);
    } else {
      Pending pending{
          {record.view.bytes.begin(), record.view.bytes.end()}, record.offset, record.event};
      max_timestamp_ = std::max(max_timestamp_, record.time);
      queue_.emplace(record.time, std::move(pending));
    }
    if (text_.size() > (1u << 20)) flush_text();
  }

  void flush(std::uint64_t limit) {
    while (!queue_.empty() && queue_.begin()->first <= limit) {
      auto node = queue_.extract(queue_.begin());
      const Pending& pending = node.mapped();
      dispatch(pending.bytes, pending.offset, pending.event);
    }
  }

  void dispatch(std::span<const std::byte> bytes, std::uint64_t offset, std::size_t event) {
    const RecordView view = record_view(bytes);
    const std::uint32_t type = view.header.type;
    // A pipe's offsets count from the first record, after the stream's 16-byte header.
    if (reader_.pipe_mode() && offset >= 16) offset -= 16;
    emit("\n{}@{} [{:#x}]: event: {}\n", alt_hex(offset), path_, view.header.size, type);
    hex_block(bytes);
    const ParseConfig& config = reader_.events()[event].config;
    const bool sample = type == type_of(RecordType::sample);
    SampleRecord& decoded_sample = sample_;
    bool sample_ok = false;
    if (sample) {
      DecodeError error;
      sample_ok = decode_sample(view, config, decoded_sample, error);
    }
    timestamp_prefix(view, config, sample ? &decoded_sample : nullptr, sample_ok);
    std::string_view name = perf_record_name(type);
    emit("{} [{:#x}]: PERF_RECORD_{}", alt_hex(offset), view.header.size,
         name.empty() ? std::string_view("UNKNOWN") : name);
    if (type >= 64) {
      user_record(view, type);
    } else if (sample) {
      if (sample_ok) dump_sample(view, event, decoded_sample);
    } else {
      kernel_record(view, config, type);
    }
  }

  void hex_block(std::span<const std::byte> bytes) {
    emit(".\n. ... raw event: size {} bytes\n", bytes.size());
    for (std::size_t line = 0; line < bytes.size(); line += 16) {
      std::size_t count = std::min<std::size_t>(16, bytes.size() - line);
      emit(".  {:04x}: ", line);
      for (std::size_t i = 0; i < 16; ++i) {
        if (i < count) {
          emit(" {:02x}", static_cast<unsigned>(bytes[line + i]));
        } else {
          print("   ");
        }
      }
      print("  ");
      for (std::size_t i = 0; i < count; ++i) {
        auto c = static_cast<unsigned char>(bytes[line + i]);
        text_ += c < 0x80 && std::isprint(c) ? static_cast<char>(c) : '.';
      }
      text_.append(16 - count, ' ');
      print("\n");
    }
    print("\n");
  }

  // perf's evlist__print_tstamp: the CPU and time any event samples, from this record.
  void timestamp_prefix(const RecordView& view, const ParseConfig& config,
                        const SampleRecord* sample, bool sample_ok) {
    const std::uint32_t type = view.header.type;
    if (sample == nullptr && !first_sample_id_all_) {
      print("-1 -1 ");
      return;
    }
    std::uint32_t cpu = 0;
    std::uint64_t time = 0;
    if (sample != nullptr) {
      cpu = sample_ok && sample->has(sf::cpu) ? sample->cpu : ~std::uint32_t{0};
      time = sample_ok && sample->has(sf::time) ? sample->time : ~std::uint64_t{0};
    } else if (type < 64) {
      SampleId id;
      bool known = config.sample_id_all && decode_sample_id(view, config, id);
      cpu = known && id.has(sf::cpu) ? id.cpu : ~std::uint32_t{0};
      time = known && id.has(sf::time) ? id.time : ~std::uint64_t{0};
    }
    if (all_sample_types_ & sf::cpu) emit("{} ", cpu);
    if (all_sample_types_ & sf::time) emit("{} ", time);
  }

  void end_line(std::uint32_t type) {
    print(handled(options_.tool, type) ? "\n" : "\n: unhandled!\n");
  }
  void unhandled_after(std::uint32_t type) {
    if (!handled(options_.tool, type)) print(": unhandled!\n");
  }

  void kernel_record(const RecordView& view, const ParseConfig& config, std::uint32_t type) {
    DecodeError error;
    if (!decode_record(view, config, decoded_, error)) {
      print("\n");
      return;
    }
    const bool stub = !handled(options_.tool, type);
    switch (type) {
      case type_of(RecordType::mmap): {
        const auto& mmap = std::get<MmapRecord>(decoded_);
        if (stub) break;
        emit(" {}/{}: [{}({}) @ {}]: {} {}\n", static_cast<std::int32_t>(mmap.pid),
             static_cast<std::int32_t>(mmap.tid), alt_hex(mmap.addr), alt_hex(mmap.len),
             alt_hex(mmap.pgoff), (view.header.misc & 0x2000) != 0 ? 'r' : 'x', mmap.filename);
        add_map(static_cast<std::int32_t>(mmap.pid), mmap.addr, mmap.len, mmap.filename);
        return;
      }
      case type_of(RecordType::mmap2): {
        const auto& mmap = std::get<Mmap2Record>(decoded_);
        if (stub) break;
        char flags[5] = {(mmap.prot & 1) ? 'r' : '-', (mmap.prot & 2) ? 'w' : '-',
                         (mmap.prot & 4) ? 'x' : '-', (mmap.flags & 1) ? 's' : 'p', '\0'};
        if (mmap.has_build_id) {
          std::string id;
          for (std::byte b : mmap.build_id) id += fmt::format("{:02x}", static_cast<unsigned>(b));
          emit(" {}/{}: [{}({}) @ {} <{}>]: {} {}\n", static_cast<std::int32_t>(mmap.pid),
               static_cast<std::int32_t>(mmap.tid), alt_hex(mmap.addr), alt_hex(mmap.len),
               alt_hex(mmap.pgoff), id, flags, mmap.filename);
        } else {
          emit(" {}/{}: [{}({}) @ {} {:02x}:{:02x} {} {}]: {} {}\n",
               static_cast<std::int32_t>(mmap.pid), static_cast<std::int32_t>(mmap.tid),
               alt_hex(mmap.addr), alt_hex(mmap.len), alt_hex(mmap.pgoff), mmap.maj, mmap.min,
               mmap.ino, mmap.ino_generation, flags, mmap.filename);
        }
        add_map(static_cast<std::int32_t>(mmap.pid), mmap.addr, mmap.len, mmap.filename);
        return;
      }
      case type_of(RecordType::lost): {
        const auto& lost = std::get<LostRecord>(decoded_);
        emit(": id:{}: lost:{}\n", lost.id, lost.lost);
        return;
      }
      case type_of(RecordType::comm): {
        const auto& comm = std::get<CommRecord>(decoded_);
        if (stub) break;
        emit("{}: {}:{}/{}\n", comm.exec ? " exec" : "", comm.comm,
             static_cast<std::int32_t>(comm.pid), static_cast<std::int32_t>(comm.tid));
        tasks_.comm(comm);
        return;
      }
      case type_of(RecordType::exit):
      case type_of(RecordType::fork): {
        const auto& task = std::get<TaskRecord>(decoded_);
        if (stub) break;
        emit("({}:{}):({}:{})\n", static_cast<std::int32_t>(task.pid),
             static_cast<std::int32_t>(task.tid), static_cast<std::int32_t>(task.ppid),
             static_cast<std::int32_t>(task.ptid));
        if (type == type_of(RecordType::fork)) fork(task);
        return;
      }
      case type_of(RecordType::read): {
        const auto& read = std::get<ReadRecord>(decoded_);
        if (stub) break;
        read_record(read);
        return;
      }
      case type_of(RecordType::aux): {
        const auto& aux = std::get<AuxRecord>(decoded_);
        emit(" offset: {} size: {} flags: {} [{}{}{}]\n", alt_hex(aux.aux_offset),
             alt_hex(aux.aux_size), alt_hex(aux.flags), (aux.flags & 1) ? "T" : "",
             (aux.flags & 2) ? "O" : "", (aux.flags & 4) ? "P" : "");
        return;
      }
      case type_of(RecordType::itrace_start): {
        const auto& start = std::get<ItraceStartRecord>(decoded_);
        emit(" pid: {} tid: {}\n", start.pid, start.tid);
        return;
      }
      case type_of(RecordType::lost_samples): {
        const auto& lost = std::get<LostSamplesRecord>(decoded_);
        std::uint64_t id = lost.sample_id.has(sf::id) || lost.sample_id.has(sf::identifier)
                               ? lost.sample_id.id
                               : ~std::uint64_t{0};
        emit(": id:{}: lost samples :{}\n", id, lost.lost);
        return;
      }
      case type_of(RecordType::switch_):
      case type_of(RecordType::switch_cpu_wide): {
        const auto& change = std::get<SwitchRecord>(decoded_);
        std::string_view direction = !change.out        ? "IN         "
                                     : change.preempted ? "OUT preempt"
                                                        : "OUT        ";
        if (type == type_of(RecordType::switch_)) {
          emit(" {}\n", direction);
        } else {
          emit(" {}  {} pid/tid: {:5}/{:<5}\n", direction, change.out ? "next" : "prev",
               static_cast<std::int32_t>(change.next_prev_pid),
               static_cast<std::int32_t>(change.next_prev_tid));
        }
        return;
      }
      case type_of(RecordType::namespaces): {
        const auto& spaces = std::get<NamespacesRecord>(decoded_);
        if (stub) break;
        static constexpr std::array<std::string_view, 7> names{"net",  "uts", "ipc",   "pid",
                                                               "user", "mnt", "cgroup"};
        emit(" {}/{} - nr_namespaces: {}\n\t\t[", static_cast<std::int32_t>(spaces.pid),
             static_cast<std::int32_t>(spaces.tid), spaces.count());
        for (std::size_t i = 0; i < spaces.count(); ++i) {
          if (i > 0 && i % 4 == 0) print("\n\t\t ");
          emit("{}/{}: {}/{}{}", i, i < names.size() ? names[i] : "UNKNOWN",
               spaces.dev_inode_pairs[2 * i], alt_hex(spaces.dev_inode_pairs[2 * i + 1]),
               i + 1 == spaces.count() ? "]\n" : ", ");
        }
        return;
      }
      case type_of(RecordType::ksymbol): {
        const auto& symbol = std::get<KsymbolRecord>(decoded_);
        emit(" addr {:x} len {} type {} flags {:#x} name {}\n", symbol.addr, symbol.len,
             symbol.ksym_type, symbol.flags, symbol.name);
        return;
      }
      case type_of(RecordType::bpf_event): {
        const auto& bpf = std::get<BpfEventRecord>(decoded_);
        emit(" type {}, flags {}, id {}\n", bpf.event_type, bpf.flags, bpf.id);
        return;
      }
      case type_of(RecordType::cgroup): {
        const auto& cgroup = std::get<CgroupRecord>(decoded_);
        if (stub) break;
        emit(" cgroup: {} {}\n", cgroup.id, cgroup.path);
        return;
      }
      case type_of(RecordType::text_poke): {
        const auto& poke = std::get<TextPokeRecord>(decoded_);
        emit(" {:x}  old len {} new len {}\n", poke.addr, poke.old_bytes.size(),
             poke.new_bytes.size());
        poke_bytes("Old", poke.old_bytes);
        poke_bytes("New", poke.new_bytes);
        return;
      }
      case type_of(RecordType::throttle):
      case type_of(RecordType::unthrottle):
        // A tool that takes them prints nothing (perf script, without --show-throttle-events).
        if (stub) break;
        return;
      case type_of(RecordType::aux_output_hw_id): {
        emit(" hw_id: {}\n", alt_hex(std::get<AuxOutputHwIdRecord>(decoded_).hw_id));
        return;
      }
      default: break;
    }
    print(": unhandled!\n");
  }

  void poke_bytes(std::string_view which, std::span<const std::byte> bytes) {
    for (std::size_t row = 0; row < bytes.size(); row += 16) {
      emit("            {} bytes:", which);
      for (std::size_t i = row; i < std::min(bytes.size(), row + 16); ++i) {
        emit(" {:02x}", static_cast<unsigned>(bytes[i]));
      }
      print("\n");
    }
  }

  void read_record(const ReadRecord& read) {
    const PerfDataEventInfo* event = event_of(read.sample_id);
    std::array<Reading, 1> values{};
    read.values.decode(values);
    emit(": {} {} {} {}\n", static_cast<std::int32_t>(read.pid),
         static_cast<std::int32_t>(read.tid), event ? event->name : std::string("unknown"),
         values[0].value);
    if (event == nullptr) return;
    const std::uint64_t format = event->attr.read_format;
    if (format & 0x1) emit("... time enabled : {}\n", values[0].enabled);
    if (format & 0x2) emit("... time running : {}\n", values[0].running);
    if (format & 0x4) emit("... id           : {}\n", values[0].id);
    if (format & 0x10) emit("... lost         : {}\n", values[0].lost);
  }

  const PerfDataEventInfo* event_of(const SampleId& id) const {
    if (!id.has(sf::id) && !id.has(sf::identifier)) {
      return reader_.events().size() == 1 ? &reader_.events().front() : nullptr;
    }
    for (const auto& event : reader_.events()) {
      if (std::find(event.ids.begin(), event.ids.end(), id.id) != event.ids.end()) return &event;
    }
    return nullptr;
  }

  void user_record(const RecordView& view, std::uint32_t type) {
    std::span<const std::byte> payload =
        view.bytes.subspan(std::min<std::size_t>(8, view.bytes.size()));
    switch (type) {
      case type_of(UserRecordType::header_attr):
        ++known_events_;
        learn_events();
        if (!handled(options_.tool, type)) print(": unhandled!\n");
        return;
      case type_of(UserRecordType::header_event_type):
        return;  // perf reads the old pipes' event types itself: never a tool's
      case type_of(UserRecordType::header_tracing_data):
      case type_of(UserRecordType::header_build_id):
      case type_of(UserRecordType::header_feature):
        if (!handled(options_.tool, type)) print(": unhandled!\n");
        return;  // perf prints nothing more: the next record's blank line ends the line
      case type_of(UserRecordType::finished_round):
        if (!ordered_) {
          print(": unhandled!\n");
          return;
        }
        print("\n");
        if (!queue_.empty()) {
          flush(next_flush_);
          next_flush_ = max_timestamp_;
        }
        return;
      case type_of(UserRecordType::id_index): {
        // The tool's handler prints these three; perf's stub only says it has none.
        if (!handled(options_.tool, type)) {
          print(": unhandled!\n");
          return;
        }
        auto nr = read_at<std::uint64_t>(payload, 0);
        emit(" nr: {}\n", nr);
        bool v2 = nr != 0 && payload.size() >= 8 && (payload.size() - 8) / nr >= 48;
        std::size_t entry = v2 ? 48 : 32;
        for (std::uint64_t i = 0; i < nr && 8 + (i + 1) * entry <= payload.size(); ++i) {
          std::size_t at = 8 + i * entry;
          emit(" ... id: {}  idx: {}  cpu: {}  tid: {}", read_at<std::uint64_t>(payload, at),
               read_at<std::uint64_t>(payload, at + 8), read_at<std::int64_t>(payload, at + 16),
               read_at<std::int64_t>(payload, at + 24));
          if (v2) {
            emit("  machine_pid: {}  vcpu: {}\n", read_at<std::int64_t>(payload, at + 32),
                 read_at<std::uint64_t>(payload, at + 40));
          } else {
            print("\n");
          }
        }
        unhandled_after(type);
        return;
      }
      case type_of(UserRecordType::auxtrace_info):
        if (!handled(options_.tool, type)) {
          print(": unhandled!\n");
          return;
        }
        emit(" type: {}\n", read_at<std::uint32_t>(payload, 0));
        unhandled_after(type);
        return;
      case type_of(UserRecordType::auxtrace):
        if (!handled(options_.tool, type)) {
          print(": unhandled!\n");
          return;
        }
        emit(" size: {}  offset: {}  ref: {}  idx: {}  tid: {}  cpu: {}\n",
             alt_hex(read_at<std::uint64_t>(payload, 0)),
             alt_hex(read_at<std::uint64_t>(payload, 8)),
             alt_hex(read_at<std::uint64_t>(payload, 16)), read_at<std::uint32_t>(payload, 24),
             read_at<std::int32_t>(payload, 28), read_at<std::int32_t>(payload, 32));
        unhandled_after(type);
        return;
      case type_of(UserRecordType::thread_map): {
        auto threads = decode_thread_map(payload);
        print(" nr: ");
        if (threads) {
          emit("{} thread{}: ", threads->size(), threads->size() > 1 ? "s" : "");
          for (std::size_t i = 0; i < threads->size(); ++i) {
            emit("{}{}", i ? ", " : "", (*threads)[i].pid);
          }
          print("\n");
        } else {
          print("failed to get threads from event\n");
        }
        unhandled_after(type);
        return;
      }
      case type_of(UserRecordType::cpu_map):
        emit(": {}\n", cpu_list(decode_cpu_map(payload)));
        unhandled_after(type);
        return;
      case type_of(UserRecordType::stat_config): {
        std::uint64_t aggregation = 0, scale = 0, interval = 0;
        auto nr = read_at<std::uint64_t>(payload, 0);
        for (std::uint64_t i = 0; i < nr && 8 + (i + 1) * 16 <= payload.size(); ++i) {
          auto tag = read_at<std::uint64_t>(payload, 8 + i * 16);
          auto value = read_at<std::uint64_t>(payload, 16 + i * 16);
          if (tag == 0) aggregation = value;
          if (tag == 1) interval = value;
          if (tag == 2) scale = value;
        }
        emit("\n... aggr_mode {}\n... scale     {}\n... interval  {}\n",
             static_cast<std::int32_t>(aggregation), static_cast<std::int32_t>(scale),
             static_cast<std::uint32_t>(interval));
        unhandled_after(type);
        return;
      }
      case type_of(UserRecordType::stat): {
        emit("\n... id {}, cpu {}, thread {}\n... value {}, enabled {}, running {}\n",
             read_at<std::uint64_t>(payload, 0), read_at<std::int32_t>(payload, 8),
             read_at<std::int32_t>(payload, 12), read_at<std::uint64_t>(payload, 16),
             read_at<std::uint64_t>(payload, 24), read_at<std::uint64_t>(payload, 32));
        unhandled_after(type);
        return;
      }
      case type_of(UserRecordType::stat_round):
        emit("\n... time {}, type {}\n", read_at<std::uint64_t>(payload, 8),
             read_at<std::uint64_t>(payload, 0) == 1 ? "FINAL" : "INTERVAL");
        unhandled_after(type);
        return;
      case type_of(UserRecordType::event_update): {
        auto kind = read_at<std::uint64_t>(payload, 0);
        emit("\n... id:    {}\n", read_at<std::uint64_t>(payload, 8));
        std::span<const std::byte> data =
            payload.subspan(std::min<std::size_t>(16, payload.size()));
        auto text = [&] {
          std::string_view chars(reinterpret_cast<const char*>(data.data()), data.size());
          return chars.substr(0, chars.find('\0'));
        };
        if (kind == 0) {
          emit("... unit:  {}\n", text());
        } else if (kind == 1) {
          emit("... scale: {:f}\n", read_at<double>(data, 0));
        } else if (kind == 2) {
          emit("... name:  {}\n", text());
        } else if (kind == 3) {
          emit("... {}\n", cpu_list(decode_cpu_map(data)));
        } else {
          print("... unknown type\n");
        }
        unhandled_after(type);
        return;
      }
      case type_of(UserRecordType::time_conv):
        emit("\n... Time Shift      {}\n... Time Muliplier  {}\n... Time Zero       {}\n",
             read_at<std::uint64_t>(payload, 0), read_at<std::uint64_t>(payload, 8),
             read_at<std::uint64_t>(payload, 16));
        if (view.header.size > 32) {
          emit(
              "... Time Cycles     {}\n... Time Mask       {}\n... Cap Time Zero   {}\n"
              "... Cap Time Short  {}\n",
              read_at<std::uint64_t>(payload, 24), alt_hex(read_at<std::uint64_t>(payload, 32)),
              static_cast<int>(read_at<std::uint8_t>(payload, 40)),
              static_cast<int>(read_at<std::uint8_t>(payload, 41)));
        }
        unhandled_after(type);
        return;
      default: print(": unhandled!\n"); return;
    }
  }

  void dump_sample(const RecordView& view, std::size_t event, const SampleRecord& sample) {
    const PerfDataEventInfo& info = reader_.events()[event];
    const std::int32_t pid = sample.has(sf::tid) ? static_cast<std::int32_t>(sample.pid) : -1;
    const std::int32_t tid = sample.has(sf::tid) ? static_cast<std::int32_t>(sample.tid) : -1;
    const std::uint64_t period =
        sample.has(sf::period) ? sample.period : info.attr.sample_period_or_freq;
    emit("(IP, {:#x}): {}/{}: {} period: {} addr: {}\n", view.header.misc, pid, tid,
         alt_hex(sample.has(sf::ip) ? sample.ip : 0), period,
         alt_hex(sample.has(sf::addr) ? sample.addr : 0));
    const bool call_stack = (info.attr.branch_sample_type & abi::branch_sample::call_stack) != 0;
    if (sample.has(sf::callchain)) {
      const auto& ips = sample.callchain;
      if (call_stack && sample.has(sf::branch_stack) && !sample.branch_stack.entries.empty()) {
        auto user = std::find(ips.begin(), ips.end(), abi::callchain_context::user);
        if (user != ips.end()) {
          std::size_t k = static_cast<std::size_t>(user - ips.begin());
          const auto& entries = sample.branch_stack.entries;
          emit("... LBR call chain: nr:{}\n", k + 1 + entries.size() + 1);
          for (std::size_t i = 0; i <= k; ++i) emit("..... {:2}: {:016x}\n", i, ips[i]);
          emit("..... {:2}: {:016x}\n", k + 1, entries[0].to);
          for (std::size_t i = 0; i < entries.size(); ++i) {
            emit("..... {:2}: {:016x}\n", k + 2 + i, entries[i].from);
          }
        }
      }
      emit("... FP chain: nr:{}\n", ips.size());
      for (std::size_t i = 0; i < ips.size(); ++i) emit("..... {:2}: {:016x}\n", i, ips[i]);
    }
    if (sample.has(sf::branch_stack)) {
      const auto& entries = sample.branch_stack.entries;
      if (!call_stack) {
        emit("... branch stack: nr:{}\n", entries.size());
      } else {
        emit("... branch callstack: nr:{}\n", entries.size() + 1);
      }
      for (std::size_t i = 0; i < entries.size(); ++i) {
        const abi::PerfBranchEntry& e = entries[i];
        if (!call_stack) {
          const std::uint64_t flags = e.flags;
          emit("..... {:2}: {:016x} -> {:016x} {} cycles {}{}{}{} {:x} {}\n", i, e.from, e.to,
               (flags >> 4) & 0xffff, (flags & 1) ? "M" : " ", (flags & 2) ? "P" : " ",
               (flags & 8) ? "A" : " ", (flags & 4) ? "T" : " ", flags >> 33,
               branch_type_name(flags));
        } else if (i == 0) {
          emit("..... {:2}: {:016x}\n..... {:2}: {:016x}\n", i, e.to, i + 1, e.from);
        } else {
          emit("..... {:2}: {:016x}\n", i + 1, e.from);
        }
      }
    }
    if (sample.has(sf::regs_user)) registers("user", sample.regs_user);
    if (sample.has(sf::regs_intr)) registers("intr", sample.regs_intr);
    if (sample.has(sf::stack_user)) {
      std::size_t offset =
          sample.stack_user.data() != nullptr
              ? static_cast<std::size_t>(sample.stack_user.data() - view.bytes.data()) - 8
              : 0;
      emit("... ustack: size {}, offset {:#x}\n", sample.stack_user_dyn_size, offset);
    }
    if (sample.has(sf::weight) || sample.has(sf::weight_struct)) {
      if (sample.has(sf::weight)) {
        emit("... weight: {}", sample.weight.full);
      } else {
        emit("... weight: {}", sample.weight.var1_dw());
      }
      if (sample.has(sf::weight_struct)) {
        emit(",{:#x},{:#x}", sample.weight.var2_w(), 0);
      }
      print("\n");
    }
    if (sample.has(sf::data_src)) emit(" . data_src: 0x{:x}\n", sample.data_src);
    if (sample.has(sf::phys_addr)) emit(" .. phys_addr: 0x{:x}\n", sample.phys_addr);
    if (sample.has(sf::data_page_size)) {
      emit(" .. data page size: {}\n", page_size_text(sample.data_page_size));
    }
    if (sample.has(sf::code_page_size)) {
      emit(" .. code page size: {}\n", page_size_text(sample.code_page_size));
    }
    if (sample.has(sf::transaction)) emit("... transaction: {:x}\n", sample.transaction);
    if (sample.has(sf::read)) sample_read(sample);
    if (resolves_samples_) resolve(pid, tid, view.header.misc & 7, sample.ip);
    entries_[event] +=
        branch_mode_ && sample.has(sf::branch_stack) ? sample.branch_stack.entries.size() : 1;
  }

  // perf's "%#x" of the weight struct's fields prints 0 as "0".
  void registers(std::string_view which, const RegisterSet& set) {
    if (set.abi == 0) return;
    static constexpr std::array<std::string_view, 3> abis{"none", "32-bit", "64-bit"};
    emit("... {} regs: mask {:#x} ABI {}\n", which, set.mask,
         set.abi < abis.size() ? abis[set.abi] : "unknown");
    std::size_t i = 0;
    for (std::uint64_t mask = set.mask; mask != 0 && i < set.values.size(); mask &= mask - 1) {
      auto reg = static_cast<unsigned>(std::countr_zero(mask));
      emit(".... {:<5} 0x{:016x}\n", abi::register_name(reg, arm64_), set.values[i++]);
    }
  }

  void sample_read(const SampleRecord& sample) {
    print("... sample_read:\n");
    std::vector<Reading> values(sample.read.member_count());
    sample.read.decode(values);
    const std::uint64_t format = sample.read.read_format;
    if (values.empty()) return;
    if (format & 0x1) emit("...... time enabled {:016x}\n", values[0].enabled);
    if (format & 0x2) emit("...... time running {:016x}\n", values[0].running);
    if (format & 0x8) emit(".... group nr {}\n", values.size());
    for (const Reading& value : values) {
      emit("..... id {:016x}, value {:016x}", value.id, value.value);
      if (format & 0x10) emit(", lost {}", value.lost);
      print("\n");
    }
  }

  // perf's machine__resolve: the sample's thread (created where no record named it yet) and the
  // file its address lies in.
  void resolve(std::int32_t pid, std::int32_t tid, unsigned cpumode, std::uint64_t ip) {
    const PerfTask& task = tasks_.find_or_add(pid, tid);
    emit(" ... thread: {}:{}\n", task.comm, task.tid);
    std::string_view dso = "[hypervisor]";
    if (cpumode == 1 || cpumode == 2) {
      const MappedFile* found = find_map(cpumode == 1 ? -1 : pid, ip);
      dso = found ? std::string_view(found->name) : std::string_view("<not found>");
    }
    emit(" ...... dso: {}\n", dso);
  }

  // perf's dso names: the kernel image is [kernel.kallsyms]; anonymous executable memory and
  // maps without a file are a perf map file's (JIT code's).
  void add_map(std::int32_t pid, std::uint64_t start, std::uint64_t length,
               std::string_view filename) {
    std::string name(filename);
    if (pid == -1 && name.starts_with("[kernel.kallsyms]")) {
      name = "[kernel.kallsyms]";
    } else if (name == "//anon" || name.starts_with("/dev/zero") ||
               name.starts_with("/anon_hugepage") || name.starts_with("[stack") ||
               name.starts_with("/SYSV") || name == "[heap]") {
      name = fmt::format("/tmp/perf-{}.map", pid);
    }
    auto& maps = maps_[pid];
    // A new mapping replaces what it overlaps, as the kernel's own mappings do: the parts of an
    // older one before and after it stay (perf's maps__fixup_overlappings).
    const std::uint64_t end = start + length;
    std::vector<MappedFile> kept;
    for (MappedFile& map : maps) {
      if (map.end <= start || end <= map.start) {
        kept.push_back(std::move(map));
        continue;
      }
      if (map.start < start) kept.push_back({map.start, start, map.name});
      if (end < map.end) kept.push_back({end, map.end, map.name});
    }
    kept.push_back({start, end, std::move(name)});
    maps = std::move(kept);
  }

  const MappedFile* find_map(std::int32_t pid, std::uint64_t ip) const {
    auto found = maps_.find(pid);
    if (found == maps_.end()) return nullptr;
    for (const MappedFile& map : found->second) {
      if (ip >= map.start && ip < map.end) return &map;
    }
    return nullptr;
  }

  // A new process starts with a copy of its parent's mappings; a new thread shares them.
  void fork(const TaskRecord& task) {
    tasks_.fork(task);
    const auto pid = static_cast<std::int32_t>(task.pid);
    const auto ppid = static_cast<std::int32_t>(task.ppid);
    if (pid != ppid && maps_.find(pid) == maps_.end()) {
      auto parent = maps_.find(ppid);
      if (parent != maps_.end()) maps_[pid] = parent->second;
    }
  }

  const PerfDataReader& reader_;
  const RawTraceDumpOptions& options_;
  std::FILE* out_;
  std::string path_;
  std::string text_;
  std::uint64_t all_sample_types_ = 0;
  bool first_sample_id_all_ = false;
  std::size_t known_events_ = 0;
  bool arm64_ = false;
  bool ordered_ = true;
  bool resolves_samples_ = true;
  bool branch_mode_ = false;
  std::vector<std::uint64_t> entries_;
  std::multimap<std::uint64_t, Pending> queue_;
  std::uint64_t next_flush_ = 0, max_timestamp_ = 0;
  PerfTaskTable tasks_;
  std::unordered_map<std::int32_t, std::vector<MappedFile>> maps_;
  Record decoded_;
  SampleRecord sample_;
};

}  // namespace

RawTraceDumpResult print_raw_trace(const PerfDataReader& reader, const RawTraceDumpOptions& options,
                                   std::FILE* out) {
  RawTraceDump dump(reader, options, out);
  RawTraceDumpResult result;
  result.error = dump.run();
  result.histogram_entries = dump.histogram_entries();
  return result;
}

}  // namespace perfscope::cli
