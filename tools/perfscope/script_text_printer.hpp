// perf script's text, one sample (and its frames) at a time: the columns and frames of perf
// script -F, from a resolver that follows the recording's tasks and mappings.
#pragma once

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/event_switch.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/sample_selection.hpp"
#include "perfscope/analysis/profile/stack_resolver.hpp"
#include "perfscope/analysis/recording/off_cpu_state.hpp"
#include "perfscope/core/event_attr.hpp"
#include "perfscope/core/safe_text.hpp"
#include "script_fields.hpp"
#include "script_output.hpp"
#include "script_sample_filter.hpp"
#include "script_side_band.hpp"
#include "script_tracepoints.hpp"

namespace perfscope::cli {

inline std::string event_name(const PerfDataEventInfo& event) {
  if (!event.name.empty()) return event.name;
  return fmt::format("{}:{:#x}", event_type_name(event.attr.type), event.attr.config);
}

namespace script_text {

namespace sf = abi::sample_format;

// The text printer formats by hand into reserved room: fmt's width handling decodes UTF-8 for
// every padded field, which once made formatting three quarters of `perfscope script`'s time.
inline char* put(char* at, std::string_view text) {
  std::memcpy(at, text.data(), text.size());
  return at + text.size();
}
inline char* put_padded(char* at, std::string_view text, std::size_t width, bool right) {
  std::size_t pad = text.size() < width ? width - text.size() : 0;
  if (!right) at = put(at, text);
  std::memset(at, ' ', pad);
  at += pad;
  if (right) at = put(at, text);
  return at;
}
inline std::string_view digits(char (&storage)[24], std::uint64_t value, int base = 10) {
  auto result = std::to_chars(storage, storage + sizeof storage, value, base);
  return {storage, static_cast<std::size_t>(result.ptr - storage)};
}
inline char* put_number(char* at, std::uint64_t value, std::size_t width, bool right,
                        int base = 10) {
  char storage[24];
  return put_padded(at, digits(storage, value, base), width, right);
}
// pids and tids as perf prints them: signed (-1 is "no task", e.g. samples of idle CPUs).
inline char* put_task_id(char* at, std::uint32_t value, std::size_t width, bool right) {
  char storage[24];
  auto result = std::to_chars(storage, storage + sizeof storage, static_cast<std::int32_t>(value));
  return put_padded(at, std::string_view(storage, static_cast<std::size_t>(result.ptr - storage)),
                    width, right);
}
inline char* put_zero_padded(char* at, std::uint64_t value, std::size_t width) {
  char storage[24];
  std::string_view text = digits(storage, value);
  for (std::size_t i = text.size(); i < width; ++i) *at++ = '0';
  return put(at, text);
}
// Seconds with six decimals, right-aligned in 12 columns: "   699.776431".
inline char* put_time(char* at, std::uint64_t nanoseconds) {
  char stamp[48];
  char seconds[24];
  std::string_view whole = digits(seconds, nanoseconds / 1000000000ULL);
  std::memcpy(stamp, whole.data(), whole.size());
  stamp[whole.size()] = '.';
  std::uint64_t micros = (nanoseconds % 1000000000ULL) / 1000;
  for (std::size_t i = 6; i > 0; --i, micros /= 10) {
    stamp[whole.size() + i] = static_cast<char>('0' + micros % 10);
  }
  return put_padded(at, std::string_view(stamp, whole.size() + 7), 12, true);
}

// The recorded build ids (BUILD_ID feature) and options every printer's resolver starts from.
inline StackResolverOptions resolver_options(const SymbolizerOptions& symbols) {
  StackResolverOptions options;
  options.symbols = symbols;
  return options;
}

inline void add_recorded_build_ids(StackResolver& resolver, const PerfDataReader& reader) {
  resolver.set_recording_files(reader.features());
  std::vector<abi::PerfEventAttr> attrs;
  for (const auto& event : reader.events()) attrs.push_back(event.attr);
  resolver.set_sample_clock(attrs);
  for (const auto& entry : reader.features().build_ids) {
    bool kernel = (entry.misc & abi::record_misc::cpumode_mask) == abi::record_misc::kernel &&
                  entry.filename.starts_with("[kernel.kallsyms]");
    resolver.add_recorded_build_id(kernel ? std::string_view("[kernel.kallsyms]") : entry.filename,
                                   entry.build_id);
  }
}

// The samples script prints, as perf script picks them: --time, --cpu, --pid, --tid, --comms, and
// the sampled ip's function and file (-S/--symbols, --dsos).
struct ScriptSelection {
  TimeRanges times;
  EventSwitchWindows switches;  // --switch-on, --switch-off
  std::vector<bool> cpus;       // by CPU number; empty: every CPU
  std::vector<std::uint32_t> pids, tids;
  std::vector<std::string> comms, symbols, dsos;
};

// How script prints, beyond the fields.
struct ScriptTextOptions {
  bool raw_names = false;
  SideBandSelection side_band;   // --show-*-events
  bool hide_call_graph = false;  // -G: the sampled ip alone, on the sample's line
  // --max-stack: the call-chain entries printed (each with the calls inlined at it).
  std::size_t max_stack = ~std::size_t{0};
  bool nanoseconds = false;       // --ns: nine decimals
  bool full_source_path = false;  // --full-source-path: srcline's file by its whole path
  bool relative_time = false;     // --reltime: since the first printed record
  bool delta_time = false;        // --deltatime: since the previous printed record
  ScriptSelection selection;
  SampleFilter* filter = nullptr;  // --dlfilter
};

class TextPrinter {
 public:
  TextPrinter(const PerfDataReader& reader, const ScriptFieldSpec& spec,
              const SymbolizerOptions& symbols, const ScriptTracepoints& tracepoints,
              const ScriptTextOptions& options)
      : reader_(reader),
        resolver_(resolver_options(symbols)),
        tracepoints_(tracepoints),
        options_(options) {
    const bool raw_names = options.raw_names;
    add_recorded_build_ids(resolver_, reader);
    frames_.reserve(256);
    for (const auto& event : reader.events()) {
      bool tracepoint = event.attr.type == static_cast<std::uint32_t>(abi::EventType::tracepoint);
      per_event_.push_back(
          spec.for_event(tracepoint, (event.attr.sample_type & sf::callchain) != 0));
      per_event_.back().raw_names = raw_names;
      leaf_texts_.emplace_back();
      chain_texts_.emplace_back();
      names_.push_back(safe_name(event_name(event)));
      name_width_ = std::max(name_width_, names_.back().size());
      // perf script shows an event's fixed period when samples do not carry theirs.
      fixed_periods_.push_back(
          (event.attr.flags & abi::attr_flag::freq) != 0 ? 0 : event.attr.sample_period_or_freq);
    }
  }

