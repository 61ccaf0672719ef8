// perfscope script: the records of a perf.data file, one line per sample in perf script's format
// (ip, symbol+offset and file of the sample and of each call-chain entry; DWARF stacks unwound),
// or every decoded field as JSON lines (samples with their symbol and file).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <variant>

#include "commands.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/stack_resolver.hpp"
#include "perfscope/core/event_attr.hpp"

namespace perfscope::cli {

namespace {

namespace sf = abi::sample_format;

struct Fields {
  bool comm = true, pid = false, tid = true, cpu = true, time = true, period = true, event = true,
       ip = true, sym = true, symoff = true, dso = true;
};

Fields parse_fields(const std::string& text) {
  if (text.empty()) return {};
  Fields fields{false, false, false, false, false, false, false, false, false, false, false};
  std::size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    std::string name =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name == "comm")
      fields.comm = true;
    else if (name == "pid")
      fields.pid = true;
    else if (name == "tid")
      fields.tid = true;
    else if (name == "cpu")
      fields.cpu = true;
    else if (name == "time")
      fields.time = true;
    else if (name == "period")
      fields.period = true;
    else if (name == "event")
      fields.event = true;
    else if (name == "ip")
      fields.ip = true;
    else if (name == "sym")
      fields.sym = true;
    else if (name == "symoff")
      fields.symoff = true;
    else if (name == "dso")
      fields.dso = true;
    else {
      throw std::invalid_argument(
          fmt::format("-F: unknown field '{}'; the fields are "
                      "comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso",
                      name));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return fields;
}

std::string event_name(const PerfDataEventInfo& event) {
  if (!event.name.empty()) return event.name;
  return fmt::format("{}:{:#x}", event_type_name(event.attr.type), event.attr.config);
}

// Buffered stdout: one fwrite per 64 KiB.
class Output {
 public:
  fmt::memory_buffer buffer;
  void flush_if_full() {
    if (buffer.size() >= (1 << 16)) flush();
  }
  void flush() {
    std::fwrite(buffer.data(), 1, buffer.size(), stdout);
    buffer.clear();
  }
};

// The text printer formats by hand: fmt's width handling decodes UTF-8 for every padded field,
// which made formatting three quarters of `perfscope script`'s time.
void append(fmt::memory_buffer& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
}
void append_padded(fmt::memory_buffer& out, std::string_view text, std::size_t width, bool right) {
  std::size_t pad = text.size() < width ? width - text.size() : 0;
  if (!right) append(out, text);
  for (std::size_t i = 0; i < pad; ++i) out.push_back(' ');
  if (right) append(out, text);
}
std::string_view digits(char (&storage)[24], std::uint64_t value, int base = 10) {
  auto result = std::to_chars(storage, storage + sizeof storage, value, base);
  return {storage, static_cast<std::size_t>(result.ptr - storage)};
}
void append_number(fmt::memory_buffer& out, std::uint64_t value, std::size_t width, bool right,
                   int base = 10) {
  char storage[24];
  append_padded(out, digits(storage, value, base), width, right);
}
// pids and tids as perf prints them: signed (-1 is "no task", e.g. samples of idle CPUs).
void append_task_id(fmt::memory_buffer& out, std::uint32_t value, std::size_t width, bool right) {
  char storage[24];
  auto result = std::to_chars(storage, storage + sizeof storage, static_cast<std::int32_t>(value));
  append_padded(out, std::string_view(storage, static_cast<std::size_t>(result.ptr - storage)),
                width, right);
}
void append_zero_padded(fmt::memory_buffer& out, std::uint64_t value, std::size_t width) {
  char storage[24];
  std::string_view text = digits(storage, value);
  for (std::size_t i = text.size(); i < width; ++i) out.push_back('0');
  append(out, text);
}

// "symbol+0xoffset" (or "[unknown]") per resolved address, formatted once: the resolver numbers
// its cached answers, so the text is kept by that number.
class SymbolTexts {
 public:
  std::string_view text(const ResolvedAddress& where, bool with_offset) {
    if (where.symbol.symbol.empty()) return "[unknown]";
    if (!with_offset) return where.symbol.symbol;
    if (where.id == ResolvedAddress::no_id) return format(where);
    if (where.id >= texts_.size()) texts_.resize(where.id + 1);
    std::string& text = texts_[where.id];
    if (text.empty()) text = format(where);
    return text;
  }

