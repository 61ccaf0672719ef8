// perf's database export mode for Python scripts (perf_db_export_mode: export-to-sqlite.py,
// export-to-postgresql.py): instead of process_event, the script's *_table handlers receive
// the recording as rows (events, machines, threads, comms, files, symbols, samples, call paths,
// context switches), each object exported once with ids numbered as perf numbers them. perf's
// thread and comm model is kept here as perf keeps it, since ids follow perf's objects: a FORK
// that reuses a tid makes a new thread, a thread's first COMM renames its placeholder, a
// sample's comm is its process's exec comm.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/stack_resolver.hpp"
#include "perfscope/core/records.hpp"
#include "python_api.hpp"

namespace perfscope::python {

class DbExport {
 public:
  // Reads the script's flags and handlers (after trace_begin, as perf does) and exports perf's
  // branch types. `calls` is what the script asked for with perf_db_export_calls.
  DbExport(PyObject* main_dict, const PerfDataReader& reader, StackResolver& resolver);
  ~DbExport();

  // Whether the script turned the mode on (perf_db_export_mode truthy).
  static bool wanted(PyObject* main_dict);
  bool calls_asked() const noexcept { return calls_; }

  // The records that shape perf's thread model: COMM, FORK (EXIT changes nothing).
  void observe(const RecordView& view, const ParseConfig& config);
  // A non-tracepoint sample's rows. False when a handler raised (the Python error is set).
  bool sample(const SampleRecord& sample, std::uint16_t cpumode, std::size_t event);
  // A SWITCH or SWITCH_CPU_WIDE record's context_switch_table row.
  bool context_switch(const RecordView& view, const ParseConfig& config);
  // Whether the last failure was a handler's.
  bool begun() const noexcept { return begun_; }

 private:
  struct Comm;
  struct Thread;
  struct CallPath;
  struct Location {
    std::uint64_t dso = 0, symbol = 0, offset = 0;
  };

  bool call(PyObject* handler, PyObject* arguments);
  bool emit(PyObject* handler, const char* format, ...);
  std::shared_ptr<Thread> find_or_make_thread(std::int32_t pid, std::int32_t tid);
  std::shared_ptr<Thread> find_thread(std::int32_t tid) const;
  Comm* exec_comm(const Thread& thread) const;
  bool export_comm(Comm& comm, const Thread& thread, bool& added);
  bool export_threads(Thread& thread, std::uint64_t& comm_id);
  bool export_machine();
  bool export_dso(const ResolvedAddress& where, std::uint64_t& id);
  bool export_symbol(std::uint64_t dso, const ResolvedAddress& where, std::uint64_t start,
                     std::uint64_t& id);
  bool locate(const ResolvedAddress& where, bool chain_entry, Location& out);
  bool export_call_path(CallPath& node);
  bool call_path_of(const SampleRecord& sample, std::uint16_t cpumode, std::size_t event,
                    std::uint64_t& id);

  const PerfDataReader& reader_;
  StackResolver& resolver_;
  bool callchains_ = false, calls_ = false, begun_ = false;
  bool comm_exec_ = false;  // some event has attr.comm_exec: exec comms are told apart
  // The handlers, looked up once (null: the script has none; ids advance all the same).
  PyObject *evsel_ = nullptr, *machine_ = nullptr, *thread_ = nullptr, *comm_ = nullptr,
           *comm_thread_ = nullptr, *dso_ = nullptr, *symbol_ = nullptr, *sample_ = nullptr,
           *call_path_ = nullptr, *context_switch_ = nullptr;
  std::vector<Ref> handlers_;  // the references behind the pointers above
  // Counters: the last id given.
  std::uint64_t evsel_ids_ = 0, machine_ids_ = 0, thread_ids_ = 0, comm_ids_ = 0,
                comm_thread_ids_ = 0, dso_ids_ = 0, symbol_ids_ = 0, sample_ids_ = 0,
                call_path_ids_ = 0, context_switch_ids_ = 0;
  std::uint64_t machine_id_ = 0;
  std::vector<std::uint64_t> evsel_db_ids_;                            // by event index
  std::unordered_map<std::int32_t, std::shared_ptr<Thread>> threads_;  // by tid: the live ones
  std::vector<std::shared_ptr<Thread>> dead_threads_;  // replaced by a FORK (ids kept)
  std::unordered_map<std::string, std::uint64_t> dso_ids_by_name_;
  // (dso id, start): a symbol's id; the starts of perf's "unknown" symbols are kept apart.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> symbol_ids_by_start_,
      unknown_ids_by_address_;
  std::unordered_map<std::string, std::string> file_build_ids_;
  std::unique_ptr<CallPath> root_;
  std::vector<StackFrame> frames_;
};

}  // namespace perfscope::python
