#include "python_script_session.hpp"

// Python.h first, as CPython asks.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "perf_trace_context.hpp"
#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/annotate/disassembler.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/tracing_data.hpp"
#include "perfscope/analysis/profile/stack_resolver.hpp"
#include "python_api.hpp"
#include "python_db_export.hpp"
#include "python_sample_dict.hpp"
#include "python_stat_rounds.hpp"
#include "python_tracepoint_fields.hpp"

namespace perfscope {

namespace {

namespace sf = abi::sample_format;

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) { interrupted.store(true, std::memory_order_relaxed); }

// Thrown once to leave the walk: Ctrl-C, or a script that stopped it.
struct StopWalk {};

std::string script_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The formats of the recording's tracepoints (its TRACING_DATA), by event index.
class Tracepoints {
 public:
  explicit Tracepoints(const PerfDataReader& reader) {
    const auto tracepoint = static_cast<std::uint32_t>(abi::EventType::tracepoint);
    fields_.resize(reader.events().size());
    bool any = false;
    for (const auto& event : reader.events()) any |= event.attr.type == tracepoint;
    if (!any) return;
    if (const auto& section = reader.features().tracing_data) {
      std::string error;
      for (const auto& format : tracing_data_formats(*section, &error)) {
        try {
          catalog_.load_text(format.system, format.text);
        } catch (const std::exception& failure) {
          notes_.push_back(failure.what());
        }
      }
      if (!error.empty()) notes_.push_back(error);
    }
    for (std::size_t i = 0; i < reader.events().size(); ++i) {
      const auto& event = reader.events()[i];
      if (event.attr.type != tracepoint) continue;
      const TracepointFormat* format = catalog_.find(event.attr.config);
      if (format == nullptr) {
        notes_.push_back(fmt::format(
            "{}: the recording has no format for this tracepoint; its samples reach no handler",
            event.name));
        continue;
      }
      fields_[i] = std::make_unique<python::TracepointFields>(*format);
    }
  }
  python::TracepointFields* of(std::size_t event) const { return fields_[event].get(); }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  TracepointCatalog catalog_;
  std::vector<std::unique_ptr<python::TracepointFields>> fields_;
  std::vector<std::string> notes_;
};

class Session : public python::SampleContext {
 public:
  Session(const PythonScriptOptions& options, const PerfDataReader& reader)
      : options_(options),
        reader_(reader),
        resolver_(resolver_options(options, reader)),
        dicts_(reader, resolver_, options.max_stack, options.callchains),
        tracepoints_(reader) {
    resolver_.set_recording_files(reader.features());
    std::vector<abi::PerfEventAttr> attrs;
    for (const auto& event : reader.events()) attrs.push_back(event.attr);
    resolver_.set_sample_clock(attrs);
    for (const auto& entry : reader.features().build_ids) {
      bool kernel = (entry.misc & abi::record_misc::cpumode_mask) == abi::record_misc::kernel &&
                    entry.filename.starts_with("[kernel.kallsyms]");
      resolver_.add_recorded_build_id(
          kernel ? std::string_view("[kernel.kallsyms]") : entry.filename, entry.build_id);
    }
    for (const auto& note : tracepoints_.notes()) {
      fmt::print(stderr, "perfscope: note: {}\n", note);
    }
    defined_.assign(reader.events().size(), false);
  }

  // Runs the file as __main__; false when it raised (reported).
  bool run_top_level() {
    main_dict_ = PyModule_GetDict(PyImport_AddModule("__main__"));
    FILE* file = std::fopen(options_.script.c_str(), "rb");
    if (file == nullptr) {
      throw std::runtime_error(fmt::format("cannot open the Python script {}: {}", options_.script,
                                           std::strerror(errno)));
    }
    // As python does for a script: __file__ while its top level runs.
    Ref name(PyUnicode_DecodeFSDefault(options_.script.c_str()));
    PyDict_SetItemString(main_dict_, "__file__", name.get());
    PyDict_SetItemString(main_dict_, "__cached__", Py_None);
    Ref result(PyRun_File(file, options_.script.c_str(), Py_file_input, main_dict_, main_dict_));
    std::fclose(file);
    PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
    PyErr_Fetch(&type, &value, &traceback);
    if (PyDict_DelItemString(main_dict_, "__file__") != 0) PyErr_Clear();  // deleted already
    PyErr_Restore(type, value, traceback);
    if (!result) die("its top level", nullptr);
    python::publish_script_context(this, main_dict_);
    return true;
  }

