#include "python_stat_rounds.hpp"

#include <algorithm>
#include <cstring>

#include "perfscope/abi/record_type.hpp"

namespace perfscope::python {

namespace {

constexpr std::uint64_t aggregate_global = 1;  // perf's AGGR_GLOBAL
constexpr std::uint64_t term_aggr_mode = 0, term_scale = 2;

template <typename T>
bool read_at(std::span<const std::byte> bytes, std::size_t at, T& out) {
  if (at + sizeof(T) > bytes.size()) return false;
  std::memcpy(&out, bytes.data() + at, sizeof(T));
  return true;
}

// A CPU_MAP record's CPUs: a list, a bitmask (32- or 64-bit words) or a range (perf 6.1).
std::vector<std::int32_t> cpu_list(std::span<const std::byte> payload) {
  std::vector<std::int32_t> cpus;
  std::uint16_t type = 0, count = 0;
  if (!read_at(payload, 0, type)) return cpus;
  if (type == 0 && read_at(payload, 2, count)) {
    for (std::uint16_t i = 0; i < count; ++i) {
      std::uint16_t cpu = 0;
      if (!read_at(payload, 4 + 2 * std::size_t{i}, cpu)) break;
      cpus.push_back(cpu == 0xffff ? -1 : cpu);
    }
  } else if (type == 1 && read_at(payload, 2, count)) {
    std::uint16_t word_size = 0;
    read_at(payload, 4, word_size);
    const std::size_t first = word_size == 8 ? 10 : 6;  // 64-bit words follow 4 bytes of padding
    for (std::uint16_t i = 0; i < count; ++i) {
      std::uint64_t word = 0;
      if (word_size == 8) {
        if (!read_at(payload, first + 8 * std::size_t{i}, word)) break;
      } else {
        std::uint32_t half = 0;
        if (!read_at(payload, first + 4 * std::size_t{i}, half)) break;
        word = half;
      }
      for (unsigned bit = 0; bit < word_size * 8u; ++bit) {
        if ((word >> bit) & 1) cpus.push_back(static_cast<std::int32_t>(i * word_size * 8u + bit));
      }
    }
  } else if (type == 2) {
    std::uint8_t any = 0;
    std::uint16_t start = 0, end = 0;
    read_at(payload, 2, any);
    read_at(payload, 4, start);
    read_at(payload, 6, end);
    if (any != 0) cpus.push_back(-1);
    for (std::uint32_t cpu = start; cpu <= end; ++cpu)
      cpus.push_back(static_cast<std::int32_t>(cpu));
  }
  return cpus;
}

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
    std::uint64_t count = 0;
    if (!read_at(payload, 0, count)) return true;
    threads_.clear();
    for (std::uint64_t i = 0; i < count; ++i) {
      std::uint64_t pid = 0;
      if (!read_at(payload, 8 + 24 * i, pid)) break;
      threads_.push_back(static_cast<std::int32_t>(pid));
    }
    if (threads_.empty()) threads_.push_back(-1);
  } else if (type == static_cast<std::uint32_t>(abi::UserRecordType::cpu_map)) {
    cpus_ = cpu_list(payload);
    if (cpus_.empty()) cpus_.push_back(-1);
  } else if (type == static_cast<std::uint32_t>(abi::UserRecordType::stat_config)) {
    std::uint64_t count = 0;
    read_at(payload, 0, count);
    for (std::uint64_t i = 0; i < count; ++i) {
      std::uint64_t tag = 0, value = 0;
      if (!read_at(payload, 8 + 16 * i, tag) || !read_at(payload, 16 + 16 * i, value)) break;
      if (tag == term_aggr_mode) aggregation_ = value;
      if (tag == term_scale) scale_ = value != 0;
    }
  } else if (type == static_cast<std::uint32_t>(abi::UserRecordType::stat)) {
    std::uint64_t id = 0, value = 0, enabled = 0, running = 0;
    std::uint32_t cpu = 0, thread = 0;
    if (!read_at(payload, 0, id) || !read_at(payload, 8, cpu) || !read_at(payload, 12, thread) ||
        !read_at(payload, 16, value) || !read_at(payload, 24, enabled) ||
        !read_at(payload, 32, running)) {
      return true;
    }
    std::size_t event = reader_.events().size();
    for (std::size_t i = 0; i < reader_.events().size(); ++i) {
      const auto& ids = reader_.events()[i].ids;
      if (std::find(ids.begin(), ids.end(), id) != ids.end()) event = i;
    }
    if (event == reader_.events().size()) return true;
    auto at = std::find(cpus_.begin(), cpus_.end(), static_cast<std::int32_t>(cpu));
    if (at == cpus_.end()) return true;
    raw_[event][{static_cast<std::size_t>(at - cpus_.begin()), thread}] = {value, enabled, running};
  } else if (type == static_cast<std::uint32_t>(abi::UserRecordType::stat_round)) {
    std::uint64_t time = 0;
    read_at(payload, 8, time);
    return round(time, handler);
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
