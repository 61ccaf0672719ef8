#include "python_sample_dict.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>

#include "data_source_text.hpp"
#include "perfscope/abi/branch_entry.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/abi/user_registers.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/core/reading.hpp"

namespace perfscope::python {

namespace {

namespace sf = abi::sample_format;

// The dict keys, interned once: every sample's dicts reuse them.
struct Keys {
  PyObject *ev_name, *attr, *sample, *raw_buf, *comm, *dso, *dso_bid, *dso_map_start, *dso_map_end,
      *symbol, *symoff, *callchain, *brstack, *brstacksym, *iregs, *uregs;
  PyObject *pid, *tid, *cpu, *ip, *time, *period, *phys_addr, *addr, *time_enabled, *time_running,
      *values, *weight, *transaction, *datasrc, *datasrc_decode, *cpumode, *addr_correlates_sym,
      *addr_dso, *addr_dso_bid, *addr_dso_map_start, *addr_dso_map_end, *addr_symbol, *addr_symoff;
  PyObject *sym, *start, *end, *binding, *name, *sym_off;
  PyObject *from, *to, *mispred, *predicted, *in_tx, *abort, *cycles, *from_dsoname, *to_dsoname,
      *pred;
};

const Keys& keys() {
  static const Keys interned = [] {
    auto k = [](const char* text) { return PyUnicode_InternFromString(text); };
    return Keys{k("ev_name"),
                k("attr"),
                k("sample"),
                k("raw_buf"),
                k("comm"),
                k("dso"),
                k("dso_bid"),
                k("dso_map_start"),
                k("dso_map_end"),
                k("symbol"),
                k("symoff"),
                k("callchain"),
                k("brstack"),
                k("brstacksym"),
                k("iregs"),
                k("uregs"),
                k("pid"),
                k("tid"),
                k("cpu"),
                k("ip"),
                k("time"),
                k("period"),
                k("phys_addr"),
                k("addr"),
                k("time_enabled"),
                k("time_running"),
                k("values"),
                k("weight"),
                k("transaction"),
                k("datasrc"),
                k("datasrc_decode"),
                k("cpumode"),
                k("addr_correlates_sym"),
                k("addr_dso"),
                k("addr_dso_bid"),
                k("addr_dso_map_start"),
                k("addr_dso_map_end"),
                k("addr_symbol"),
                k("addr_symoff"),
                k("sym"),
                k("start"),
                k("end"),
                k("binding"),
                k("name"),
                k("sym_off"),
                k("from"),
                k("to"),
                k("mispred"),
                k("predicted"),
                k("in_tx"),
                k("abort"),
                k("cycles"),
                k("from_dsoname"),
                k("to_dsoname"),
                k("pred")};
  }();
  return interned;
}

PyObject* text(std::string_view value) {
  return PyUnicode_DecodeUTF8(value.data(), static_cast<Py_ssize_t>(value.size()), "replace");
}
PyObject* number(std::uint64_t value) { return PyLong_FromUnsignedLongLong(value); }

using abi::register_name;

// Addresses perf resolves in the sample's process as code or data (sample_addr_correlates_sym):
// page-fault addresses, and branch targets of BTS.
bool addr_correlates_sym(const abi::PerfEventAttr& attr) {
  if ((attr.sample_type & sf::addr) == 0) return false;
  if (attr.type == static_cast<std::uint32_t>(abi::EventType::software)) {
    using abi::SoftwareEvent;
    return attr.config == static_cast<std::uint64_t>(SoftwareEvent::page_faults) ||
           attr.config == static_cast<std::uint64_t>(SoftwareEvent::page_faults_min) ||
           attr.config == static_cast<std::uint64_t>(SoftwareEvent::page_faults_maj);
  }
  return attr.type == static_cast<std::uint32_t>(abi::EventType::hardware) &&
         attr.config == static_cast<std::uint64_t>(abi::HardwareEvent::branch_instructions) &&
         attr.sample_period_or_freq == 1 && (attr.flags & abi::attr_flag::freq) == 0;
}

std::uint16_t guess_cpumode(std::uint64_t address) {
  return address >= 0xffff800000000000ULL ? abi::record_misc::kernel : abi::record_misc::user;
}

}  // namespace

std::string build_id_text(const StackResolver& resolver, const ResolvedAddress& where,
                          std::unordered_map<std::string, std::string>& files) {
  std::span<const std::uint8_t> id;
  if (where.mapping) {
    id = resolver.build_id_of(*where.mapping);
  } else if (where.kernel) {
    id = resolver.recorded_build_id("[kernel.kallsyms]");
  }
  std::string text = build_id_hex(id);
  if (text.empty() && !where.kernel && where.dso.starts_with('/')) {
    // Neither the mapping nor the recording carried it (a file that had no samples, only a
    // data address): the file's own, as perf reads it.
    auto [known, added] = files.try_emplace(std::string(where.dso));
    if (added) {
      auto read = read_build_id(known->first);
      known->second = read ? build_id_hex(*read) : std::string();
    }
    text = known->second;
  }
  return text;
}

SampleDictBuilder::SampleDictBuilder(const PerfDataReader& reader, StackResolver& resolver,
                                     std::size_t max_stack, bool callchains)
    : reader_(reader), resolver_(resolver), max_stack_(max_stack), callchains_(callchains) {
  const auto& arch = reader.features().arch;
  arm64_ = arch && (*arch == "aarch64" || *arch == "arm64");
  for (const auto& event : reader.events()) {
    std::string name = event.name.empty()
                           ? fmt::format("{}:{:#x}", event.attr.type, event.attr.config)
                           : event.name;
    event_names_.emplace_back(text(name));
    attrs_.emplace_back(
        PyBytes_FromStringAndSize(reinterpret_cast<const char*>(&event.attr), sizeof event.attr));
    addr_correlates_.push_back(addr_correlates_sym(event.attr));
  }
  frames_.reserve(256);
  readings_.resize(64);
  empty_text_ = Ref(PyUnicode_FromString(""));
  zero_reading_ = Ref(Py_BuildValue("(iii)", 0, 0, 0));
}

SampleDictBuilder::~SampleDictBuilder() = default;

PyObject* SampleDictBuilder::cached_string(std::vector<Ref>& cache, std::uint32_t id,
                                           std::string_view value) {
  if (id == ResolvedAddress::no_id) return text(value);
  if (id >= cache.size()) cache.resize(id + 1);
  if (!cache[id]) cache[id] = Ref(text(value));
  return Ref(cache[id]).release();
}

PyObject* SampleDictBuilder::repeated(RepeatedNumber& last, std::uint64_t value) {
  if (!last.object || last.value != value) {
    last.value = value;
    last.object = Ref(number(value));
  }
  return Ref(last.object).release();
}

PyObject* SampleDictBuilder::comm(std::uint32_t tid) {
  std::string_view name = resolver_.maps().comm_of(tid);
  // One str per thread, made again only when a COMM record renamed it.
  CachedComm& cached = comms_[tid];
  if (!cached.object || cached.text != name) {
    cached.text = name;
    cached.object =
        Ref(name.empty() ? text(fmt::format(":{}", static_cast<std::int32_t>(tid))) : text(name));
  }
  return Ref(cached.object).release();
}

// A callchain entry: {'ip', 'sym': {'start', 'end', 'binding', 'name'}, 'sym_off', 'dso'}, each
// key present as perf has it. The values of an address never change, so each address's entry
// is made once as a template and copied for every sample (a copy is a fresh dict, as perf
// hands out: a script may change it).
PyObject* SampleDictBuilder::frame_dict(const StackFrame& frame) {
  const Keys& k = keys();
  const ResolvedAddress& where = *frame.where;
  auto build = [&](PyObject** sym_template) {
    PyObject* dict = PyDict_New();
    set_item(dict, k.ip, number(where.address.ip));
    *sym_template = nullptr;
    if (!where.symbol.symbol.empty()) {
      std::uint64_t offset = where.function_offset();
      std::uint64_t start = where.dso_address - offset;
      PyObject* sym = PyDict_New();
      set_item(sym, k.start, number(start));
      set_item(sym, k.end, number(start + where.symbol.size));
      set_item(sym, k.binding, PyLong_FromLong(where.symbol.binding));
      set_item(sym, k.name,
               frame.inlined ? text(frame.function)
                             : cached_string(symbol_strings_, where.id, where.symbol.symbol));
      set_item(dict, k.sym, Ref::borrowed(sym).release());
      *sym_template = sym;
      if (!where.dso.empty()) set_item(dict, k.sym_off, number(offset));
    }
    if (!where.dso.empty()) set_item(dict, k.dso, cached_string(dso_strings_, where.id, where.dso));
    return dict;
  };
  if (frame.inlined || where.id == ResolvedAddress::no_id) {
    PyObject* sym = nullptr;
    PyObject* dict = build(&sym);
    Py_XDECREF(sym);
    return dict;
  }
  if (where.id >= frame_templates_.size()) frame_templates_.resize(where.id + 1);
  FrameTemplate& made = frame_templates_[where.id];
  if (!made.frame) {
    PyObject* sym = nullptr;
    made.frame = Ref(build(&sym));
    made.sym = Ref(sym);
  }
  PyObject* dict = PyDict_Copy(made.frame.get());
  if (made.sym) set_item(dict, k.sym, PyDict_Copy(made.sym.get()));
  return dict;
}

PyObject* SampleDictBuilder::callchain(const SampleRecord& sample, std::uint16_t cpumode,
                                       std::size_t event) {
  const bool dwarf = sample.has(sf::regs_user) && sample.has(sf::stack_user);
  if (!callchains_ || (!sample.has(sf::callchain) && !dwarf)) return PyList_New(0);
  resolver_.resolve_sample(sample, cpumode, frames_,
                           reader_.events()[event].config.branch_sample_type);
  // The frames up to --max-stack entries (inlined calls not counted), into a list made at its
  // size.
  std::size_t kept = 0, entries = 0;
  for (const StackFrame& frame : frames_) {
    if (!frame.inlined && ++entries > max_stack_) break;
    ++kept;
  }
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(kept));
  for (std::size_t i = 0; i < kept; ++i) {
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), frame_dict(frames_[i]));
  }
  return list;
}