 private:
  std::string_view format(const ResolvedAddress& where) {
    scratch_ = fmt::format("{}+{:#x}", where.symbol.symbol, where.function_offset());
    return scratch_;
  }
  std::vector<std::string> texts_;
  std::string scratch_;
};

// The recorded build ids (BUILD_ID feature) and options every printer's resolver starts from.
StackResolverOptions resolver_options(const SymbolizerOptions& symbols) {
  StackResolverOptions options;
  options.symbols = symbols;
  return options;
}

void add_recorded_build_ids(StackResolver& resolver, const PerfDataReader& reader) {
  for (const auto& entry : reader.features().build_ids) {
    bool kernel = (entry.misc & abi::record_misc::cpumode_mask) == abi::record_misc::kernel &&
                  entry.filename.starts_with("[kernel.kallsyms]");
    resolver.add_recorded_build_id(kernel ? std::string_view("[kernel.kallsyms]") : entry.filename,
                                   entry.build_id);
  }
}

class TextPrinter {
 public:
  TextPrinter(const PerfDataReader& reader, Fields fields, const SymbolizerOptions& symbols)
      : reader_(reader), fields_(fields), resolver_(resolver_options(symbols)) {
    add_recorded_build_ids(resolver_, reader);
    frames_.reserve(256);
    for (const auto& event : reader.events()) {
      names_.push_back(event_name(event));
      name_width_ = std::max(name_width_, names_.back().size());
      // perf script shows an event's fixed period when samples do not carry theirs.
      fixed_periods_.push_back(
          (event.attr.flags & abi::attr_flag::freq) != 0 ? 0 : event.attr.sample_period_or_freq);
    }
  }

  void print(const PerfDataRecord& record) {
    const auto& event = reader_.events()[record.event];
    if (record.view.header.type != static_cast<std::uint32_t>(abi::RecordType::sample)) {
      resolver_.observe(record.view, event.config);
      return;
    }
    DecodeError error;
    if (!decode_sample(record.view, event.config, sample_, error)) {
      ++undecodable_;
      return;
    }
    fmt::memory_buffer& out = output_.buffer;
    bool chain = sample_.has(sf::callchain);
    std::uint16_t cpumode = record.view.header.misc & abi::record_misc::cpumode_mask;
    if (fields_.comm) {
      std::string_view comm = resolver_.maps().comm_of(sample_.tid);
      char unknown[25];
      if (comm.empty()) {
        unknown[0] = ':';
        auto end = std::to_chars(unknown + 1, unknown + sizeof unknown,
                                 static_cast<std::int32_t>(sample_.tid))
                       .ptr;
        comm = std::string_view(unknown, static_cast<std::size_t>(end - unknown));
      }
      append_padded(out, comm, chain ? 0 : 16, true);
      out.push_back(' ');
    }
    if (fields_.pid) {
      append_task_id(out, sample_.pid, 5, true);
      out.push_back(fields_.tid ? '/' : ' ');
    }
    if (fields_.tid) {
      append_task_id(out, sample_.tid, 5, !fields_.pid);
      out.push_back(' ');
    }
    if (fields_.cpu && sample_.has(sf::cpu)) {
      out.push_back('[');
      append_zero_padded(out, sample_.cpu, 3);
      append(out, "] ");
    }
    if (fields_.time && sample_.has(sf::time)) {
      char stamp[48];
      char seconds[24];
      std::string_view whole = digits(seconds, sample_.time / 1000000000ULL);
      std::memcpy(stamp, whole.data(), whole.size());
      stamp[whole.size()] = '.';
      std::uint64_t micros = (sample_.time % 1000000000ULL) / 1000;
      for (std::size_t i = 6; i > 0; --i, micros /= 10)
        stamp[whole.size() + i] = static_cast<char>('0' + micros % 10);
      append_padded(out, std::string_view(stamp, whole.size() + 7), 12, true);
      append(out, ": ");
    }
    if (fields_.period) {
      if (sample_.has(sf::period)) {
        append_number(out, sample_.period, 10, true);
        out.push_back(' ');
      } else if (fixed_periods_[record.event] != 0) {
        append_number(out, fixed_periods_[record.event], 10, true);
        out.push_back(' ');
      }
    }
    if (fields_.event) {
      append_padded(out, names_[record.event], name_width_, true);
      append(out, ": ");
    }
    bool dwarf = sample_.has(sf::regs_user) && sample_.has(sf::stack_user);
    if ((chain || dwarf) && (fields_.ip || fields_.sym || fields_.dso)) {
      output_.buffer.push_back('\n');
      resolver_.resolve_sample(sample_, cpumode, frames_);
      for (const StackFrame& frame : frames_) chain_line(frame);
      output_.buffer.push_back('\n');
    } else {
      if (fields_.ip || fields_.sym || fields_.dso) {
        output_.buffer.push_back(' ');
        const ResolvedAddress& where = resolver_.resolve(sample_.pid, {sample_.ip, cpumode, false});
        print_frame(sample_.ip, where, where.symbol.symbol, false);
      }
      output_.buffer.push_back('\n');
    }
    output_.flush_if_full();
  }