  // perf's database export mode: read once, after trace_begin, as perf reads it.
  void start_db_export() {
    if (!python::DbExport::wanted(main_dict_)) return;
    db_ = std::make_unique<python::DbExport>(main_dict_, reader_, resolver_);
    if (!db_->begun()) die("branch_type_table", nullptr);
    if (db_->calls_asked()) {
      fmt::print(stderr,
                 "perfscope: note: perf_db_export_calls: perfscope exports no calls table (perf "
                 "fills it from instruction traces, and from page-fault samples' addresses)\n");
    }
  }

  void call_hook(const char* name, PyObject* arguments) {
    PyObject* handler = handler_named(name);
    if (handler == nullptr) return;
    Ref result(PyObject_CallObject(handler, arguments));
    if (!result) die(name, nullptr);
  }

  int walk() {
    std::optional<PerfDataError> error;
    try {
      error = reader_.for_each_record_ordered_pipelined(
          [&](const PerfDataRecord& record) { visit(record); });
    } catch (const StopWalk&) {
    }
    if (error && !interrupted.load()) {
      fmt::print(stderr, "perfscope: {}: {} (the script saw the records before it)\n",
                 options_.input, error->what());
    }
    if (undecodable_ != 0) {
      fmt::print(stderr, "perfscope: {} samples could not be decoded and reached no handler\n",
                 undecodable_);
    }
    return 0;
  }

  // SampleContext: what perf_trace_context's functions ask of the current sample.
  std::int64_t common_field(std::string_view name) override {
    if (current_fields_ == nullptr || current_ == nullptr) return 0;
    return current_fields_->common(current_->raw, std::string(name).c_str());
  }
  std::optional<SourceLine> source_line() override {
    if (current_ == nullptr) return std::nullopt;
    const ResolvedAddress& where =
        resolver_.resolve(current_->pid, {current_->ip, current_cpumode_, false});
    if (where.symbol.source.file.empty()) return std::nullopt;
    return SourceLine{std::string(where.symbol.source.file),
                      static_cast<int>(where.symbol.source.line)};
  }
  std::optional<std::string> instruction() override;

 private:
  using Ref = python::Ref;

  static StackResolverOptions resolver_options(const PythonScriptOptions& options,
                                               const PerfDataReader& reader) {
    StackResolverOptions resolver;
    resolver.symbols = options.symbols;
    if (options.inline_choice != 0) {
      resolver.symbols.inline_frames = options.inline_choice > 0;
    } else {
      resolver.symbols.inline_frames = false;
      for (const auto& event : reader.events()) {
        if ((event.attr.sample_type & sf::stack_user) != 0) resolver.symbols.inline_frames = true;
      }
    }
    // perf_sample_srcline and perf_sample_srccode need the line tables: read only for a script
    // that names them.
    std::string text = script_text(options.script);
    resolver.symbols.source_lines = text.find("perf_sample_src") != std::string::npos;
    return resolver;
  }

  // main_dict[name] when callable, as perf looks handlers up: on every event.
  PyObject* handler_named(const char* name) const {
    PyObject* handler = PyDict_GetItemString(main_dict_, name);
    return handler != nullptr && PyCallable_Check(handler) ? handler : nullptr;
  }
  PyObject* handler_named(PyObject* name) const {
    PyObject* handler = PyDict_GetItem(main_dict_, name);
    return handler != nullptr && PyCallable_Check(handler) ? handler : nullptr;
  }

  // handler.__code__.co_argcount (-1 when it has none), remembered per handler object.
  int argument_count(PyObject* handler) {
    if (handler == counted_handler_.get()) return counted_arguments_;
    int count = -1;
    Ref code(PyObject_GetAttrString(handler, "__code__"));
    if (code) {
      Ref value(PyObject_GetAttrString(code.get(), "co_argcount"));
      if (value) count = static_cast<int>(PyLong_AsLong(value.get()));
    }
    PyErr_Clear();
    counted_handler_ = Ref::borrowed(handler);
    counted_arguments_ = count;
    return count;
  }

