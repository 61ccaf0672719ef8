// `perf stat record` files through perf's Python scripting: at each STAT_ROUND record the
// script's stat__EVENT(cpu, thread, time, value, enabled, running) for each event (':' in its
// name as '_'), then stat__interval(time), with the counts perf script gives them: the
// difference from the round before, scaled by enabled/running, added up over every CPU and
// thread unless the recording asked for them apart (-A, --per-thread).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/core/records.hpp"
#include "python_api.hpp"

namespace perfscope::python {

class StatRounds {
 public:
  StatRounds(PyObject* main_dict, const PerfDataReader& reader);

  // THREAD_MAP, CPU_MAP, STAT_CONFIG, STAT and STAT_ROUND records; other records are ignored.
  // False when a handler raised (the Python error is set); `handler` then names it.
  bool observe(const RecordView& view, std::string& handler);

 private:
  struct Counts {
    std::uint64_t value = 0, enabled = 0, running = 0;
  };
  bool round(std::uint64_t time, std::string& handler);
  Counts scaled(Counts now, Counts& previous) const;

  PyObject* main_dict_;
  const PerfDataReader& reader_;
  std::vector<std::int32_t> cpus_{-1};     // the recording's CPUs (CPU_MAP); -1: any
  std::vector<std::int32_t> threads_{-1};  // its threads' pids (THREAD_MAP)
  std::uint64_t aggregation_ = 1;          // perf's aggr_mode; 1 is AGGR_GLOBAL
  bool scale_ = true;
  // By event index: the last raw counts per (CPU index, thread index), and what the round before
  // saw, per entry and added up.
  std::vector<std::map<std::pair<std::size_t, std::size_t>, Counts>> raw_, previous_;
  std::vector<Counts> previous_total_;
  std::vector<std::string> handler_names_;
};

}  // namespace perfscope::python