  void finish() { output_.flush(); }
  std::size_t undecodable() const { return undecodable_; }

 private:
  // One call-chain entry: in a user file's mapping (and the vDSO's) the address within the
  // file, as the map gives it (ip - start + pgoff); kernel and anonymous memory as recorded.
  void chain_line(const StackFrame& frame) {
    output_.buffer.push_back('\t');
    print_frame(frame.where->dso_address, *frame.where, frame.function, frame.inlined);
    output_.buffer.push_back('\n');
  }

  // "    55d0c8a5b139 main+0x19 (/usr/bin/prog)": perf script's ip, sym and dso fields; an
  // inlined call's frame is its function's name and " (inlined)" after the file.
  void print_frame(std::uint64_t ip, const ResolvedAddress& where, std::string_view function,
                   bool inlined) {
    fmt::memory_buffer& out = output_.buffer;
    if (fields_.ip) append_number(out, ip, 16, true, 16);
    if (!fields_.sym && !fields_.dso) return;
    if (fields_.sym) {
      if (fields_.ip) out.push_back(' ');
      // "leaf+0x19" with symoff (perf's default), "leaf" without; "[unknown]" either way.
      append(out, inlined ? function : symbol_texts_.text(where, fields_.symoff));
    }
    if (fields_.dso) {
      if (fields_.ip || fields_.sym) out.push_back(' ');
      out.push_back('(');
      append(out, where.dso.empty() ? std::string_view("[unknown]") : where.dso);
      out.push_back(')');
    }
    if (inlined) append(out, " (inlined)");
  }