  // A Python error stops the walk: the traceback, the place, exit status 1 (SystemExit leaves
  // with its own status, as in perf). `sample` null outside the walk.
  [[noreturn]] void die(const char* where, const SampleRecord* sample) {
    // What the script printed before comes first (its stdout is block-buffered into a pipe).
    PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
    PyErr_Fetch(&type, &value, &traceback);
    flush_python_stdout();
    PyErr_Restore(type, value, traceback);
    if (PyErr_ExceptionMatches(PyExc_SystemExit)) PyErr_Print();  // exits with its status
    PyErr_Print();
    PyObject* error_stream = PySys_GetObject("stderr");
    if (error_stream != nullptr && error_stream != Py_None) {
      Ref flushed(PyObject_CallMethod(error_stream, "flush", nullptr));
      if (!flushed) PyErr_Clear();
    }
    if (sample != nullptr && sample->has(sf::time)) {
      fmt::print(stderr,
                 "perfscope: the script's {} raised at the sample of time {}.{:06} (pid {}, tid "
                 "{}); the walk stops there: fix the script and run it again\n",
                 where, sample->time / 1000000000ULL, sample->time % 1000000000ULL / 1000,
                 static_cast<std::int32_t>(sample->pid), static_cast<std::int32_t>(sample->tid));
    } else {
      fmt::print(stderr, "perfscope: the script {} failed in {}: fix it and run it again\n",
                 options_.script, where);
    }
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(1);
  }
  static void flush_python_stdout() {
    PyObject* out = PySys_GetObject("stdout");
    if (out != nullptr && out != Py_None) {
      Ref result(PyObject_CallMethod(out, "flush", nullptr));
      if (!result) PyErr_Clear();
    }
  }

  bool kept(const SampleRecord& sample) const {
    if (!options_.cpus.empty() && (!sample.has(sf::cpu) || !options_.cpus.contains(sample.cpu))) {
      return false;
    }
    if (!options_.pids.empty() && !options_.pids.contains(sample.pid)) return false;
    if (!options_.tids.empty() && !options_.tids.contains(sample.tid)) return false;
    if (!options_.comms.empty() &&
        !options_.comms.contains(std::string(resolver_.maps().comm_of(sample.tid)))) {
      return false;
    }
    return true;
  }

  void visit(const PerfDataRecord& record) {
    if (interrupted.load(std::memory_order_relaxed)) throw StopWalk{};
    const std::uint32_t type = record.view.type();
    if (type >= static_cast<std::uint32_t>(abi::UserRecordType::thread_map) &&
        type <= static_cast<std::uint32_t>(abi::UserRecordType::stat_round)) {
      // perf stat record's counts: stat__EVENT handlers at each round.
      if (!stat_rounds_) stat_rounds_ = std::make_unique<python::StatRounds>(main_dict_, reader_);
      std::string handler;
      if (!stat_rounds_->observe(record.view, handler)) die(handler.c_str(), nullptr);
      return;
    }
    if (type != static_cast<std::uint32_t>(abi::RecordType::sample)) {
      if (type < 64) {
        const ParseConfig& config = reader_.events()[record.event].config;
        resolver_.observe(record.view, config);
        if (db_) {
          db_->observe(record.view, config);
          const bool switched =
              type == static_cast<std::uint32_t>(abi::RecordType::switch_) ||
              type == static_cast<std::uint32_t>(abi::RecordType::switch_cpu_wide);
          if (switched && !db_->context_switch(record.view, config)) {
            die("context_switch_table", nullptr);
          }
          if (!switched) other_record(record, config);
        } else {
          other_record(record, config);
        }
      }
      return;
    }
    const ParseConfig& config = reader_.events()[record.event].config;
    DecodeError error;
    if (!decode_sample(record.view, config, sample_, error)) {
      ++undecodable_;
      return;
    }
    if (!kept(sample_)) return;
    const auto cpumode =
        static_cast<std::uint16_t>(record.view.header.misc & abi::record_misc::cpumode_mask);
    current_ = &sample_;
    current_cpumode_ = cpumode;
    if (python::TracepointFields* fields = tracepoints_.of(record.event)) {
      current_fields_ = fields;
      tracepoint_sample(*fields, record.event, cpumode);
    } else if (reader_.events()[record.event].attr.type !=
               static_cast<std::uint32_t>(abi::EventType::tracepoint)) {
      current_fields_ = nullptr;
      general_sample(record.event, cpumode);
    }
    current_ = nullptr;
  }

