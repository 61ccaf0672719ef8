// perfscope push and record's --push options: option parsing, the HTTP helper's whereabouts and
// the messages. Requests, the spool, retries and interval profiles are in src/analysis/push/.
#include "cmd_push.hpp"

#include <fmt/format.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "command_line.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/analysis/push/interval_profiles.hpp"
#include "perfscope/analysis/push/push_client.hpp"
#include "perfscope/analysis/push/push_request.hpp"
#include "perfscope/analysis/recording/recording_session.hpp"
#include "perfscope/core/safe_text.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

namespace {

std::uint64_t unix_seconds() { return static_cast<std::uint64_t>(std::time(nullptr)); }

std::string this_host() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::pair<std::string, std::string> parse_label(const std::string& text) {
  std::size_t equals = text.find('=');
  if (equals == 0 || equals == std::string::npos) {
    throw std::invalid_argument(fmt::format(
        "--push-label '{}': give KEY=VALUE, e.g. --push-label env=staging", terminal_safe(text)));
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

std::unique_ptr<PushClient> make_client(const PushOptions& options) {
  PushClientOptions client;
  client.base_url = options.url;
  client.authorization = load_push_authorization(options.auth_file).value_or("");
  client.timeout_seconds = options.timeout_seconds;
  auto bound = static_cast<std::uint64_t>(options.spool_mb * 1e6);
  PushSpool spool(options.spool, bound);
  if (spool.size() != 0) {
    fmt::print(stderr, "perfscope: push: {} profile{} left in {} by an earlier run: sent first\n",
               spool.size(), spool.size() == 1 ? "" : "s", options.spool);
  }
  return std::make_unique<PushClient>(
      make_helper_transport(
          find_helper("perfscope-push-http", "the HTTP helper built with perfscope, from libcurl",
                      "perfscope_push_http"),
          options.ca_file),
      std::move(spool), client,
      [](const std::string& line) { fmt::print(stderr, "perfscope: push: {}\n", line); });
}

PushTarget make_target(const PushOptions& options) {
  check_push_url(options.url);
  return PushTarget{options.url, parse_push_format(options.format).value_or(PushFormat::pyroscope),
                    options.application};
}

std::string base_of(const PushOptions& options) {
  return fmt::format("{} ({})", options.url, options.format);
}

std::string file_stem(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  for (std::string_view suffix : {".pb.gz", ".pprof", ".gz", ".data"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      return name.substr(0, name.size() - suffix.size());
    }
  }
  return name;
}

}  // namespace

void add_push_options(CLI::App& app, PushOptions& options, bool record) {
  auto name = [&](const char* option) {
    return record ? fmt::format("--push-{}", option)
                  : fmt::format("--push-{},--{}", option, option);
  };
  if (record) {
    auto* push = app.add_option(
        "--push", options.url, "Push the profile to this backend (base address: http://host:4040)");
    push->check([](const std::string& url) {
      try {
        check_push_url(url);
      } catch (const std::invalid_argument& error) {
        return std::string(error.what());
      }
      return std::string();
    });
    app.add_option("--push-interval", options.interval_seconds,
                   "With --push: one profile per SECS seconds, recording until stopped")
        ->check(CLI::Range(1.0, 86400.0))
        ->needs(push);
  }
  app.add_option(name("format"), options.format, "pyroscope (POST /ingest) or parca (writeraw)")
      ->check(CLI::IsMember({"pyroscope", "parca"}));
  app.add_option(name("name"), options.application,
                 "Application name (Pyroscope name=, Parca __name__; default perfscope)");
  app.add_option(name("label"), options.labels, "Extra label KEY=VALUE (repeatable)")
      ->check([](const std::string& text) {
        try {
          parse_label(text);
        } catch (const std::invalid_argument& error) {
          return std::string(error.what());
        }
        return std::string();
      });
  app.add_option(name("auth-file"), options.auth_file,
                 "Credentials file (mode 600): \"Bearer TOKEN\", \"Basic USER:PASSWORD\" or a "
                 "token; else PERFSCOPE_PUSH_TOKEN or PERFSCOPE_PUSH_USER/_PASSWORD")
      ->check(readable_file());
  app.add_option(name("ca-file"), options.ca_file,
                 "HTTPS: check the server against these PEM certificates, not the system's")
      ->check(readable_file());
  app.add_option(name("spool"), options.spool,
                 "Keep undelivered profiles in this directory (sent first by the next run)");
  app.add_option(name("spool-size"), options.spool_mb,
                 "Bound of the queue (in memory or the spool) in MB; the oldest go first (64)")
      ->check(CLI::Range(0.001, 1e6));
  app.add_option(name("timeout"), options.timeout_seconds, "Seconds per request (30)")
      ->check(CLI::Range(1, 3600));
  app.add_option(name("retry-time"), options.retry_seconds,
                 "Seconds to keep retrying a failing backend before giving up (60)")
      ->check(CLI::Range(0.0, 86400.0));
}

RecordPush::RecordPush(const PushOptions& options, RecordingSession& session,
                       RecordingSink* forward, std::string command, std::uint64_t sample_rate,
                       std::optional<StackCompletion> completion)
    : options_(options),
      target_(std::make_unique<PushTarget>(make_target(options))),
      host_(this_host()),
      command_(std::move(command)),
      sample_rate_(sample_rate) {
  for (const auto& label : options.labels) extra_labels_.push_back(parse_label(label));
  client_ = make_client(options);
  ProfileOptions profile;
  profile.keep_samples = false;  // folded: an interval's memory is its distinct stacks
  sink_ = std::make_unique<IntervalProfileSink>(profile, forward);
  const SamplingSession& sampling = session.sampling();
  for (std::size_t i = 0; i < sampling.events().size(); ++i) {
    // Completed stacks (-g, --call-graph dwarf) arrive in the completed samples' layout.
    sink_->add_event(sampling.events()[i].name,
                     completion ? StackCompleter::output_config(sampling.config(i), *completion)
                                : sampling.config(i));
  }
  if (auto clock = session.clock_data()) {
    wall_clock_at_zero_ = clock->wall_clock_at_zero();
    clockid_ = static_cast<std::int32_t>(clock->clockid);
  }
  for (const auto& word : own_command_line()) {
    if (!command_line_.empty()) command_line_.push_back(' ');
    command_line_ += word;
  }
  interval_start_ = unix_seconds();
  next_ = options_.interval_seconds > 0
              ? std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(std::llround(options_.interval_seconds * 1000))
              : std::chrono::steady_clock::time_point::max();
  client_->start_background();
}

RecordPush::~RecordPush() = default;

RecordingSink& RecordPush::sink() { return *sink_; }

void RecordPush::tick() {
  auto now = std::chrono::steady_clock::now();
  if (!ticked_) {
    // The first interval starts with sampling (the first poll), not with the set-up before it.
    ticked_ = true;
    interval_start_ = unix_seconds();
    if (options_.interval_seconds > 0) {
      next_ = now + std::chrono::milliseconds(std::llround(options_.interval_seconds * 1000));
    }
    return;
  }
  if (now < next_) return;
  close_interval();
  auto interval = std::chrono::milliseconds(std::llround(options_.interval_seconds * 1000));
  next_ += interval;
  if (next_ <= now) next_ = now + interval;  // fell behind: no burst of short intervals
}

void RecordPush::close_interval() {
  Profile profile = sink_->take_interval();
  // Whole seconds, back to back: an interval that ended within the second it began (a late tick
  // then a punctual one) still gets one, and the next begins where it ended.
  std::uint64_t from = interval_start_;
  std::uint64_t until = std::max(unix_seconds(), from + 1);
  interval_start_ = until;
  if (profile.summary.samples == 0) {
    ++empty_intervals_;
    return;
  }
  profile.summary.hostname = host_;
  profile.summary.command_line = command_line_;
  profile.summary.wall_clock_ns = wall_clock_at_zero_;
  profile.summary.clockid = clockid_;
  // from/until travel as the request's span (Pyroscope's query, the pprof's time_nanos and
  // duration_nanos for Parca), never as labels: a label per interval would make every interval a
  // series of its own.
  auto labels = push_labels(profile, host_, command_, extra_labels_);
  client_->enqueue(build_push_request(
      *target_, make_push_profile(profile, std::move(labels), from, until, sample_rate_)));
  ++intervals_;
}

bool RecordPush::finish() {
  close_interval();
  if (std::size_t pending = client_->pending(); pending != 0) {
    fmt::print(stderr, "perfscope: push: delivering {} queued profile{} (for up to {} s)\n",
               pending, pending == 1 ? "" : "s", options_.retry_seconds);
  }
  bool done = client_->stop_background(
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(std::llround(options_.retry_seconds * 1000)));
  PushStats stats = client_->stats();
  std::size_t left = client_->pending();
  fmt::print(stderr,
             "[ perfscope record: pushed {} profile{} to {}: {} delivered, {} rejected, {} "
             "dropped by the queue bound{} ]\n",
             intervals_, intervals_ == 1 ? "" : "s", base_of(options_), stats.delivered,
             stats.rejected, stats.dropped,
             empty_intervals_ ? fmt::format(", {} empty interval{} not sent", empty_intervals_,
                                            empty_intervals_ == 1 ? "" : "s")
                              : std::string());
  if (left != 0) {
    if (!options_.spool.empty()) {
      fmt::print(stderr,
                 "perfscope: push: {} profile{} not delivered: kept in {} (the next push or "
                 "record --push with --push-spool {} sends them)\n",
                 left, left == 1 ? "" : "s", options_.spool, options_.spool);
    } else {
      fmt::print(stderr,
                 "perfscope: push: {} profile{} not delivered and lost (give --push-spool DIR to "
                 "keep them across a backend outage)\n",
                 left, left == 1 ? "" : "s");
    }
  }
  return done && stats.rejected == 0 && stats.dropped == 0;
}

PushCommand::PushCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "push");
  app_->add_option("profile", profile_, "A perf.data file (sent as pprof) or a .pb.gz")
      ->required()
      ->check(readable_file());
  app_->add_option("url", options_.url, "The backend's base address (http://host:4040)")
      ->required()
      ->check([](const std::string& url) {
        try {
          check_push_url(url);
        } catch (const std::invalid_argument& error) {
          return std::string(error.what());
        }
        return std::string();
      });
  add_push_options(*app_, options_, false);
  app_->footer(
      "Examples:\n"
      "  perfscope push perf.data http://localhost:4040\n"
      "  perfscope push --format parca --auth-file ~/.parca-token --label env=ci profile.pb.gz "
      "https://parca.example.com");
}