  // `owned`: this printer prints the record (a worker's printer prints the records of its own
  // chunks and follows the tasks and mappings of the others').
  void print(const PerfDataRecord& record, bool owned = true) {
    const auto& event = reader_.events()[record.event];
    const std::uint32_t type = record.view.header.type;
    if (type != static_cast<std::uint32_t>(abi::RecordType::sample)) {
      const bool shown = owned && options_.side_band.shows(type);
      // perf prints a task's exit before it ends the task, every other record after it applied.
      const bool exit = type == static_cast<std::uint32_t>(abi::RecordType::exit);
      if (shown && exit) print_side_band(record);
      resolver_.observe(record.view, event.config);
      ++task_epoch_;
      if (shown && !exit) print_side_band(record);
      return;
    }
    fields_ = per_event_[record.event];
    event_ = record.event;
    DecodeError error;
    if (!decode_sample(record.view, event.config, sample_, error)) {
      ++undecodable_;
      return;
    }
    bool chain = sample_.has(sf::callchain) && !options_.hide_call_graph;
    auto cpumode =
        static_cast<std::uint16_t>(record.view.header.misc & abi::record_misc::cpumode_mask);
    if (options_.filter != nullptr) {
      SampleFilterInput input{record, event, sample_, cpumode, resolver_};
      bool keep =
          options_.filter->keep_early(input) && selected(cpumode) && options_.filter->keep(input);
      // What the filter printed goes after the samples before it, as in perf (a dlfilter sees
      // the samples in order, on this thread).
      if (options_.filter->has_pending_output()) {
        output_.flush();
        std::fflush(stdout);
        options_.filter->write_pending_output();
      }
      if (!keep) return;
    } else if (!selected(cpumode)) {
      return;
    }
    std::string_view task = task_columns(chain);
    // Room for every column before the frames: the task's, "[cpu] ", the time, the period and
    // the event's name, each bounded.
    char* at = output_.reserve(task.size() + name_width_ + 128);
    at = put(at, task);
    at = put_cpu_and_time(at, sample_.has(sf::cpu), sample_.cpu, sample_.has(sf::time),
                          sample_.time);
    if (fields_.period) {
      if (sample_.has(sf::period)) {
        at = put_number(at, sample_.period, 10, true);
        *at++ = ' ';
      } else if (fixed_periods_[record.event] != 0) {
        at = put_number(at, fixed_periods_[record.event], 10, true);
        *at++ = ' ';
      }
    }
    if (fields_.event) {
      at = put_padded(at, names_[record.event], name_width_, true);
      at = put(at, ": ");
      // An off-CPU interval's state (its RAW payload's letter), which perf shows as a dump.
      if (event.name == off_cpu_event_name && sample_.has(sf::raw) && !sample_.raw.empty()) {
        at = put(at, "state=");
        at = put(at, thread_state_name(
                         thread_state_from_letter(static_cast<char>(sample_.raw.front()))));
        *at++ = ' ';
      }
    }
    if (fields_.addr && sample_.has(sf::addr)) {
      output_.commit(at);
      std::string_view text = addr_text(cpumode);
      at = output_.reserve(text.size() + 256);
      at = put(at, text);
    }
    if (fields_.trace && sample_.has(sf::raw) && tracepoints_.decodes(record.event)) {
      output_.commit(at);
      std::string payload = tracepoints_.text(record.event, sample_.raw);
      if (!fields_.raw_names && !is_terminal_safe(payload)) payload = terminal_safe(payload);
      at = output_.reserve(payload.size() + 256);
      at = put(at, payload);
    }
    // perf script prints the branch stack after the sample's own ip (before its call chain).
    std::string branches =
        fields_.brstack && sample_.has(sf::branch_stack) ? brstack_text() : std::string();
    bool dwarf =
        sample_.has(sf::regs_user) && sample_.has(sf::stack_user) && !options_.hide_call_graph;
    bool frames = fields_.ip || fields_.sym || fields_.dso;
    if ((chain || dwarf) && frames) {
      output_.commit(at);
      at = output_.reserve(branches.size() + 2);
      at = put(at, branches);
      *at++ = '\n';
      output_.commit(at);
      resolver_.resolve_sample(sample_, cpumode, frames_,
                               reader_.events()[record.event].config.branch_sample_type);
      keep_max_stack(dwarf);
      for (const StackFrame& frame : frames_) {
        // One call-chain entry: in a user file's mapping (and the vDSO's) the address within
        // the file, as the map gives it (ip - start + pgoff); kernel and anonymous memory as
        // recorded.
        std::string_view text = frame.inlined ? inlined_text(frame) : chain_text(*frame.where);
        at = output_.reserve(text.size() + 2);
        *at++ = '\t';
        at = put(at, text);
        *at++ = '\n';
        output_.commit(at);
        if (fields_.srcline) append_srcline(frame.source, *frame.where);
      }
      output_.append("\n");
    } else if (frames) {
      output_.commit(at);
      const ResolvedAddress& where = resolver_.resolve(sample_.pid, {sample_.ip, cpumode, false});
      std::string_view text = leaf_text(where);
      at = output_.reserve(text.size() + branches.size() + 2);
      *at++ = ' ';
      at = put(at, text);
      at = put(at, branches);
      *at++ = '\n';
      output_.commit(at);
      if (fields_.srcline) append_srcline(where.symbol.source, where);
    } else {
      output_.commit(at);
      at = output_.reserve(branches.size() + 2);
      at = put(at, branches);
      *at++ = '\n';
      output_.commit(at);
    }
  }