  void general_sample(std::size_t event, std::uint16_t cpumode) {
    if (db_) {
      if (!db_->sample(sample_, cpumode, event)) die("a *_table handler", &sample_);
      return;
    }
    PyObject* handler = handler_named("process_event");
    if (handler == nullptr) return;
    Ref chain(dicts_.callchain(sample_, cpumode, event));
    Ref dict(dicts_.sample_dict(sample_, cpumode, event, chain.release()));
    Ref arguments(PyTuple_Pack(1, dict.get()));
    Ref result(PyObject_CallObject(handler, arguments.get()));
    if (!result) die("process_event", &sample_);
  }

  void tracepoint_sample(python::TracepointFields& fields, std::size_t event,
                         std::uint16_t cpumode) {
    if (!defined_[event]) {
      defined_[event] = true;
      if (!fields.define_symbols(main_dict_, current_field_name_)) die("define_*", &sample_);
    }
    PyObject* handler = handler_named(fields.handler_name_object());
    const bool unhandled = handler == nullptr;
    if (unhandled) {
      handler = handler_named("trace_unhandled");
      if (handler == nullptr) return;
    }
    Ref keep_handler = Ref::borrowed(handler);
    const long cpu = static_cast<std::int32_t>(sample_.has(sf::cpu) ? sample_.cpu : ~0u);
    const std::uint64_t time = sample_.has(sf::time) ? sample_.time : ~std::uint64_t{0};
    const long seconds = static_cast<long>(time / 1000000000ULL);
    const long nanoseconds = static_cast<long>(time % 1000000000ULL);
    const long pid = static_cast<std::int32_t>(fields.common(sample_.raw, "common_pid"));
    Ref chain(dicts_.callchain(sample_, cpumode, event));
    Ref comm(dicts_.comm(sample_.tid));
    const Py_ssize_t base = unhandled ? 3 : 8 + static_cast<Py_ssize_t>(fields.count());
    const bool with_dict = argument_count(handler) == base + 1;
    Ref arguments(PyTuple_New(base + (with_dict ? 1 : 0)));
    PyObject* tuple = arguments.get();
    PyTuple_SET_ITEM(tuple, 0, Ref::borrowed(fields.handler_name_object()).release());
    PyTuple_SET_ITEM(tuple, 1, python::new_context_capsule(this));
    if (unhandled) {
      PyObject* dict = PyDict_New();
      python::set_item(dict, key("common_cpu"), PyLong_FromLong(cpu));
      python::set_item(dict, key("common_s"), PyLong_FromLong(seconds));
      python::set_item(dict, key("common_ns"), PyLong_FromLong(nanoseconds));
      python::set_item(dict, key("common_pid"), PyLong_FromLong(pid));
      python::set_item(dict, key("common_comm"), Ref(comm).release());
      python::set_item(dict, key("common_callchain"), Ref(chain).release());
      fields.put_values(sample_.raw, dict);
      PyTuple_SET_ITEM(tuple, 2, dict);
    } else {
      PyTuple_SET_ITEM(tuple, 2, PyLong_FromLong(cpu));
      PyTuple_SET_ITEM(tuple, 3, PyLong_FromLong(seconds));
      PyTuple_SET_ITEM(tuple, 4, PyLong_FromLong(nanoseconds));
      PyTuple_SET_ITEM(tuple, 5, PyLong_FromLong(pid));
      PyTuple_SET_ITEM(tuple, 6, Ref(comm).release());
      PyTuple_SET_ITEM(tuple, 7, Ref(chain).release());
      fields.put_values(sample_.raw, tuple, 8);
    }
    if (with_dict) {
      PyTuple_SET_ITEM(tuple, base, dicts_.sample_dict(sample_, cpumode, event, chain.release()));
    }
    Ref result(PyObject_CallObject(handler, tuple));
    if (!result) {
      die(unhandled ? "trace_unhandled" : fields.handler_name().c_str(), &sample_);
    }
  }

