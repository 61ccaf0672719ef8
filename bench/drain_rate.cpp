// Drain benchmark: sample cpu-clock at 100 kHz (a 10 us period) on a busy command for two
// seconds with a default-sized buffer per CPU, and report what was delivered and what was lost.
// Target: zero LOST records.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "perfscope/abi/sample_format.hpp"
#include "perfscope/core/error.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/ring_buffer.hpp"
#include "perfscope/engine/sampling_session.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace {

struct CountingConsumer : perfscope::RecordConsumer {
  std::uint64_t records = 0;
  void consume(const perfscope::SessionRecord&) override { ++records; }
};

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  std::uint64_t period_ns = 10'000;  // 100 kHz of CPU time
  try {
    auto groups = perfscope::parse_event_list("cpu-clock");
    namespace sf = perfscope::abi::sample_format;
    groups[0].events[0].attr.set_sample_period(period_ns).set_sample_type(sf::ip | sf::period);
    std::string busy =
        fmt::format("end=$(( $(date +%s%N) + {} )); while [ $(date +%s%N) -lt $end ]; do :; done",
                    static_cast<long long>(seconds * 1e9));
    perfscope::SamplingSession session(groups, perfscope::Target::command({"/bin/sh", "-c", busy}));
    session.open();
    auto started = std::chrono::steady_clock::now();
    session.start();
    CountingConsumer consumer;
    std::uint64_t wakeups = 0;
    while (!session.command_exited()) {
      session.poll(consumer, 100);
      ++wakeups;
    }
    session.wait_for_command();
    session.drain(consumer);
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    auto stats = session.total_stats();
    fmt::print("drain: cpu-clock period {} ns (100 kHz), {} buffer(s) of {} data pages, {:.2f} s\n",
               period_ns, session.buffer_count(), perfscope::RingBuffer::default_data_pages(),
               elapsed);
    fmt::print("drain: {} records, {} samples ({:.0f}/s), {} polls, {} bytes\n", stats.records,
               stats.samples, static_cast<double>(stats.samples) / elapsed, wakeups, stats.bytes);
    fmt::print("drain: LOST records {} (lost {}), LOST_SAMPLES {}, THROTTLE {}\n",
               stats.lost_records, stats.lost, stats.lost_samples, stats.throttles);
    bool pass = stats.lost == 0 && stats.lost_samples == 0;
    fmt::print("drain_lost {} (target 0): {}\n", stats.lost + stats.lost_samples,
               pass ? "PASS" : "MISS");
    if (stats.throttles != 0) {
      fmt::print("drain: the kernel throttled sampling {} times (perf_cpu_time_max_percent {}%)\n",
                 stats.throttles,
                 perfscope::sys::read_sysctl("perf_cpu_time_max_percent").value_or(-1));
    }
    return 0;
  } catch (const perfscope::Error& error) {
    fmt::print(stderr, "drain: {}\n", error.what());
    return 1;
  }
}