// dso, dso_bid, dso_map_start, dso_map_end, symbol, symoff (addr_* in the sample dict).
void SampleDictBuilder::set_location(PyObject* dict, const ResolvedAddress& where, bool addr_keys) {
  const Keys& k = keys();
  if (!where.dso.empty()) {
    set_item(dict, addr_keys ? k.addr_dso : k.dso,
             cached_string(dso_strings_, where.id, where.dso));
    auto hex = [&] { return build_id_text(resolver_, where, file_build_ids_); };
    PyObject* bid = nullptr;
    if (where.id != ResolvedAddress::no_id && where.id < build_id_strings_.size() &&
        build_id_strings_[where.id]) {
      bid = Ref(build_id_strings_[where.id]).release();
    } else {
      bid = cached_string(build_id_strings_, where.id, hex());
    }
    set_item(dict, addr_keys ? k.addr_dso_bid : k.dso_bid, bid);
    set_item(dict, addr_keys ? k.addr_dso_map_start : k.dso_map_start,
             number(where.mapping ? where.mapping->start : 0));
    set_item(dict, addr_keys ? k.addr_dso_map_end : k.dso_map_end,
             number(where.mapping ? where.mapping->end : 0));
  }
  if (!where.symbol.symbol.empty()) {
    set_item(dict, addr_keys ? k.addr_symbol : k.symbol,
             cached_string(symbol_strings_, where.id, where.symbol.symbol));
    set_item(dict, addr_keys ? k.addr_symoff : k.symoff, number(where.function_offset()));
  }
}

