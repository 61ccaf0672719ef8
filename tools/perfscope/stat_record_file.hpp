// stat record and stat report: counts kept in a perf.data file as perf stat record keeps them
// (the events' attrs and ids, THREAD_MAP, CPU_MAP, STAT_CONFIG, then at each interval and at the
// end a STAT per counter and a STAT_ROUND), and printed back from one, perf's or perfscope's, as
// stat prints them.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/core/event_spec.hpp"
#include "perfscope/engine/counting_session.hpp"
#include "stat_output.hpp"

namespace perfscope {
class PerfDataWriter;
}

namespace perfscope::cli {

class StatRecordWriter {
 public:
  // `events`: the session's events in its order (the groups flattened).
  StatRecordWriter(const std::string& path, const std::vector<EventGroupSpec>& groups,
                   std::uint64_t interval_ms);
  ~StatRecordWriter();
  StatRecordWriter(const StatRecordWriter&) = delete;
  StatRecordWriter& operator=(const StatRecordWriter&) = delete;

  // What was counted: the command's (or target's) process, or -1 for every one.
  void begin(std::int32_t pid, const std::string& comm);
  // Cumulative counts: an interval's end (`time_ns` since the start) or the final round (`time_ns`
  // the elapsed time).
  void round(const std::vector<EventCount>& counts, bool final, std::uint64_t time_ns);
  void finish();
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  std::unique_ptr<PerfDataWriter> writer_;
  std::uint64_t interval_ms_;
};

// stat report: the file's counts printed as stat prints them (intervals, then the totals).
void report_stat_file(const std::string& path, std::FILE* out, StatFormat format,
                      std::string_view separator);

}  // namespace perfscope::cli
