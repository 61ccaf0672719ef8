// The cost of reading a group of 4 software counters on the calling thread, from the bare read(2)
// up to CountingSession::read(), and the overhead perfscope adds over the syscall (target: at most
// 5 %). Every benchmark reads a group opened the way CountingSession opens it (same events, same
// read_format, inherit), so the kernel does the same work in each and the differences are ours.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "perfscope/abi/perf_event_attr.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event.hpp"
#include "perfscope/core/event_attr.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/reading.hpp"
#include "perfscope/engine/counting_session.hpp"
#include "perfscope/engine/target.hpp"

namespace {

using perfscope::Event;
using perfscope::EventAttr;
using perfscope::abi::SoftwareEvent;
namespace rf = perfscope::abi::read_format;
namespace flag = perfscope::abi::attr_flag;

constexpr std::string_view group_spec = "{task-clock,cpu-clock,page-faults,context-switches}";
constexpr std::size_t group_size = 4;
constexpr std::uint64_t group_read_format =
    rf::total_time_enabled | rf::total_time_running | rf::id | rf::group;
// nr, time_enabled, time_running, then value and id per member.
constexpr std::size_t group_words = 3 + 2 * group_size;
using GroupBuffer = std::array<std::uint64_t, group_words>;

// The same group as group_spec, opened event by event, enabled.
std::vector<Event> open_group() {
  constexpr SoftwareEvent members[group_size] = {
      SoftwareEvent::task_clock, SoftwareEvent::cpu_clock, SoftwareEvent::page_faults,
      SoftwareEvent::context_switches};
  std::vector<Event> events;
  events.reserve(group_size);
  for (SoftwareEvent member : members) {
    EventAttr attr = EventAttr::software(member);
    attr.set_read_format(group_read_format)
        .set_flag(flag::inherit)
        .set_flag(flag::disabled, events.empty());
    events.push_back(Event::open(attr, 0, -1, events.empty() ? nullptr : &events[0]));
  }
  events[0].enable(true);
  return events;
}

// Opens the group and checks one read returns all of it; false (and the benchmark skipped with
// the reason) when it cannot.
bool open_checked(benchmark::State& state, std::vector<Event>& events) {
  try {
    events = open_group();
  } catch (const perfscope::Error& error) {
    state.SkipWithError(error.what());
    return false;
  }
  GroupBuffer buffer{};
  ssize_t bytes = events[0].read_words(buffer);
  if (bytes != static_cast<ssize_t>(sizeof buffer) || buffer[0] != group_size) {
    state.SkipWithError("a read of the group did not return its 4 members");
    return false;
  }
  return true;
}

// (a) The floor: read(2) on the leader fd into a stack buffer.
void BM_raw_read(benchmark::State& state) {
  std::vector<Event> events;
  if (!open_checked(state, events)) return;
  int fd = events[0].fd();
  GroupBuffer buffer{};
  for (auto _ : state) {
    ssize_t bytes = ::read(fd, buffer.data(), sizeof buffer);
    benchmark::DoNotOptimize(bytes);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_raw_read);

// (b) Event::read_words on the same kind of fd: the sys layer's EINTR loop and -errno convention.
void BM_event_read_words(benchmark::State& state) {
  std::vector<Event> events;
  if (!open_checked(state, events)) return;
  GroupBuffer buffer{};
  for (auto _ : state) {
    ssize_t bytes = events[0].read_words(buffer);
    benchmark::DoNotOptimize(bytes);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_event_read_words);

// (c) CountingSession::read(): read, decode, map members to events by id, sum, scale.
void BM_session_read(benchmark::State& state) {
  perfscope::CountingSession session(perfscope::parse_event_list(group_spec),
                                     perfscope::Target::calling_thread());
  try {
    session.open();
    session.start();
  } catch (const perfscope::Error& error) {
    state.SkipWithError(error.what());
    return;
  }
  for (auto _ : state) {
    const auto& counts = session.read();
    benchmark::DoNotOptimize(counts.data());
    benchmark::ClobberMemory();
  }
  const auto& counts = session.read();
  if (counts.size() != group_size || counts[0].reading.value == 0 || counts[1].reading.value == 0) {
    state.SkipWithError("the session did not count task-clock and cpu-clock");
  }
}
BENCHMARK(BM_session_read);

// (d) decode_read alone, on a buffer captured from the group.
void BM_decode_read(benchmark::State& state) {
  std::vector<Event> events;
  if (!open_checked(state, events)) return;
  GroupBuffer buffer{};
  events[0].read_words(buffer);
  std::array<perfscope::Reading, group_size> readings{};
  for (auto _ : state) {
    benchmark::DoNotOptimize(buffer.data());
    std::size_t members = perfscope::decode_read(buffer, group_read_format, readings);
    benchmark::DoNotOptimize(members);
    benchmark::DoNotOptimize(readings.data());
  }
}
BENCHMARK(BM_decode_read);

// Prints as usual and keeps each benchmark's CPU time per call (the median across repetitions when
// there are repetitions) for the overhead summary. CPU time, not real time: on a shared machine a
// benchmark that was preempted would otherwise be charged for the other program's time slices.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  explicit RecordingReporter(OutputOptions options) : ConsoleReporter(options) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Aggregate && !median) continue;
      Time& time = times_[run.run_name.function_name];
      if (median || !time.from_median) time = {run.GetAdjustedCPUTime(), median};
    }
  }
  // CPU time per call in the reported unit (ns), or a negative number when it did not run.
  double time_of(const std::string& name) const {
    auto found = times_.find(name);
    return found == times_.end() ? -1 : found->second.value;
  }