  void finish() { output_.flush(); }
  std::size_t undecodable() const { return undecodable_; }
  // Side-band records --show-*-events asked for that could not be decoded (left unprinted).
  std::size_t undecodable_side_band() const { return undecodable_side_band_; }
  void collect_output() { output_.collect(); }
  std::vector<char> take_output() { return output_.take(); }

 private:
  template <typename T>
  static bool listed(const std::vector<T>& list, const T& value) {
    return list.empty() || std::find(list.begin(), list.end(), value) != list.end();
  }
  bool selected(std::uint16_t cpumode) {
    const ScriptSelection& selection = options_.selection;
    if (!selection.times.empty() &&
        (!sample_.has(sf::time) || !selection.times.contains(sample_.time)))
      return false;
    if (!selection.switches.keeps(event_, sample_.time)) return false;
    if (!selection.cpus.empty() && (!sample_.has(sf::cpu) || sample_.cpu >= selection.cpus.size() ||
                                    !selection.cpus[sample_.cpu]))
      return false;
    if (!listed(selection.pids, sample_.pid) || !listed(selection.tids, sample_.tid)) return false;
    if (!selection.comms.empty() &&
        !listed(selection.comms, std::string(resolver_.maps().comm_of(sample_.tid)))) {
      return false;
    }
    if (selection.symbols.empty() && selection.dsos.empty()) return true;
    const ResolvedAddress& where = resolver_.resolve(sample_.pid, {sample_.ip, cpumode, false});
    if (!selection.symbols.empty() &&
        !listed(selection.symbols, std::string(where.symbol.symbol))) {
      return false;
    }
    if (!selection.dsos.empty()) {
      std::string_view path = where.dso.empty() ? std::string_view("[unknown]") : where.dso;
      std::string_view file = path.substr(path.rfind('/') + 1);
      return std::any_of(selection.dsos.begin(), selection.dsos.end(),
                         [&](const std::string& dso) { return dso == path || dso == file; });
    }
    return true;
  }

