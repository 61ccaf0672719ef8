// The recorder's CPU time per record as the number of ring buffers grows: THREADS threads of this
// process, recorded per thread (one buffer each), each making CALLS getpid calls sampled on every
// hit (syscalls:sys_enter_getpid, period 1), written to a perf.data file through RecordingSession
// and PerfDataSink. Measured for the buffers merged by timestamp while recording (what `record`
// did before) and taken buffer by buffer as they lie (what it does now, as perf record): the
// draining thread's own CPU time (RUSAGE_THREAD) divided by the records it wrote. Needs root (a
// tracepoint at perf_event_paranoid 2).
//
//   record_drain_cost [THREADS] [CALLS] [PAGES]      defaults: 256 2000 16
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/recording/perf_data_sink.hpp"
#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event_spec.hpp"

namespace {

namespace sf = perfscope::abi::sample_format;

double thread_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_THREAD, &usage);
  auto seconds = [](const timeval& value) {
    return static_cast<double>(value.tv_sec) + static_cast<double>(value.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct Result {
  std::uint64_t records = 0, lost = 0;
  double cpu = 0;
  std::size_t buffers = 0;
};

Result run(std::size_t thread_count, std::uint64_t calls, std::size_t pages, bool merged) {
  std::atomic<bool> go{false};
  std::atomic<std::size_t> ready{0}, finished{0};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < thread_count; ++i) {
    threads.emplace_back([&] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      for (std::uint64_t call = 0; call < calls; ++call) ::syscall(SYS_getpid);
      finished.fetch_add(1);
    });
  }
  while (ready.load() < thread_count) std::this_thread::yield();
  auto groups = perfscope::parse_event_list("syscalls:sys_enter_getpid");
  groups[0].events[0].attr.set_sample_period(1).set_sample_type(sf::ip | sf::tid | sf::time |
                                                                sf::period);
  perfscope::SamplingOptions options;
  options.inherit = false;
  options.data_pages = pages;
  options.time_ordered = merged;
  std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("record_drain_cost_{}", ::getpid()))
          .string();
  Result result;
  try {
    perfscope::RecordingSession session(std::move(groups), perfscope::Target::process(::getpid()),
                                        options);
    session.open();
    perfscope::PerfDataWriter writer(path, session.file_events());
    perfscope::PerfDataSink sink(writer);
    session.synthesize(sink);
    writer.end_init();
    writer.end_round();
    session.start();
    double before = thread_cpu_seconds();
    go.store(true);
    while (finished.load() < thread_count) session.poll(sink, 10);
    session.stop(sink);
    result.cpu = thread_cpu_seconds() - before;
    writer.finish(perfscope::PerfDataFeatures{});
    auto stats = session.stats();
    result.records = stats.totals.records;
    result.lost = stats.totals.lost;
    result.buffers = session.sampling().buffer_count();
  } catch (...) {
    go.store(true);
    for (auto& thread : threads) thread.join();
    std::filesystem::remove(path);
    throw;
  }
  for (auto& thread : threads) thread.join();
  std::filesystem::remove(path);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t thread_count = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  std::uint64_t calls = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2000;
  std::size_t pages = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 16;
  try {
    Result as_written = run(thread_count, calls, pages, false);
    Result merged = run(thread_count, calls, pages, true);
    for (auto [name, result] : {std::pair{"as written", as_written}, std::pair{"merged", merged}}) {
      fmt::print(
          "record_drain_cost: {:10} {} buffers: {} records ({} lost), drain CPU {:.3f} s, "
          "{:.0f} ns/record\n",
          name, result.buffers, result.records, result.lost, result.cpu,
          result.records ? result.cpu * 1e9 / static_cast<double>(result.records) : 0.0);
    }
    double ns_written =
        as_written.cpu / static_cast<double>(std::max<std::uint64_t>(as_written.records, 1));
    double ns_merged = merged.cpu / static_cast<double>(std::max<std::uint64_t>(merged.records, 1));
    fmt::print("record_drain_cost: merged/as-written CPU per record {:.2f}\n",
               ns_written > 0 ? ns_merged / ns_written : 0.0);
    return 0;
  } catch (const perfscope::Error& error) {
    fmt::print(stderr, "record_drain_cost: {}\n", error.what());
    return 1;
  }
}
