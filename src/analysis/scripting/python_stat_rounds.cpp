#include "python_stat_rounds.hpp"

#include <algorithm>
#include <cstring>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/stat_records.hpp"

namespace perfscope::python {

namespace {

constexpr std::uint64_t aggregate_global = 1;  // perf's AGGR_GLOBAL

}  // namespace

StatRounds::StatRounds(PyObject* main_dict, const PerfDataReader& reader)
    : main_dict_(main_dict), reader_(reader) {
  raw_.resize(reader.events().size());
  previous_.resize(reader.events().size());
  previous_total_.resize(reader.events().size());
  for (const auto& event : reader.events()) {
    std::string name = "stat__" + event.name;
    std::replace(name.begin(), name.end(), ':', '_');
    handler_names_.push_back(name);
  }
}

StatRounds::Counts StatRounds::scaled(Counts now, Counts& previous) const {
  Counts delta{now.value - previous.value, now.enabled - previous.enabled,
               now.running - previous.running};
  previous = now;
  if (scale_) {
    if (delta.running == 0) {
      delta.value = 0;
    } else if (delta.running < delta.enabled) {
      delta.value = static_cast<std::uint64_t>(static_cast<double>(delta.value) *
                                               static_cast<double>(delta.enabled) /
                                               static_cast<double>(delta.running));
    }
  }
  return delta;
}

bool StatRounds::observe(const RecordView& view, std::string& handler) {
  const auto payload = view.bytes.subspan(sizeof(abi::RecordHeader));
  const std::uint32_t type = view.type();
  if (type == static_cast<std::uint32_t>(abi::UserRecordType::thread_map)) {
    threads_.clear();
    if (auto threads = decode_thread_map(payload)) {
      for (const StatThread& thread : *threads) threads_.push_back(thread.pid);
    }
    if (threads_.empty()) threads_.push_back(-1);
  } else if (type == static_cast<std::uint32_t>(abi::UserRecordType::cpu_map)) {
    cpus_ = decode_cpu_map(payload);
    if (cpus_.empty()) cpus_.push_back(-1);
  } else if (type == static_cast<std::uint32_t>(abi::UserRecordType::stat_config)) {
    if (auto config = decode_stat_config(payload)) {
      aggregation_ = static_cast<std::uint64_t>(config->aggregation);
      scale_ = config->scale;
    }
  } else if (type == static_cast<std::uint32_t>(abi::UserRecordType::stat)) {
    auto counter = decode_stat(payload);
    if (!counter) return true;
    std::size_t event = reader_.events().size();
    for (std::size_t i = 0; i < reader_.events().size(); ++i) {
      const auto& ids = reader_.events()[i].ids;
      if (std::find(ids.begin(), ids.end(), counter->id) != ids.end()) event = i;
    }
    if (event == reader_.events().size()) return true;
    auto at = std::find(cpus_.begin(), cpus_.end(), static_cast<std::int32_t>(counter->cpu));
    if (at == cpus_.end()) return true;
    raw_[event][{static_cast<std::size_t>(at - cpus_.begin()), counter->thread}] = {
        counter->value, counter->enabled, counter->running};
  } else if (type == static_cast<std::uint32_t>(abi::UserRecordType::stat_round)) {
    auto round = decode_stat_round(payload);
    return round ? this->round(round->time, handler) : true;
  }
  return true;
}

bool StatRounds::round(std::uint64_t time, std::string& handler) {
  auto call = [&](const std::string& name, PyObject* arguments) {
    PyObject* function = PyDict_GetItemString(main_dict_, name.c_str());
    if (function == nullptr || !PyCallable_Check(function)) return true;
    Ref result(PyObject_CallObject(function, arguments));
    if (!result) handler = name;
    return static_cast<bool>(result);
  };
  for (std::size_t event = 0; event < raw_.size(); ++event) {
    if (aggregation_ == aggregate_global) {
      Counts total;
      for (const auto& [where, counts] : raw_[event]) {
        total.value += counts.value;
        total.enabled += counts.enabled;
        total.running += counts.running;
      }
      Counts shown = scaled(total, previous_total_[event]);
      Ref arguments(Py_BuildValue("(iiKKKK)", -1, -1, static_cast<unsigned long long>(time),
                                  static_cast<unsigned long long>(shown.value),
                                  static_cast<unsigned long long>(shown.enabled),
                                  static_cast<unsigned long long>(shown.running)));
      if (!call(handler_names_[event], arguments.get())) return false;
      continue;
    }
    for (std::size_t thread = 0; thread < threads_.size(); ++thread) {
      for (std::size_t cpu = 0; cpu < cpus_.size(); ++cpu) {
        Counts now;
        if (auto found = raw_[event].find({cpu, thread}); found != raw_[event].end()) {
          now = found->second;
        }
        Counts shown = scaled(now, previous_[event][{cpu, thread}]);
        Ref arguments(Py_BuildValue("(iiKKKK)", cpus_[cpu], threads_[thread],
                                    static_cast<unsigned long long>(time),
                                    static_cast<unsigned long long>(shown.value),
                                    static_cast<unsigned long long>(shown.enabled),
                                    static_cast<unsigned long long>(shown.running)));
        if (!call(handler_names_[event], arguments.get())) return false;
      }
    }
  }
  Ref arguments(Py_BuildValue("(K)", static_cast<unsigned long long>(time)));
  return call("stat__interval", arguments.get());
}

}  // namespace perfscope::python