  // context_switch, throttle and unthrottle, for the scripts that define them.
  void other_record(const PerfDataRecord& record, const ParseConfig& config) {
    const std::uint32_t type = record.view.type();
    const bool cpu_wide = type == static_cast<std::uint32_t>(abi::RecordType::switch_cpu_wide);
    const bool is_switch = type == static_cast<std::uint32_t>(abi::RecordType::switch_) || cpu_wide;
    const bool throttled = type == static_cast<std::uint32_t>(abi::RecordType::throttle);
    const bool unthrottled = type == static_cast<std::uint32_t>(abi::RecordType::unthrottle);
    if (!is_switch && !throttled && !unthrottled) return;
    const char* name = is_switch ? "context_switch" : throttled ? "throttle" : "unthrottle";
    PyObject* handler = handler_named(name);
    if (handler == nullptr) return;
    SampleId id;
    if (!decode_sample_id(record.view, config, id)) return;
    auto signed_or_none = [](bool present, std::uint32_t value) {
      return present ? static_cast<int>(static_cast<std::int32_t>(value)) : -1;
    };
    const int cpu = signed_or_none(id.has(sf::cpu), id.cpu);
    const int pid = signed_or_none(id.has(sf::tid), id.pid);
    const int tid = signed_or_none(id.has(sf::tid), id.tid);
    const auto payload = record.view.bytes.subspan(sizeof(abi::RecordHeader));
    Ref arguments;
    if (is_switch) {
      std::uint32_t next_prev[2] = {~0u, ~0u};
      if (cpu_wide && payload.size() >= sizeof next_prev) {
        std::memcpy(next_prev, payload.data(), sizeof next_prev);
      }
      const bool out = (record.view.header.misc & abi::record_misc::switch_out) != 0;
      const bool preempt =
          out && (record.view.header.misc & abi::record_misc::switch_out_preempt) != 0;
      arguments =
          Ref(Py_BuildValue("(KiiiiiiNNii)", static_cast<unsigned long long>(id.time), cpu, pid,
                            tid, static_cast<int>(static_cast<std::int32_t>(next_prev[0])),
                            static_cast<int>(static_cast<std::int32_t>(next_prev[1])), -1,
                            PyBool_FromLong(out), PyBool_FromLong(preempt), 0, -1));
    } else {
      std::uint64_t words[3] = {0, 0, 0};  // time, id, stream_id
      if (payload.size() >= sizeof words) std::memcpy(words, payload.data(), sizeof words);
      arguments = Ref(Py_BuildValue("(KKKiii)", static_cast<unsigned long long>(words[0]),
                                    static_cast<unsigned long long>(words[1]),
                                    static_cast<unsigned long long>(words[2]), cpu, pid, tid));
    }
    Ref result(PyObject_CallObject(handler, arguments.get()));
    if (!result) die(name, nullptr);
  }

  PyObject* key(const char* text) {
    auto [where, inserted] = keys_.try_emplace(text);
    if (inserted) where->second = Ref(PyUnicode_InternFromString(text));
    return where->second.get();
  }

