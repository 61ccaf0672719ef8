// perfscope push: delivers a profile (a perf.data file, converted to pprof, or a .pb.gz) to a
// continuous-profiling backend (Pyroscope or Parca); and the --push options of `record`, which
// push one profile per interval while recording.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "perfscope/analysis/unwinding/stack_completion.hpp"

namespace perfscope {
class PushClient;
class IntervalProfileSink;
class RecordingSession;
class RecordingSink;
struct ClockData;
struct PushTarget;
}  // namespace perfscope

namespace perfscope::cli {

struct PushOptions {
  std::string url;
  std::string format = "pyroscope";
  std::string application = "perfscope";
  std::string auth_file;
  std::string ca_file;  // PEM certificates for HTTPS instead of the system's
  std::string spool;
  double spool_mb = 64;
  std::vector<std::string> labels;  // KEY=VALUE
  int timeout_seconds = 30;
  double retry_seconds = 60;    // how long to keep retrying before giving up (push; record's end)
  double interval_seconds = 0;  // record: one profile per interval (0: one for the recording)
  bool keep_file = false;       // record: -o was given, so the perf.data file is written too
};

// The --push-* options (and for `push`, their short spellings).
void add_push_options(CLI::App& app, PushOptions& options, bool record);

// `record --push`: one profile per interval built from the live records, queued and delivered by
// a background thread; records go on to `forward` (the perf.data file) when there is one.
class RecordPush {
 public:
  // `completion`: how the recording completes its stacks on their way here (their layout).
  RecordPush(const PushOptions& options, RecordingSession& session, RecordingSink* forward,
             std::string command, std::uint64_t sample_rate,
             std::optional<StackCompletion> completion);
  ~RecordPush();
  RecordingSink& sink();
  // After each poll: closes the interval when it is due.
  void tick();
  // At the recording's end: the last interval, then delivery until done or the retry time is
  // up. Returns false when profiles are left undelivered (spooled, or lost without a spool).
  bool finish();

 private:
  void close_interval();

  PushOptions options_;
  std::unique_ptr<PushTarget> target_;
  std::unique_ptr<IntervalProfileSink> sink_;
  std::unique_ptr<PushClient> client_;
  std::vector<std::pair<std::string, std::string>> extra_labels_;
  std::string host_, command_, command_line_;
  std::uint64_t sample_rate_;
  std::optional<std::uint64_t> wall_clock_at_zero_;
  std::optional<std::int32_t> clockid_;
  std::chrono::steady_clock::time_point next_;
  std::uint64_t interval_start_ = 0;  // Unix seconds
  std::uint64_t intervals_ = 0, empty_intervals_ = 0;
  bool ticked_ = false;
};

class PushCommand {
 public:
  explicit PushCommand(CLI::App& app);
  bool selected() const { return app_->parsed(); }
  // 0 when everything was delivered; 1 otherwise (what was spooled is said).
  int run();

 private:
  CLI::App* app_;
  std::string profile_;
  PushOptions options_;
};

}  // namespace perfscope::cli