 private:
  struct Time {
    double value = 0;
    bool from_median = false;
  };
  std::map<std::string, Time> times_;
};

void print_overhead(const RecordingReporter& reporter) {
  double raw = reporter.time_of("BM_raw_read");
  double words = reporter.time_of("BM_event_read_words");
  double session = reporter.time_of("BM_session_read");
  double decode = reporter.time_of("BM_decode_read");
  if (raw <= 0) {
    std::printf("group read overhead: not measured (the raw read benchmark did not run)\n");
    return;
  }
  auto line = [raw](const char* what, double time) {
    if (time < 0) return;
    std::printf("  %-26s %8.1f ns  %6.3fx raw read(2)  (%+.1f %%)\n", what, time, time / raw,
                (time / raw - 1) * 100);
  };
  std::printf("\ngroup read of %zu software events (median CPU time per call):\n", group_size);
  std::printf("  %-26s %8.1f ns\n", "raw read(2)", raw);
  line("Event::read_words", words);
  line("CountingSession::read", session);
  if (decode >= 0) std::printf("  %-26s %8.1f ns\n", "decode_read alone", decode);
  if (session > 0) {
    double ratio = session / raw;
    std::printf("group_read_ratio %.3f (CountingSession::read / raw read(2); target <= 1.05): %s\n",
                ratio, ratio <= 1.05 ? "PASS" : "MISS");
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Medians of interleaved repetitions unless told otherwise: a single run of each is at the mercy
  // of whatever else the machine did at the time, and 5 % is a small difference.
  std::vector<char*> args(argv, argv + argc);
  bool repetitions_given = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]).starts_with("--benchmark_repetitions")) repetitions_given = true;
  }
  static char repetitions[] = "--benchmark_repetitions=10";
  static char interleave[] = "--benchmark_enable_random_interleaving=true";
  static char aggregates[] = "--benchmark_report_aggregates_only=true";
  if (!repetitions_given) args.insert(args.begin() + 1, {repetitions, interleave, aggregates});
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  // Colours only on a terminal: the output is also read from logs.
  RecordingReporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
                                                   : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  print_overhead(reporter);
  return 0;
}