  const PerfDataReader& reader_;
  Fields fields_;
  StackResolver resolver_;
  SymbolTexts symbol_texts_;
  std::vector<StackFrame> frames_;
  SampleRecord sample_;
  Output output_;
  std::vector<std::string> names_;
  std::vector<std::uint64_t> fixed_periods_;
  std::size_t name_width_ = 0;
  std::size_t undecodable_ = 0;
};

nlohmann::json sample_id_json(const SampleId& id) {
  nlohmann::json out = nlohmann::json::object();
  if (id.has(sf::tid)) {
    out["pid"] = id.pid;
    out["tid"] = id.tid;
  }
  if (id.has(sf::time)) out["time"] = id.time;
  if (id.has(sf::id) || id.has(sf::identifier)) out["id"] = id.id;
  if (id.has(sf::stream_id)) out["stream_id"] = id.stream_id;
  if (id.has(sf::cpu)) out["cpu"] = id.cpu;
  return out;
}

std::string hex_bytes(std::span<const std::byte> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto byte : bytes)
    fmt::format_to(std::back_inserter(out), "{:02x}", static_cast<unsigned>(byte));
  return out;
}

nlohmann::json record_json(const PerfDataRecord& record, const PerfDataReader& reader,
                           const std::vector<std::string>& names) {
  nlohmann::json out;
  out["offset"] = record.offset;
  std::uint32_t type = record.view.header.type;
  std::string_view type_name = record_type_name(type);
  out["type"] = type_name.empty() ? fmt::format("{}", type) : std::string(type_name);
  out["misc"] = record.view.header.misc;
  out["size"] = record.view.header.size;
  if (type >= 64) {
    static constexpr const char* user_names[] = {"HEADER_ATTR",
                                                 "HEADER_EVENT_TYPE",
                                                 "HEADER_TRACING_DATA",
                                                 "HEADER_BUILD_ID",
                                                 "FINISHED_ROUND",
                                                 "ID_INDEX",
                                                 "AUXTRACE_INFO",
                                                 "AUXTRACE",
                                                 "AUXTRACE_ERROR",
                                                 "THREAD_MAP",
                                                 "CPU_MAP",
                                                 "STAT_CONFIG",
                                                 "STAT",
                                                 "STAT_ROUND",
                                                 "EVENT_UPDATE",
                                                 "TIME_CONV",
                                                 "HEADER_FEATURE",
                                                 "COMPRESSED",
                                                 "FINISHED_INIT",
                                                 "COMPRESSED2"};
    if (type - 64 < std::size(user_names)) out["type"] = user_names[type - 64];
    out["payload"] = hex_bytes(record.view.bytes.subspan(sizeof(abi::RecordHeader)));
    return out;
  }
  const auto& event = reader.events()[record.event];
  out["event"] = names[record.event];
  Record decoded;
  DecodeError error;
  if (!decode_record(record.view, event.config, decoded, error)) {
    out["error"] = fmt::format("{} at byte {} of the record", error.what, error.offset);
    return out;
  }
  std::visit(
      [&](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, SampleRecord>) {
          const SampleRecord& s = value;
          if (s.has(sf::identifier) || s.has(sf::id)) out["id"] = s.id;
          if (s.has(sf::ip)) out["ip"] = s.ip;
          if (s.has(sf::tid)) {
            out["pid"] = s.pid;
            out["tid"] = s.tid;
          }
          if (s.has(sf::time)) out["time"] = s.time;
          if (s.has(sf::addr)) out["addr"] = s.addr;
          if (s.has(sf::stream_id)) out["stream_id"] = s.stream_id;
          if (s.has(sf::cpu)) out["cpu"] = s.cpu;
          if (s.has(sf::period)) out["period"] = s.period;
          if (s.has(sf::read))
            out["read"] = std::vector<std::uint64_t>(s.read.words.begin(), s.read.words.end());
          if (s.has(sf::callchain))
            out["callchain"] = std::vector<std::uint64_t>(s.callchain.begin(), s.callchain.end());
          if (s.has(sf::raw)) out["raw"] = hex_bytes(s.raw);
          if (s.has(sf::branch_stack)) {
            nlohmann::json branches = nlohmann::json::array();
            for (const auto& entry : s.branch_stack.entries) {
              branches.push_back({{"from", entry.from}, {"to", entry.to}, {"flags", entry.flags}});
            }
            out["branch_stack"] = std::move(branches);
          }
          if (s.has(sf::regs_user)) {
            out["regs_user"] = {{"abi", s.regs_user.abi},
                                {"mask", s.regs_user.mask},
                                {"values", std::vector<std::uint64_t>(s.regs_user.values.begin(),
                                                                      s.regs_user.values.end())}};
          }
          if (s.has(sf::stack_user)) {
            out["stack_user_size"] = s.stack_user.size();
            out["stack_user_dyn_size"] = s.stack_user_dyn_size;
          }
          if (s.has(sf::weight) || s.has(sf::weight_struct)) out["weight"] = s.weight.full;
          if (s.has(sf::data_src)) out["data_src"] = s.data_src;
          if (s.has(sf::transaction)) out["transaction"] = s.transaction;
          if (s.has(sf::regs_intr)) {
            out["regs_intr"] = {{"abi", s.regs_intr.abi},
                                {"mask", s.regs_intr.mask},
                                {"values", std::vector<std::uint64_t>(s.regs_intr.values.begin(),
                                                                      s.regs_intr.values.end())}};
          }
          if (s.has(sf::phys_addr)) out["phys_addr"] = s.phys_addr;
          if (s.has(sf::cgroup)) out["cgroup"] = s.cgroup;
          if (s.has(sf::data_page_size)) out["data_page_size"] = s.data_page_size;
          if (s.has(sf::code_page_size)) out["code_page_size"] = s.code_page_size;
          if (s.has(sf::aux)) out["aux"] = hex_bytes(s.aux);
        } else if constexpr (std::is_same_v<T, UnknownRecord>) {
          out["payload"] = hex_bytes(value.payload);
        } else {
          if constexpr (std::is_same_v<T, MmapRecord> || std::is_same_v<T, Mmap2Record>) {
            out["pid"] = value.pid;
            out["tid"] = value.tid;
            out["addr"] = value.addr;
            out["len"] = value.len;
            out["pgoff"] = value.pgoff;
            out["filename"] = std::string(value.filename);
            if constexpr (std::is_same_v<T, Mmap2Record>) {
              if (value.has_build_id) {
                out["build_id"] = hex_bytes(value.build_id);
              } else {
                out["maj"] = value.maj;
                out["min"] = value.min;
                out["ino"] = value.ino;
                out["ino_generation"] = value.ino_generation;
              }
              out["prot"] = value.prot;
              out["flags"] = value.flags;
            }
          } else if constexpr (std::is_same_v<T, LostRecord>) {
            out["id"] = value.id;
            out["lost"] = value.lost;
          } else if constexpr (std::is_same_v<T, CommRecord>) {
            out["pid"] = value.pid;
            out["tid"] = value.tid;
            out["comm"] = std::string(value.comm);
            out["exec"] = value.exec;
          } else if constexpr (std::is_same_v<T, TaskRecord>) {
            out["pid"] = value.pid;
            out["ppid"] = value.ppid;
            out["tid"] = value.tid;
            out["ptid"] = value.ptid;
            out["task_time"] = value.time;
          } else if constexpr (std::is_same_v<T, ThrottleRecord>) {
            out["throttle_time"] = value.time;
            out["id"] = value.id;
            out["stream_id"] = value.stream_id;
          } else if constexpr (std::is_same_v<T, ReadRecord>) {
            out["pid"] = value.pid;
            out["tid"] = value.tid;
            out["values"] =
                std::vector<std::uint64_t>(value.values.words.begin(), value.values.words.end());
          } else if constexpr (std::is_same_v<T, AuxRecord>) {
            out["aux_offset"] = value.aux_offset;
            out["aux_size"] = value.aux_size;
            out["flags"] = value.flags;
          } else if constexpr (std::is_same_v<T, ItraceStartRecord>) {
            out["pid"] = value.pid;
            out["tid"] = value.tid;
          } else if constexpr (std::is_same_v<T, LostSamplesRecord>) {
            out["lost"] = value.lost;
          } else if constexpr (std::is_same_v<T, SwitchRecord>) {
            out["out"] = value.out;
            out["preempted"] = value.preempted;
            if (value.cpu_wide) {
              out["next_prev_pid"] = value.next_prev_pid;
              out["next_prev_tid"] = value.next_prev_tid;
            }
          } else if constexpr (std::is_same_v<T, NamespacesRecord>) {
            out["pid"] = value.pid;
            out["tid"] = value.tid;
            out["dev_inode_pairs"] = std::vector<std::uint64_t>(value.dev_inode_pairs.begin(),
                                                                value.dev_inode_pairs.end());
          } else if constexpr (std::is_same_v<T, KsymbolRecord>) {
            out["addr"] = value.addr;
            out["len"] = value.len;
            out["ksym_type"] = value.ksym_type;
            out["flags"] = value.flags;
            out["name"] = std::string(value.name);
          } else if constexpr (std::is_same_v<T, BpfEventRecord>) {
            out["event_type"] = value.event_type;
            out["flags"] = value.flags;
            out["bpf_id"] = value.id;
            out["tag"] = hex_bytes(value.tag);
          } else if constexpr (std::is_same_v<T, CgroupRecord>) {
            out["cgroup_id"] = value.id;
            out["path"] = std::string(value.path);
          } else if constexpr (std::is_same_v<T, TextPokeRecord>) {
            out["addr"] = value.addr;
            out["old_bytes"] = hex_bytes(value.old_bytes);
            out["new_bytes"] = hex_bytes(value.new_bytes);
          } else if constexpr (std::is_same_v<T, AuxOutputHwIdRecord>) {
            out["hw_id"] = value.hw_id;
          } else if constexpr (std::is_same_v<T, DeferredCallchainRecord>) {
            out["cookie"] = value.cookie;
            out["ips"] = std::vector<std::uint64_t>(value.ips.begin(), value.ips.end());
          }
          out["sample_id"] = sample_id_json(value.sample_id);
        }
      },
      decoded);
  return out;
}

}  // namespace