PyObject* SampleDictBuilder::sample_values(const SampleRecord& sample, std::size_t event) {
  const Keys& k = keys();
  const abi::PerfEventAttr& attr = reader_.events()[event].attr;
  PyObject* dict = _PyDict_NewPresized(24);  // sized once: it holds 14 to 24 keys
  auto or_none = [&](std::uint64_t bit, std::uint64_t value) {
    return sample.has(bit) ? value : ~std::uint64_t{0};
  };
  // Ints are immutable: the values that repeat from sample to sample (a thread's pid and tid,
  // the period, the data source) are made again only when they change.
  set_item(dict, k.pid,
           repeated(last_pid_, static_cast<std::uint32_t>(or_none(sf::tid, sample.pid))));
  set_item(dict, k.tid,
           repeated(last_tid_, static_cast<std::uint32_t>(or_none(sf::tid, sample.tid))));
  set_item(dict, k.cpu, number(static_cast<std::uint32_t>(or_none(sf::cpu, sample.cpu))));
  set_item(dict, k.ip, number(sample.ip));
  set_item(dict, k.time, number(or_none(sf::time, sample.time)));
  set_item(
      dict, k.period,
      repeated(last_period_, sample.has(sf::period) ? sample.period : attr.sample_period_or_freq));
  set_item(dict, k.phys_addr, number(sample.phys_addr));
  set_item(dict, k.addr, number(sample.addr));
  // The read values: one (id, value, lost) a group member, or the event's one.
  // Without PERF_SAMPLE_READ perf gives one reading of zeros; the buffer is cleared only then
  // (clearing 64 readings for every sample was a visible share of a handler's cost).
  std::span<Reading> readings(readings_);
  std::size_t members = 1;
  if (sample.has(sf::read)) {
    members = std::max<std::size_t>(sample.read.decode(readings), 1);
  } else {
    readings_[0] = Reading{};
  }
  namespace rf = abi::read_format;
  if ((attr.read_format & rf::total_time_enabled) != 0) {
    set_item(dict, k.time_enabled, number(readings[0].enabled));
  }
  if ((attr.read_format & rf::total_time_running) != 0) {
    set_item(dict, k.time_running, number(readings[0].running));
  }
  PyObject* values = PyList_New(static_cast<Py_ssize_t>(members));
  for (std::size_t i = 0; i < members; ++i) {
    const Reading& reading = readings[i];
    // Tuples are immutable: the common one without readings is made once.
    PyObject* item = reading.id == 0 && reading.value == 0 && reading.lost == 0
                         ? Ref(zero_reading_).release()
                         : Py_BuildValue("(KKK)", static_cast<unsigned long long>(reading.id),
                                         static_cast<unsigned long long>(reading.value),
                                         static_cast<unsigned long long>(reading.lost));
    PyList_SET_ITEM(values, static_cast<Py_ssize_t>(i), item);
  }
  set_item(dict, k.values, values);
  std::uint64_t weight = sample.has(sf::weight)          ? sample.weight.full
                         : sample.has(sf::weight_struct) ? sample.weight.var1_dw()
                                                         : 0;
  set_item(dict, k.weight, number(weight));
  set_item(dict, k.transaction, number(sample.transaction));
  std::uint64_t source = sample.has(sf::data_src) ? sample.data_src : data_source_none;
  set_item(dict, k.datasrc, repeated(last_data_source_, source));
  if (!data_source_text_ || data_source_value_ != source) {
    data_source_value_ = source;
    data_source_text_ = Ref(text(data_source_text(source)));
  }
  set_item(dict, k.datasrc_decode, Ref(data_source_text_).release());
  return dict;
}