  // The comm, pid and tid columns of the sample's thread ("              sh 16546 "), made
  // once per thread until a record changes what the threads are called.
  std::string_view task_columns(bool chain) {
    TaskText& entry = task_texts_[sample_.tid % task_texts_.size()];
    if (entry.epoch == task_epoch_ && entry.tid == sample_.tid && entry.pid == sample_.pid &&
        entry.chain == chain && entry.event == event_) {
      return entry.text;
    }
    entry.epoch = task_epoch_;
    entry.tid = sample_.tid;
    entry.pid = sample_.pid;
    entry.chain = chain;
    entry.event = event_;
    std::string_view comm = resolver_.maps().comm_of(sample_.tid);
    std::string unknown;
    if (comm.empty()) {
      unknown = fmt::format(":{}", static_cast<std::int32_t>(sample_.tid));
      comm = unknown;
    }
    std::string safe_comm = safe_name(comm);
    entry.text.resize(safe_comm.size() + 64);
    char* start = entry.text.data();
    char* at = put_task(start, safe_comm, sample_.pid, sample_.tid, chain);
    entry.text.resize(static_cast<std::size_t>(at - start));
    return entry.text;
  }
  // perf's comm, pid and tid columns; room for comm.size() + 64 bytes.
  char* put_task(char* at, std::string_view comm, std::uint32_t pid, std::uint32_t tid,
                 bool chain) const {
    if (fields_.comm) {
      at = put_padded(at, comm, chain ? 0 : 16, true);
      *at++ = ' ';
    }
    if (fields_.pid) {
      at = put_task_id(at, pid, 5, true);
      *at++ = fields_.tid ? '/' : ' ';
    }
    if (fields_.tid) {
      at = put_task_id(at, tid, 5, !fields_.pid);
      *at++ = ' ';
    }
    return at;
  }