int PushCommand::run() {
  PushTarget target = make_target(options_);
  std::vector<std::pair<std::string, std::string>> extra;
  for (const auto& label : options_.labels) extra.push_back(parse_label(label));

  std::ifstream in(profile_, std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof magic);
  bool perf_data = in.gcount() == 8 && std::string_view(magic, 8) == "PERFILE2";
  in.close();
  struct stat info {};
  ::stat(profile_.c_str(), &info);
  auto modified = static_cast<std::uint64_t>(info.st_mtime);

  PushProfile push;
  if (perf_data) {
    ProfileOptions options;
    options.keep_samples = false;
    Profile profile = build_profile(PerfDataReader::open(profile_), options);
    if (profile.summary.samples == 0) {
      throw std::invalid_argument(
          fmt::format("{}: the recording has no samples: nothing to push", profile_));
    }
    std::uint64_t from = 0, until = 0;
    const ProfileSummary& summary = profile.summary;
    if (summary.wall_clock_ns) {
      from = (*summary.wall_clock_ns + summary.first_time) / 1000000000u;
      until = (*summary.wall_clock_ns + summary.last_time) / 1000000000u + 1;
    } else {
      // Without CLOCK_DATA (perf record without -k) only the file's time says when.
      std::uint64_t span = (summary.last_time - summary.first_time) / 1000000000u + 1;
      until = modified;
      from = modified - std::min(span, modified);
    }
    std::string host = summary.hostname.empty() ? this_host() : summary.hostname;
    auto labels = push_labels(profile, host, busiest_command(profile), extra);
    push = make_push_profile(profile, std::move(labels), from, until, 0);
  } else {
    std::ifstream file(profile_, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    auto span = check_pprof(bytes, profile_);
    push.pprof = std::move(bytes);
    push.from_seconds = span ? span->first : modified - std::min<std::uint64_t>(modified, 10);
    push.until_seconds = span ? std::max(span->second, span->first + 1) : modified;
    Profile none;
    push.labels = push_labels(none, this_host(), file_stem(profile_), extra);
    push.labels.erase(std::remove_if(push.labels.begin(), push.labels.end(),
                                     [](const auto& label) { return label.second.empty(); }),
                      push.labels.end());
  }

  std::unique_ptr<PushClient> client = make_client(options_);
  client->enqueue(build_push_request(target, push));
  bool done =
      client->deliver(std::chrono::steady_clock::now() +
                      std::chrono::milliseconds(std::llround(options_.retry_seconds * 1000)));
  PushStats stats = client->stats();
  std::size_t left = client->pending();
  fmt::print(stderr, "perfscope push: {} delivered, {} rejected, {} dropped to {}\n",
             stats.delivered, stats.rejected, stats.dropped, base_of(options_));
  if (left != 0) {
    fmt::print(stderr, "perfscope push: {} profile{} not delivered{}\n", left, left == 1 ? "" : "s",
               options_.spool.empty()
                   ? std::string(" (give --spool DIR to keep them for a later push)")
                   : fmt::format(": kept in {} for the next push", options_.spool));
  }
  return done && stats.rejected == 0 && stats.dropped == 0 ? 0 : 1;
}

}  // namespace perfscope::cli