PyObject* SampleDictBuilder::branch_lists(const SampleRecord& sample, std::uint16_t cpumode,
                                          PyObject** symbols) {
  const Keys& k = keys();
  namespace bf = abi::branch_flags;
  PyObject* list = PyList_New(0);
  *symbols = PyList_New(0);
  if (!sample.has(sf::branch_stack)) return list;
  (void)cpumode;
  auto where_of = [&](std::uint64_t address) -> const ResolvedAddress& {
    return resolver_.resolve(sample.pid, {address, guess_cpumode(address), false});
  };
  auto symbol_text = [&](std::uint64_t address) {
    const ResolvedAddress& where = where_of(address);
    if (where.symbol.symbol.empty()) return std::string("[unknown]");
    return fmt::format("{}+0x{:x}", where.symbol.symbol, where.function_offset());
  };
  for (const abi::PerfBranchEntry& entry : sample.branch_stack.entries) {
    const bool mispred = bf::mispred.get(entry.flags) != 0;
    const bool predicted = bf::predicted.get(entry.flags) != 0;
    const bool in_tx = bf::in_tx.get(entry.flags) != 0;
    const bool aborted = bf::abort.get(entry.flags) != 0;
    PyObject* item = PyDict_New();
    set_item(item, k.from, number(entry.from));
    set_item(item, k.to, number(entry.to));
    set_item(item, k.mispred, PyBool_FromLong(mispred));
    set_item(item, k.predicted, PyBool_FromLong(predicted));
    set_item(item, k.in_tx, PyBool_FromLong(in_tx));
    set_item(item, k.abort, PyBool_FromLong(aborted));
    set_item(item, k.cycles, number(bf::cycles.get(entry.flags)));
    std::string from_dso(where_of(entry.from).dso), to_dso(where_of(entry.to).dso);
    set_item(item, k.from_dsoname, text(from_dso.empty() ? "[unknown]" : from_dso));
    set_item(item, k.to_dsoname, text(to_dso.empty() ? "[unknown]" : to_dso));
    PyList_Append(list, item);
    Py_DECREF(item);

    PyObject* named = PyDict_New();
    set_item(named, k.from, text(symbol_text(entry.from)));
    set_item(named, k.to, text(symbol_text(entry.to)));
    set_item(named, k.pred, text(mispred ? "M" : predicted ? "P" : "-"));
    set_item(named, k.in_tx, text(in_tx ? "X" : "-"));
    set_item(named, k.abort, text(aborted ? "A" : "-"));
    PyList_Append(*symbols, named);
    Py_DECREF(named);
  }
  return list;
}