  // "ffffffff81d35179 get_random_u64+0xd9 ([kernel.kallsyms])": perf script's ip, sym and dso
  // fields, made once per resolved address for the sample's own ip (as recorded) and once for
  // call-chain entries (as an address of its file).
  std::string_view leaf_text(const ResolvedAddress& where) {
    return cached_text(leaf_texts_[event_], where, where.address.ip);
  }
  std::string_view chain_text(const ResolvedAddress& where) {
    return cached_text(chain_texts_[event_], where, where.dso_address);
  }
  std::string_view cached_text(std::vector<std::string>& texts, const ResolvedAddress& where,
                               std::uint64_t ip) {
    if (where.id == ResolvedAddress::no_id) {
      scratch_ = frame_text(ip, where, symbol_text(where), false);
      return scratch_;
    }
    if (where.id >= texts.size()) texts.resize(where.id + 1);
    std::string& text = texts[where.id];
    if (text.empty()) text = frame_text(ip, where, symbol_text(where), false);
    return text;
  }
  // An inlined call's frame as perf script prints it: its function's name with the offset of
  // the function it was inlined into ("_PyEval_EvalFrame+0xcf"), no file, then " (inlined)".
  std::string_view inlined_text(const StackFrame& frame) {
    std::string name = fields_.symoff
                           ? fmt::format("{}+{:#x}", frame.function, frame.where->function_offset())
                           : std::string(frame.function);
    scratch_ = frame_text(frame.where->dso_address, *frame.where, name, true);
    return scratch_;
  }
  // "leaf+0x19" with symoff (perf's default), "leaf" without; "[unknown]" either way.
  std::string symbol_text(const ResolvedAddress& where) const {
    if (where.symbol.symbol.empty()) return "[unknown]";
    if (!fields_.symoff) return std::string(where.symbol.symbol);
    return fmt::format("{}+{:#x}", where.symbol.symbol, where.function_offset());
  }
  std::string frame_text(std::uint64_t ip, const ResolvedAddress& where, std::string_view symbol,
                         bool inlined) const {
    std::string text;
    if (fields_.ip) fmt::format_to(std::back_inserter(text), "{:>16x}", ip);
    if (fields_.sym) {
      if (fields_.ip) text.push_back(' ');
      text.append(safe_name(symbol));
    }
    if (fields_.dso && !inlined) {
      if (fields_.ip || fields_.sym) text.push_back(' ');
      text.push_back('(');
      text.append(where.dso.empty() ? std::string("[unknown]") : safe_name(where.dso));
      text.push_back(')');
    }
    if (inlined) text.append(" (inlined)");
    return text;
  }

  // --max-stack N: the first N call-chain entries, each with the calls inlined at it (printed
  // before it), as perf stops its walk of the chain. A DWARF-unwound stack is two walks in perf,
  // the kernel's chain and the user stack's unwinding, each stopped at N.
  void keep_max_stack(bool dwarf) {
    if (options_.max_stack >= frames_.size()) return;
    std::size_t kernel_entries = 0, user_entries = 0, kept = 0;
    for (const StackFrame& frame : frames_) {
      bool kernel = dwarf && frame.where->kernel;
      std::size_t& entries = kernel || !dwarf ? kernel_entries : user_entries;
      if (entries == options_.max_stack) continue;
      if (!frame.inlined) ++entries;
      frames_[kept++] = frame;
    }
    frames_.resize(kept);
  }

  // "[001] " and "34791.372397: ", as the fields ask and the record has them; --reltime and
  // --deltatime count from the first and the previous record printed, as perf's.
  char* put_cpu_and_time(char* at, bool has_cpu, std::uint32_t cpu, bool has_time,
                         std::uint64_t time) {
    if (fields_.cpu && has_cpu) {
      *at++ = '[';
      at = put_zero_padded(at, cpu, 3);
      at = put(at, "] ");
    }
    if (fields_.time && has_time) {
      std::uint64_t shown = time;
      if (options_.relative_time) {
        if (first_time_ == 0) first_time_ = time;
        shown = time - first_time_;
      } else if (options_.delta_time) {
        shown = previous_time_ != 0 ? time - previous_time_ : 0;
        previous_time_ = time;
      }
      if (options_.nanoseconds) {
        char seconds[24];
        at = put_padded(at, digits(seconds, shown / 1000000000ULL), 5, true);
        *at++ = '.';
        at = put_zero_padded(at, shown % 1000000000ULL, 9);
      } else {
        at = put_time(at, shown);
      }
      at = put(at, ": ");
    }
    return at;
  }