  const PythonScriptOptions& options_;
  const PerfDataReader& reader_;
  StackResolver resolver_;
  python::SampleDictBuilder dicts_;
  Tracepoints tracepoints_;
  PyObject* main_dict_ = nullptr;
  SampleRecord sample_;
  const SampleRecord* current_ = nullptr;
  std::uint16_t current_cpumode_ = 0;
  python::TracepointFields* current_fields_ = nullptr;
  std::vector<bool> defined_;       // by event index: its define_* calls were made
  std::string current_field_name_;  // perf's define walk remembers the last field across events
  Ref counted_handler_;
  int counted_arguments_ = -1;
  std::size_t undecodable_ = 0;
  std::unordered_map<std::string, Ref> keys_;
  std::unique_ptr<Disassembler> disassembler_;
  std::unique_ptr<python::DbExport> db_;
  std::unique_ptr<python::StatRounds> stat_rounds_;
};

std::optional<std::string> Session::instruction() {
  if (current_ == nullptr) return std::nullopt;
  const ResolvedAddress& where =
      resolver_.resolve(current_->pid, {current_->ip, current_cpumode_, false});
  if (!where.mapping || where.mapping->filename == nullptr || where.kernel) return std::nullopt;
  std::ifstream file(*where.mapping->filename, std::ios::binary);
  if (!file) return std::nullopt;
  file.seekg(static_cast<std::streamoff>(where.mapping->file_offset(current_->ip)));
  std::string bytes(16, '\0');
  file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<std::size_t>(file.gcount()));
  if (bytes.empty()) return std::nullopt;
  if (!disassembler_) {
    const auto& arch = reader_.features().arch;
    bool arm64 = arch && (*arch == "aarch64" || *arch == "arm64");
    disassembler_ = make_disassembler(arm64 ? Architecture::aarch64 : Architecture::x86_64);
  }
  auto decoded = disassembler_->disassemble(
      std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), current_->ip);
  if (decoded.empty() || decoded.front().mnemonic == ".byte") return std::nullopt;
  bytes.resize(decoded.front().size);
  return bytes;
}

// The interpreter for one run: perf_trace_context registered, sys.argv as perf sets it, the
// script's directory first on sys.path, no Python SIGINT handler (Ctrl-C ends the walk).
class Interpreter {
 public:
  explicit Interpreter(const PythonScriptOptions& options) {
    python::register_perf_trace_context();
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    // The program's own path: no python3 found on PATH (a pyenv shim) decides the prefix.
    char self[4096] = {};
    ssize_t length = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (length > 0) PyConfig_SetBytesString(&config, &config.program_name, self);
    std::vector<std::string> words{options.script};
    words.insert(words.end(), options.arguments.begin(), options.arguments.end());
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    PyConfig_SetBytesArgv(&config, static_cast<Py_ssize_t>(argv.size()), argv.data());
    PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
      throw std::runtime_error(
          fmt::format("cannot start Python: {}", status.err_msg != nullptr ? status.err_msg : "?"));
    }
    // sys.path[0]: the script's directory, as for `python3 SCRIPT`.
    char resolved[4096];
    std::string directory = ".";
    if (::realpath(options.script.c_str(), resolved) != nullptr) {
      directory = resolved;
      directory = directory.substr(0, directory.rfind('/'));
      if (directory.empty()) directory = "/";
    }
    PyObject* path = PySys_GetObject("path");
    python::Ref entry(PyUnicode_DecodeFSDefault(directory.c_str()));
    if (path != nullptr) PyList_Insert(path, 0, entry.get());
  }
  ~Interpreter() { Py_FinalizeEx(); }
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;
};

}  // namespace

int run_python_script(const PythonScriptOptions& options) {
  if (::access(options.script.c_str(), R_OK) != 0) {
    throw std::runtime_error(fmt::format(
        "cannot open the Python script {}: {} (give its path, or a name that perfscope script "
        "-l lists)",
        options.script, std::strerror(errno)));
  }
  PerfDataReader reader = PerfDataReader::open(options.input);
  for (const auto& note : reader.notes()) {
    fmt::print(stderr, "perfscope: {}: {}\n", options.input, note);
  }
  ::setenv("PERF_EXEC_PATH", options.exec_path.c_str(), 1);
  if (const char* home = std::getenv("HOME"); home != nullptr) {
    ::setenv("PERF_BUILDID_DIR", fmt::format("{}/.debug", home).c_str(), 0);
  }
  Interpreter interpreter(options);
  Session session(options, reader);
  session.run_top_level();
  struct sigaction action = {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  session.call_hook("trace_begin", nullptr);
  session.start_db_export();
  int status = session.walk();
  session.call_hook("trace_end", nullptr);
  return status;
}

}  // namespace perfscope