// "   AX:0x1f    BX:0x0 ": perf's iregs/uregs text, one entry a register of the mask.
std::string SampleDictBuilder::registers_text(const RegisterSet& set) const {
  std::string out;
  if (set.abi == 0) return out;
  std::size_t i = 0;
  for (std::uint64_t mask = set.mask; mask != 0 && i < set.values.size(); mask &= mask - 1, ++i) {
    auto reg = static_cast<unsigned>(std::countr_zero(mask));
    fmt::format_to(std::back_inserter(out), "{:>5}:0x{:x} ", register_name(reg, arm64_),
                   set.values[i]);
  }
  return out;
}

PyObject* SampleDictBuilder::sample_dict(const SampleRecord& sample, std::uint16_t cpumode,
                                         std::size_t event, PyObject* chain) {
  const Keys& k = keys();
  PyObject* dict = _PyDict_NewPresized(16);
  set_item(dict, k.ev_name, Ref(event_names_[event]).release());
  set_item(dict, k.attr, Ref(attrs_[event]).release());
  PyObject* values = sample_values(sample, event);
  set_item(dict, k.sample, Ref::borrowed(values).release());
  set_item(dict, k.raw_buf,
           PyBytes_FromStringAndSize(reinterpret_cast<const char*>(sample.raw.data()),
                                     static_cast<Py_ssize_t>(sample.raw.size())));  // b'' shared
  set_item(dict, k.comm, comm(sample.tid));
  const ResolvedAddress& where =
      resolver_.resolve(sample.pid, {sample.ip, cpumode, false, false, false});
  set_location(dict, where, false);
  set_item(dict, k.callchain, chain);
  PyObject* symbols = nullptr;
  set_item(dict, k.brstack, branch_lists(sample, cpumode, &symbols));
  set_item(dict, k.brstacksym, symbols);
  set_item(values, k.cpumode, PyLong_FromLong(cpumode));
  if (addr_correlates_[event]) {
    set_item(values, k.addr_correlates_sym, PyBool_FromLong(1));
    const ResolvedAddress& data =
        resolver_.resolve(sample.pid, {sample.addr, guess_cpumode(sample.addr), false});
    set_location(values, data, true);
  }
  Py_DECREF(values);
  auto registers = [&](const RegisterSet& set) {
    return set.abi == 0 ? Ref(empty_text_).release() : text(registers_text(set));
  };
  set_item(dict, k.iregs, registers(sample.regs_intr));
  set_item(dict, k.uregs, registers(sample.regs_user));
  return dict;
}

}  // namespace perfscope::python