  // --show-*-events: a side-band record as perf script prints it, after the columns of its
  // event ("              sh 13291 37077.889932: PERF_RECORD_FORK(13293:13293):(13291:13291)").
  void print_side_band(const PerfDataRecord& record) {
    if (record.view.header.type ==
        static_cast<std::uint32_t>(abi::UserRecordType::finished_round)) {
      output_.append("PERF_RECORD_FINISHED_ROUND\n");
      return;
    }
    const auto& event = reader_.events()[record.event];
    DecodeError error;
    if (!decode_record(record.view, event.config, side_band_, error)) {
      ++undecodable_side_band_;
      return;
    }
    SampleId id = std::visit(
        [](const auto& decoded) {
          if constexpr (requires { decoded.sample_id; }) {
            return decoded.sample_id;
          } else {
            return SampleId{};
          }
        },
        side_band_);
    const SideBandTask task = side_band_task(side_band_);
    if (!event.config.sample_id_all) {
      // perf's own stand-ins where the record carries no sample_id: the task it is about, at
      // time 0 (a fork's or exit's own time) on CPU 0.
      id.fields = sf::tid | sf::time | sf::cpu;
      id.pid = task.pid;
      id.tid = task.tid;
      id.cpu = 0;
      const auto* change = std::get_if<TaskRecord>(&side_band_);
      id.time = change ? change->time : 0;
    }
    const ScriptSelection& selection = options_.selection;
    if (!selection.cpus.empty() && id.has(sf::cpu) &&
        (id.cpu >= selection.cpus.size() || !selection.cpus[id.cpu])) {
      return;
    }
    fields_ = per_event_[record.event];
    event_ = record.event;
    std::uint32_t comm_tid = task.of_record ? task.tid : id.tid;
    std::string comm = std::string(resolver_.maps().comm_of(comm_tid));
    if (comm.empty()) comm = fmt::format(":{}", static_cast<std::int32_t>(comm_tid));
    comm = safe_name(comm);
    const bool chain =
        fields_.ip && (event.attr.sample_type & sf::callchain) != 0 && !options_.hide_call_graph;
    char* at = output_.reserve(comm.size() + 160);
    at = put_task(at, comm, id.pid, id.tid, chain);
    at = put_cpu_and_time(at, id.has(sf::cpu), id.cpu, id.has(sf::time), id.time);
    output_.commit(at);
    SideBandNames names;
    names.name = [&](std::string_view name) { return safe_name(name); };
    names.kernel_symbol = [&](std::uint64_t address) {
      const ResolvedAddress& where =
          resolver_.resolve(id.pid, {address, abi::record_misc::kernel, false});
      if (where.symbol.symbol.empty()) return std::string();
      return fmt::format("{}+{:#x}", safe_name(where.symbol.symbol), where.symbol.offset);
    };
    output_.append(side_band_text(side_band_, record.view.header, names));
  }