ScriptCommand::ScriptCommand(CLI::App& app) {
  app_ = app.add_subcommand("script", "Print the records of a perf.data file");
  app_->add_option("-i,--input", input_, "Input file (default perf.data; - reads stdin)");
  app_->add_option("-F,--fields", fields_,
                   "Sample fields: comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso (sym "
                   "alone names the function, symoff adds +0xOFFSET, as in perf script)");
  app_->add_flag("--full-names", full_names_,
                 "C++ names with parameter lists and return types (perf shows them with -v)");
  app_->add_flag("--json", json_, "Every record with every decoded field, one JSON object a line");
  app_->add_flag("!--no-sort", ordered_, "Print records in file order, not time order");
}

int ScriptCommand::run() {
  PerfDataReader reader = PerfDataReader::open(input_);
  for (const auto& note : reader.notes()) fmt::print(stderr, "perfscope: {}: {}\n", input_, note);
  std::optional<PerfDataError> error;
  std::size_t undecodable = 0;
  SymbolizerOptions symbols;
  symbols.parameter_lists = full_names_;
  if (json_) {
    std::vector<std::string> names;
    for (const auto& event : reader.events()) names.push_back(event_name(event));
    Output output;
    StackResolver resolver(resolver_options(symbols));
    add_recorded_build_ids(resolver, reader);
    auto visit = [&](const PerfDataRecord& record) {
      nlohmann::json json = record_json(record, reader, names);
      if (record.view.type() != static_cast<std::uint32_t>(abi::RecordType::sample)) {
        if (record.view.type() < 64)
          resolver.observe(record.view, reader.events()[record.event].config);
      } else if (json.contains("ip") && json.contains("pid")) {
        auto cpumode =
            static_cast<std::uint16_t>(record.view.header.misc & abi::record_misc::cpumode_mask);
        const ResolvedAddress& where = resolver.resolve(
            json["pid"].get<std::uint32_t>(), {json["ip"].get<std::uint64_t>(), cpumode, false});
        if (!where.symbol.symbol.empty()) {
          json["sym"] = std::string(where.symbol.symbol);
          json["symoff"] = where.function_offset();
        }
        json["dso"] = where.dso.empty() ? std::string("[unknown]") : std::string(where.dso);
      }
      auto text = json.dump();
      output.buffer.append(text);
      output.buffer.push_back('\n');
      output.flush_if_full();
    };
    error = ordered_ ? reader.for_each_record_ordered(visit) : reader.for_each_record(visit);
    output.flush();
  } else {
    TextPrinter printer(reader, parse_fields(fields_), symbols);
    auto visit = [&](const PerfDataRecord& record) { printer.print(record); };
    error = ordered_ ? reader.for_each_record_ordered(visit) : reader.for_each_record(visit);
    printer.finish();
    undecodable = printer.undecodable();
  }
  std::fflush(stdout);
  if (undecodable != 0) {
    fmt::print(stderr, "perfscope: {} samples could not be decoded and were left out\n",
               undecodable);
  }
  if (error) {
    fmt::print(stderr, "perfscope: {}: {} (the records before it were printed)\n", input_,
               error->what());
    return 1;
  }
  return 0;
}

}  // namespace perfscope::cli
