// RecordingSession into a perf.data file (PerfDataSink) with many ring buffers: a process of 256
// threads recorded per thread (no inherit: one buffer per thread), each thread making an exact
// number of getpid calls sampled on every hit. Small buffers make the kernel drop records; each
// hit must still be a sample in the file or counted in a LOST record (reported by the kernel or,
// for what it dropped last, the session's LOST record from the kernel's own count).
#include "perfscope/analysis/recording/recording_session.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/perf_data/perf_data_writer.hpp"
#include "perfscope/analysis/recording/perf_data_sink.hpp"
#include "perfscope/core/event_spec.hpp"
#include "support/test_support.hpp"

namespace {

using namespace perfscope;
namespace pt = perfscope::testing;
namespace abi = perfscope::abi;
namespace sf = perfscope::abi::sample_format;

constexpr std::size_t thread_count = 256;
constexpr std::uint64_t calls_per_thread = 400;

TEST(RecordingSessionTest, PerThreadBuffersOf256ThreadsLoseNothingUnreported) {
  if (!pt::tracefs_available()) GTEST_SKIP() << "tracefs is not mounted (tracepoints need it)";
  if (!pt::running_as_root()) GTEST_SKIP() << "tracepoint sampling needs root at paranoid 2";

  std::atomic<bool> go{false};
  std::atomic<std::size_t> ready{0}, finished{0};
  std::vector<pid_t> tids(thread_count);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < thread_count; ++i) {
    threads.emplace_back([&, i] {
      tids[i] = static_cast<pid_t>(::syscall(SYS_gettid));
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      for (std::uint64_t call = 0; call < calls_per_thread; ++call) ::syscall(SYS_getpid);
      finished.fetch_add(1);
    });
  }
  while (ready.load() < thread_count) std::this_thread::yield();

  auto groups = parse_event_list("syscalls:sys_enter_getpid");
  for (auto& group : groups) {
    for (auto& spec : group.events) {
      spec.attr.set_sample_period(1);
      spec.attr.set_sample_type(sf::ip | sf::tid | sf::time | sf::period);
    }
  }
  SamplingOptions options;
  options.inherit = false;  // per thread: one buffer each
  options.data_pages = 1;   // 4 KiB: about 100 samples, so that some are dropped
  options.time_ordered = false;
  std::string path = pt::temp_path("recording_256");
  std::uint64_t samples = 0, lost = 0, lost_samples = 0;
  bool kernel_counts_losses = false;  // PERF_FORMAT_LOST: Linux 6.0 and newer
  std::set<pid_t> worker_tids(tids.begin(), tids.end());
  std::uint64_t foreign_samples = 0;
  RecordingStats stats;
  try {
    RecordingSession session(std::move(groups), Target::process(::getpid()), options);
    session.open();
    ASSERT_GE(session.sampling().buffer_count(), thread_count);
    PerfDataWriter writer(path, session.file_events());
    PerfDataSink sink(writer);
    session.synthesize(sink);
    writer.end_init();
    writer.end_round();
    session.start();
    go.store(true);
    while (finished.load() < thread_count) session.poll(sink, 10);
    session.stop(sink);
    kernel_counts_losses = session.sampling().kernel_lost().has_value();
    writer.finish(PerfDataFeatures{});
    stats = session.stats();
  } catch (...) {
    go.store(true);
    for (auto& thread : threads) thread.join();
    throw;
  }
  for (auto& thread : threads) thread.join();

  PerfDataReader reader = PerfDataReader::open(path);
  EXPECT_TRUE(reader.notes().empty());
  auto error = reader.for_each_record([&](const PerfDataRecord& record) {
    auto type = static_cast<abi::RecordType>(record.view.type());
    if (type == abi::RecordType::sample) {
      std::uint32_t tid = 0;  // IP, then PID and TID
      std::memcpy(&tid, record.view.bytes.data() + 8 + 8 + 4, sizeof tid);
      if (worker_tids.count(static_cast<pid_t>(tid))) {
        ++samples;
      } else {
        ++foreign_samples;
      }
    } else if (type == abi::RecordType::lost) {
      std::uint64_t count = 0;  // header, id, lost
      std::memcpy(&count, record.view.bytes.data() + 16, sizeof count);
      lost += count;
    } else if (type == abi::RecordType::lost_samples) {
      std::uint64_t count = 0;  // header, lost
      std::memcpy(&count, record.view.bytes.data() + 8, sizeof count);
      lost_samples += count;
    }
  });
  EXPECT_FALSE(error) << error->what();
  std::filesystem::remove(path);

  const std::uint64_t hits = thread_count * calls_per_thread;
  RecordProperty("samples", std::to_string(samples));
  RecordProperty("lost", std::to_string(lost));
  EXPECT_EQ(foreign_samples, 0u);
  EXPECT_EQ(samples, stats.totals.samples);
  EXPECT_EQ(lost, stats.totals.lost);
  // The kernel's whole count is in the file as perf record writes it (one LOST_SAMPLES record
  // at the end: perf report's "Total Lost Samples"), and equals the LOST records' sum.
  EXPECT_EQ(lost_samples, stats.totals.lost_samples);
  if (kernel_counts_losses) {
    EXPECT_GT(lost_samples, 0u);
    EXPECT_EQ(lost_samples, lost);
  }
  EXPECT_LE(samples, hits);
  // Every hit is a sample or a counted loss. The losses may also count records other than
  // samples (a thread's EXIT record, at most a few per thread).
  EXPECT_GE(samples + lost, hits) << samples << " samples, " << lost << " lost";
  EXPECT_LE(samples + lost, hits + 4 * thread_count) << samples << " samples, " << lost << " lost";
}

TEST(RecordingSessionTest, WarnsOfBiasedSharesAboveOnePercentLost) {
  EXPECT_FALSE(lost_samples_warning(1000, 0));
  EXPECT_FALSE(lost_samples_warning(99, 1));   // 1 of 100: 1 %
  auto warning = lost_samples_warning(98, 1);  // 1 of 99
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("1 of 99 records (1.0 %) were lost"), std::string::npos) << *warning;
  EXPECT_NE(warning->find("the shares may be biased"), std::string::npos) << *warning;
  EXPECT_TRUE(lost_samples_warning(0, 5));
}

}  // namespace