  // perf script's addr field: the data address, then with sym its symbol and with dso its file
  // (" 7ffc72298ff0 [unknown]"), resolved in the sample's process.
  std::string_view addr_text(std::uint16_t cpumode) {
    scratch_ = fmt::format("{:>16x}", sample_.addr);
    if (fields_.sym || fields_.dso) {
      const ResolvedAddress& where = resolver_.resolve(sample_.pid, {sample_.addr, cpumode, false});
      if (fields_.sym) scratch_ += ' ' + safe_name(symbol_text(where));
      if (fields_.dso) {
        scratch_ +=
            " (" + (where.dso.empty() ? std::string("[unknown]") : safe_name(where.dso)) + ')';
      }
    }
    scratch_ += ' ';
    return scratch_;
  }
  // perf script's brstack: " 0xFROM/0xTO/P/-/-/CYCLES/TYPE" per entry (M mispredicted, P
  // predicted, - unknown; X in a transaction; A aborted).
  std::string brstack_text() const {
    namespace bf = abi::branch_flags;
    std::string text;
    for (const abi::PerfBranchEntry& entry : sample_.branch_stack.entries) {
      char prediction = bf::mispred.get(entry.flags)     ? 'M'
                        : bf::predicted.get(entry.flags) ? 'P'
                                                         : '-';
      fmt::format_to(std::back_inserter(text), " {:#x}/{:#x}/{}/{}/{}/{}/{} ", entry.from, entry.to,
                     prediction, bf::in_tx.get(entry.flags) ? 'X' : '-',
                     bf::abort.get(entry.flags) ? 'A' : '-', bf::cycles.get(entry.flags),
                     branch_type_text(bf::type.get(entry.flags)));
    }
    return text;
  }
  static std::string_view branch_type_text(std::uint64_t type) {
    static constexpr std::array<std::string_view, 16> names{
        "",       "COND",      "UNCOND",   "IND",  "CALL", "IND_CALL", "RET",   "SYSCALL",
        "SYSRET", "COND_CALL", "COND_RET", "ERET", "IRQ",  "SERROR",   "NO_TX", "EXTEND_ABI"};
    return type < names.size() ? names[type] : std::string_view();
  }
  // perf script's srcline: "  file.c:27" on a line of its own; without a line, the file and
  // the address in it ("  libc.so.6[27e40]"), "  ??:0" without either.
  void append_srcline(const SourceLocation& source, const ResolvedAddress& where) {
    auto base_name = [](std::string_view path) {
      std::size_t slash = path.rfind('/');
      return slash == std::string_view::npos ? path : path.substr(slash + 1);
    };
    std::string text;
    if (!source.file.empty()) {
      std::string_view file = options_.full_source_path ? source.file : base_name(source.file);
      text = fmt::format("  {}:{}\n", safe_name(file), source.line);
    } else if (where.symbol.file_read && !where.kernel && where.dso.starts_with('/')) {
      return;  // perf: addr2line answered ??:0 for a file it read, and nothing is printed
    } else if (!where.dso.empty()) {
      text = fmt::format("  {}[{:x}]\n", safe_name(base_name(where.dso)), where.dso_address);
    } else {
      text = "  ??:0\n";
    }
    output_.append(text);
  }

  // A name a recorded process chose (comm, file, symbol, event): terminal-safe unless
  // --raw-names. Called once per thread, address or event: the texts are cached.
  std::string safe_name(std::string_view text) const {
    if (fields_.raw_names || is_terminal_safe(text)) return std::string(text);
    return terminal_safe(text);
  }

  struct TaskText {
    std::uint64_t epoch = ~std::uint64_t{0};
    std::uint32_t pid = 0, tid = 0;
    bool chain = false;
    std::uint32_t event = 0;  // whose fields made it
    std::string text;
  };

  const PerfDataReader& reader_;
  std::vector<ScriptFields> per_event_;  // by event index
  ScriptFields fields_;                  // the current sample's event's
  std::uint32_t event_ = 0;              // the current sample's event
  StackResolver resolver_;
  const ScriptTracepoints& tracepoints_;
  const ScriptTextOptions& options_;
  std::vector<StackFrame> frames_;
  SampleRecord sample_;
  Output output_;
  std::vector<std::string> names_;
  std::vector<std::uint64_t> fixed_periods_;
  std::size_t name_width_ = 0;
  std::size_t undecodable_ = 0;
  Record side_band_;
  std::size_t undecodable_side_band_ = 0;
  std::uint64_t task_epoch_ = 0;                      // counts the non-sample records seen
  std::uint64_t first_time_ = 0, previous_time_ = 0;  // --reltime, --deltatime
  std::array<TaskText, 1024> task_texts_;
  // By event (their fields differ), then by ResolvedAddress::id.
  std::vector<std::vector<std::string>> leaf_texts_, chain_texts_;
  std::string scratch_;
};

}  // namespace script_text

using script_text::ScriptSelection;
using script_text::ScriptTextOptions;
using script_text::TextPrinter;

}  // namespace perfscope::cli
