#include "python_db_export.hpp"

#include <cstdarg>
#include <string_view>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "python_sample_dict.hpp"

namespace perfscope::python {

namespace {

namespace sf = abi::sample_format;

// perf's branch types (the flags of PERF_IP_FLAG_*), in the order perf exports them.
struct BranchType {
  int flags;
  const char* name;
};
constexpr BranchType branch_types[] = {
    {0, "no branch"},
    {3, "call"},
    {5, "return"},
    {9, "conditional jump"},
    {1, "unconditional jump"},
    {67, "software interrupt"},
    {69, "return from interrupt"},
    {19, "system call"},
    {21, "return from system call"},
    {33, "asynchronous branch"},
    {99, "hardware interrupt"},
    {129, "transaction abort"},
    {257, "trace begin"},
    {513, "trace end"},
    {2051, "vm entry"},
    {4099, "vm exit"},
};
constexpr int trace_begin_flag = 256, trace_end_flag = 512;

long long d64(std::uint64_t value) { return static_cast<long long>(value); }

bool truthy(PyObject* main_dict, const char* name) {
  PyObject* value = PyDict_GetItemString(main_dict, name);
  if (value == nullptr) return false;
  int truth = PyObject_IsTrue(value);
  if (truth < 0) PyErr_Clear();
  return truth > 0;
}

std::string_view base_name(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

struct DbExport::Comm {
  std::string name;
  std::uint64_t start = 0;
  bool exec = false;
  std::uint64_t db_id = 0;
};

struct DbExport::Thread {
  std::int32_t pid = -1, tid = -1;
  std::uint64_t db_id = 0;
  bool comm_set = false;
  std::vector<std::unique_ptr<Comm>> comms;  // oldest first
  Comm& current() { return *comms.back(); }
};

struct DbExport::CallPath {
  CallPath* parent = nullptr;
  std::uint64_t symbol = 0, ip = 0;
  std::uint64_t db_id = 0;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::unique_ptr<CallPath>> children;
};

bool DbExport::wanted(PyObject* main_dict) { return truthy(main_dict, "perf_db_export_mode"); }

DbExport::DbExport(PyObject* main_dict, const PerfDataReader& reader, StackResolver& resolver)
    : reader_(reader), resolver_(resolver), root_(std::make_unique<CallPath>()) {
  callchains_ = truthy(main_dict, "perf_db_export_callchains");
  calls_ = truthy(main_dict, "perf_db_export_calls");
  auto handler = [&](const char* name) -> PyObject* {
    PyObject* found = PyDict_GetItemString(main_dict, name);
    if (found == nullptr || !PyCallable_Check(found)) return nullptr;
    handlers_.push_back(Ref::borrowed(found));
    return found;
  };
  evsel_ = handler("evsel_table");
  machine_ = handler("machine_table");
  thread_ = handler("thread_table");
  comm_ = handler("comm_table");
  comm_thread_ = handler("comm_thread_table");
  dso_ = handler("dso_table");
  symbol_ = handler("symbol_table");
  sample_ = handler("sample_table");
  call_path_ = handler("call_path_table");
  context_switch_ = handler("context_switch_table");
  PyObject* branch_type = handler("branch_type_table");
  evsel_db_ids_.assign(reader.events().size(), 0);
  for (const auto& event : reader.events()) {
    comm_exec_ |= (event.attr.flags & abi::attr_flag::comm_exec) != 0;
  }
  // The idle task, as perf registers it before the first event.
  auto idle = std::make_shared<Thread>();
  idle->pid = idle->tid = 0;
  idle->comm_set = true;
  idle->comms.push_back(std::make_unique<Comm>(Comm{"swapper", 0, false, 0}));
  threads_[0] = idle;
  frames_.reserve(256);
  begun_ = true;
  for (const BranchType& type : branch_types) {
    if (!emit(branch_type, "(is)", type.flags, type.name)) begun_ = false;
  }
  for (const BranchType& type : branch_types) {
    if (type.flags == 1 || (type.flags & (trace_begin_flag | trace_end_flag)) != 0) continue;
    std::string begin = std::string("trace begin / ") + type.name;
    std::string end = std::string(type.name) + " / trace end";
    if (!emit(branch_type, "(is)", type.flags | trace_begin_flag, begin.c_str()) ||
        !emit(branch_type, "(is)", type.flags | trace_end_flag, end.c_str())) {
      begun_ = false;
    }
  }
}

DbExport::~DbExport() = default;

bool DbExport::call(PyObject* handler, PyObject* arguments) {
  if (handler == nullptr) return true;
  Ref result(PyObject_CallObject(handler, arguments));
  return static_cast<bool>(result);
}

bool DbExport::emit(PyObject* handler, const char* format, ...) {
  if (handler == nullptr) return true;  // perf counts the id all the same
  va_list arguments;
  va_start(arguments, format);
  Ref tuple(Py_VaBuildValue(format, arguments));
  va_end(arguments);
  return tuple && call(handler, tuple.get());
}

std::shared_ptr<DbExport::Thread> DbExport::find_thread(std::int32_t tid) const {
  auto found = threads_.find(tid);
  return found == threads_.end() ? nullptr : found->second;
}

std::shared_ptr<DbExport::Thread> DbExport::find_or_make_thread(std::int32_t pid,
                                                                std::int32_t tid) {
  if (auto known = find_thread(tid)) {
    if (known->pid == -1 && pid != -1) known->pid = pid;
    return known;
  }
  auto thread = std::make_shared<Thread>();
  thread->pid = pid;
  thread->tid = tid;
  thread->comms.push_back(std::make_unique<Comm>(Comm{":" + std::to_string(tid), 0, false, 0}));
  threads_[tid] = thread;
  // A thread of a process: perf makes the process's main thread with it.
  if (pid != -1 && pid != tid) find_or_make_thread(pid, pid);
  return thread;
}

void DbExport::observe(const RecordView& view, const ParseConfig& config) {
  const std::uint32_t type = view.type();
  const bool comm = type == static_cast<std::uint32_t>(abi::RecordType::comm);
  const bool fork = type == static_cast<std::uint32_t>(abi::RecordType::fork);
  if (!comm && !fork) return;
  Record record;
  DecodeError error;
  if (!decode_record(view, config, record, error)) return;
  if (const auto* named = std::get_if<CommRecord>(&record)) {
    const std::uint64_t time = named->sample_id.has(sf::time) ? named->sample_id.time : 0;
    auto thread = find_or_make_thread(static_cast<std::int32_t>(named->pid),
                                      static_cast<std::int32_t>(named->tid));
    if (!thread->comm_set) {  // the ":tid" placeholder takes the name, as perf overrides it
      Comm& placeholder = thread->current();
      placeholder.name = named->comm;
      placeholder.start = time;
      placeholder.exec = placeholder.exec || named->exec;
      thread->comm_set = true;
    } else {
      thread->comms.push_back(
          std::make_unique<Comm>(Comm{std::string(named->comm), time, named->exec, 0}));
    }
  } else if (const auto* task = std::get_if<TaskRecord>(&record)) {
    auto parent = find_or_make_thread(static_cast<std::int32_t>(task->ppid),
                                      static_cast<std::int32_t>(task->ptid));
    const auto tid = static_cast<std::int32_t>(task->tid);
    if (auto reused = find_thread(tid)) {  // a new task with an old tid: a new thread
      dead_threads_.push_back(reused);
      threads_.erase(tid);
    }
    auto child = find_or_make_thread(static_cast<std::int32_t>(task->pid), tid);
    if (parent->comm_set && !child->comm_set) {
      Comm& placeholder = child->current();
      placeholder.name = parent->current().name;
      // perf dates the inherited name by the record's sample time, not the FORK's own field.
      placeholder.start = task->sample_id.has(sf::time) ? task->sample_id.time : task->time;
      child->comm_set = true;
    }
  }
}

// perf's thread__exec_comm: the newest exec comm; without one the oldest, unless that is a
// synthesized main thread's time-0 name with a later one.
DbExport::Comm* DbExport::exec_comm(const Thread& thread) const {
  if (thread.comms.empty()) return nullptr;
  if (!comm_exec_) return thread.comms.back().get();
  Comm *last = nullptr, *second_last = nullptr;
  for (auto it = thread.comms.rbegin(); it != thread.comms.rend(); ++it) {
    if ((*it)->exec) return it->get();
    second_last = last;
    last = it->get();
  }
  if (second_last != nullptr && last->start == 0 && thread.pid == thread.tid) return second_last;
  return last;
}

bool DbExport::export_comm(Comm& comm, const Thread& thread, bool& added) {
  added = false;
  if (comm.db_id != 0) return true;
  comm.db_id = ++comm_ids_;
  added = true;
  return emit(comm_, "(LsLLi)", d64(comm.db_id), comm.name.c_str(), d64(thread.db_id),
              d64(comm.start), comm.exec ? 1 : 0);
}

bool DbExport::export_machine() {
  if (machine_id_ != 0) return true;
  machine_id_ = ++machine_ids_;
  return emit(machine_, "(Lis)", d64(machine_id_), -1, "");
}

// perf's export of a sample's or switch's thread: its process's main thread and exec comm (with
// their comm_thread row), the thread itself, its current comm. `comm_id`: the exec comm's.
bool DbExport::export_threads(Thread& thread, std::uint64_t& comm_id) {
  std::shared_ptr<Thread> main;
  if (thread.pid == thread.tid) {
    main = find_thread(thread.tid);
  } else if (thread.pid != -1) {
    main = find_or_make_thread(thread.pid, thread.pid);
  }
  Thread* main_thread = thread.pid == thread.tid ? &thread : main.get();
  Comm* exec = nullptr;
  if (main_thread != nullptr) {
    if (main_thread->db_id == 0) {
      main_thread->db_id = ++thread_ids_;
      if (!emit(thread_, "(LLLii)", d64(main_thread->db_id), d64(machine_id_),
                d64(main_thread->db_id), main_thread->pid, main_thread->tid)) {
        return false;
      }
    }
    exec = exec_comm(*main_thread);
    if (exec != nullptr) {
      bool added = false;
      if (!export_comm(*exec, *main_thread, added)) return false;
      if (added && !emit(comm_thread_, "(LLL)", d64(++comm_thread_ids_), d64(exec->db_id),
                         d64(main_thread->db_id))) {
        return false;
      }
    }
  }
  if (&thread != main_thread) {
    const bool first = thread.db_id == 0;
    if (first) {
      thread.db_id = ++thread_ids_;
      if (!emit(thread_, "(LLLii)", d64(thread.db_id), d64(machine_id_),
                d64(main_thread != nullptr ? main_thread->db_id : 0), thread.pid, thread.tid)) {
        return false;
      }
    }
    if (exec != nullptr && first &&
        !emit(comm_thread_, "(LLL)", d64(++comm_thread_ids_), d64(exec->db_id),
              d64(thread.db_id))) {
      return false;
    }
  }
  bool added = false;
  if (!export_comm(thread.current(), thread, added)) return false;
  comm_id = exec != nullptr ? exec->db_id : 0;
  return true;
}

bool DbExport::export_dso(const ResolvedAddress& where, std::uint64_t& id) {
  // perf's long name: the file (a JIT map's /tmp/perf-PID.map, the kernel's [kernel.kallsyms]),
  // else the mapping's name ("//anon", "/memfd:NAME (deleted)"); the short one its last part.
  std::string long_name = where.dso.starts_with('/') || where.dso.starts_with('[') ||
                                  !where.mapping || where.mapping->filename == nullptr
                              ? std::string(where.dso)
                              : *where.mapping->filename;
  auto [known, added] = dso_ids_by_name_.try_emplace(long_name, 0);
  if (!added) {
    id = known->second;
    return true;
  }
  id = known->second = ++dso_ids_;
  std::string short_name(base_name(long_name));
  std::string build_id = build_id_text(resolver_, where, file_build_ids_);
  return emit(dso_, "(LLsss)", d64(id), d64(machine_id_), short_name.c_str(), long_name.c_str(),
              build_id.c_str());
}

bool DbExport::export_symbol(std::uint64_t dso, const ResolvedAddress& where, std::uint64_t start,
                             std::uint64_t& id) {
  auto [known, added] = symbol_ids_by_start_.try_emplace({dso, start}, 0);
  if (!added) {
    id = known->second;
    return true;
  }
  id = known->second = ++symbol_ids_;
  std::string name(where.symbol.symbol);
  return emit(symbol_, "(LLLLis)", d64(id), d64(dso), d64(start), d64(start + where.symbol.size),
              static_cast<int>(where.symbol.binding), name.c_str());
}

// The dso, symbol and offset of an address, exported as perf exports them. An address in a
// file where no symbol covers it gets perf's zero-length "unknown" symbol there: at its
// address in the file for a sample's own ip, at the address itself for a callchain entry (found
// again at either, as perf finds what it added to the file's symbols).
bool DbExport::locate(const ResolvedAddress& where, bool chain_entry, Location& out) {
  out = {};
  if (where.dso.empty()) return true;
  if (!export_dso(where, out.dso)) return false;
  if (!where.symbol.symbol.empty()) {
    out.offset = where.function_offset();
    return export_symbol(out.dso, where, where.dso_address - out.offset, out.symbol);
  }
  auto found = unknown_ids_by_address_.find({out.dso, where.dso_address});
  if (found == unknown_ids_by_address_.end() && chain_entry) {
    found = unknown_ids_by_address_.find({out.dso, where.address.ip});
  }
  if (found != unknown_ids_by_address_.end()) {
    out.symbol = found->second;
    return true;
  }
  const std::uint64_t at = chain_entry ? where.address.ip : where.dso_address;
  out.symbol = ++symbol_ids_;
  unknown_ids_by_address_[{out.dso, at}] = out.symbol;
  return emit(symbol_, "(LLLLis)", d64(out.symbol), d64(out.dso), d64(at), d64(at), 0, "unknown");
}

bool DbExport::export_call_path(CallPath& node) {
  if (node.db_id != 0) return true;
  if (node.parent != nullptr && !export_call_path(*node.parent)) return false;
  node.db_id = ++call_path_ids_;
  return emit(call_path_, "(LLLL)", d64(node.db_id),
              d64(node.parent != nullptr ? node.parent->db_id : 0), d64(node.symbol), d64(node.ip));
}

// The sample's call chain as a path from the root, root first; nodes are one per (caller,
// symbol), or per address where nothing names it.
bool DbExport::call_path_of(const SampleRecord& sample, std::uint16_t cpumode, std::size_t event,
                            std::uint64_t& id) {
  id = 0;
  if (!callchains_ || !sample.has(sf::callchain)) return true;
  resolver_.resolve_sample(sample, cpumode, frames_,
                           reader_.events()[event].config.branch_sample_type);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> keys;  // root first: (symbol, ip)
  for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame) {
    if (frame->inlined) continue;
    Location at;
    if (!locate(*frame->where, true, at)) return false;
    keys.emplace_back(at.symbol, at.symbol != 0 ? 0 : frame->where->address.ip);
  }
  if (keys.empty()) return true;
  CallPath* node = root_.get();
  for (const auto& key : keys) {
    auto& child = node->children[key];
    if (!child) {
      child = std::make_unique<CallPath>();
      child->parent = node;
      child->symbol = key.first;
      child->ip = key.second;
    }
    node = child.get();
  }
  if (!export_call_path(*node)) return false;
  id = node->db_id;
  return true;
}

bool DbExport::sample(const SampleRecord& sample, std::uint16_t cpumode, std::size_t event) {
  const auto& info = reader_.events()[event];
  if (evsel_db_ids_[event] == 0) {
    evsel_db_ids_[event] = ++evsel_ids_;
    if (!emit(evsel_, "(Ls)", d64(evsel_db_ids_[event]), info.name.c_str())) return false;
  }
  if (!export_machine()) return false;
  const bool has_tid = sample.has(sf::tid);
  auto thread = find_or_make_thread(has_tid ? static_cast<std::int32_t>(sample.pid) : -1,
                                    has_tid ? static_cast<std::int32_t>(sample.tid) : -1);
  std::uint64_t comm_id = 0;
  if (!export_threads(*thread, comm_id)) return false;
  const std::uint64_t id = ++sample_ids_;
  Location at;
  const ResolvedAddress& where = resolver_.resolve(sample.pid, {sample.ip, cpumode, false});
  if (!locate(where, false, at)) return false;
  std::uint64_t call_path = 0;
  if (!call_path_of(sample, cpumode, event, call_path)) return false;
  Location to;
  const auto& attr = info.attr;
  const bool page_fault =
      attr.type == static_cast<std::uint32_t>(abi::EventType::software) &&
      (attr.config == static_cast<std::uint64_t>(abi::SoftwareEvent::page_faults) ||
       attr.config == static_cast<std::uint64_t>(abi::SoftwareEvent::page_faults_min) ||
       attr.config == static_cast<std::uint64_t>(abi::SoftwareEvent::page_faults_maj));
  if (sample.has(sf::addr) && page_fault) {
    std::uint16_t addr_mode =
        sample.addr >= 0xffff800000000000ULL ? abi::record_misc::kernel : abi::record_misc::user;
    const ResolvedAddress& data = resolver_.resolve(sample.pid, {sample.addr, addr_mode, false});
    if (!locate(data, false, to)) return false;
  }
  const std::uint64_t period = sample.has(sf::period) ? sample.period : attr.sample_period_or_freq;
  const std::uint64_t weight = sample.has(sf::weight)          ? sample.weight.full
                               : sample.has(sf::weight_struct) ? sample.weight.var1_dw()
                                                               : 0;
  return emit(sample_, "(LLLLLLLLLLiLLLLLLLLiiLLLi)", d64(id), d64(evsel_db_ids_[event]),
              d64(machine_id_), d64(thread->db_id), d64(comm_id), d64(at.dso), d64(at.symbol),
              d64(at.offset), d64(sample.ip),
              d64(sample.has(sf::time) ? sample.time : ~std::uint64_t{0}),
              sample.has(sf::cpu) ? static_cast<int>(sample.cpu) : -1, d64(to.dso), d64(to.symbol),
              d64(to.offset), d64(sample.addr), d64(period), d64(weight), d64(sample.transaction),
              d64(sample.has(sf::data_src) ? sample.data_src : 0x5080021), 0, 0, d64(call_path),
              0LL, 0LL, 0);
}

bool DbExport::context_switch(const RecordView& view, const ParseConfig& config) {
  Record record;
  DecodeError error;
  if (!decode_record(view, config, record, error)) return true;
  const auto* change = std::get_if<SwitchRecord>(&record);
  if (change == nullptr) return true;
  if (!export_machine()) return false;
  const SampleId& id = change->sample_id;
  // A side of the switch counts when perf knows its thread by name; it is not made here.
  auto side = [&](std::int32_t tid, std::uint64_t& thread_id, std::uint64_t& comm_id, bool& idle) {
    thread_id = comm_id = 0;
    idle = false;
    auto thread = find_thread(tid);
    if (!thread || !thread->comm_set) return true;
    if (!export_threads(*thread, comm_id)) return false;
    thread_id = thread->db_id;
    idle = thread->pid == 0 && thread->tid == 0;
    return true;
  };
  std::uint64_t a_thread = 0, a_comm = 0, b_thread = 0, b_comm = 0;
  bool a_idle = false, b_idle = false;
  if (id.has(sf::tid) && !side(static_cast<std::int32_t>(id.tid), a_thread, a_comm, a_idle)) {
    return false;
  }
  if (change->cpu_wide &&
      !side(static_cast<std::int32_t>(change->next_prev_tid), b_thread, b_comm, b_idle)) {
    return false;
  }
  if ((a_thread == 0 || a_idle) && (b_thread == 0 || b_idle)) return true;
  const std::uint64_t switch_id = ++context_switch_ids_;
  const int flags = (change->out ? 1 : 0) | (change->out && change->preempted ? 2 : 0);
  const bool out = change->out;
  return emit(context_switch_, "(LLLiLLLLi)", d64(switch_id), d64(machine_id_),
              d64(id.has(sf::time) ? id.time : ~std::uint64_t{0}),
              id.has(sf::cpu) ? static_cast<int>(id.cpu) : -1, d64(out ? a_thread : b_thread),
              d64(out ? a_comm : b_comm), d64(out ? b_thread : a_thread),
              d64(out ? b_comm : a_comm), flags);
}

}  // namespace perfscope::python
