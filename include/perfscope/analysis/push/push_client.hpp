// Delivery of profiles to a continuous-profiling backend: a bounded queue (in memory, or a spool
// directory that outlives the process), an HTTP transport, retries with exponential backoff, and
// an account of what was delivered, rejected and dropped. Nothing is dropped silently: what the
// bound pushes out is reported by its description.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "perfscope/analysis/push/push_request.hpp"

namespace perfscope {

struct HttpResponse {
  bool reached = false;  // a response came back (else `error` says why not)
  long status = 0;
  std::string error;
  std::string body;  // the start of the response's body, for messages
};

// Sends one request. Implementations: libcurl (curl_transport.hpp, library perfscope_push_curl)
// and the perfscope-push-http helper program (for the static CLI, which cannot link libcurl).
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // `authorization`: the Authorization header's value, or empty for none.
  virtual HttpResponse post(const HttpRequest& request, const std::string& authorization,
                            int timeout_seconds) = 0;
};

// Runs `helper` (perfscope-push-http), handing it the request and credentials on its standard
// input: they never appear in a command line or an environment. `ca_file`: certificates (PEM)
// that HTTPS servers are checked against instead of the system's; empty for the system's.
std::unique_ptr<HttpTransport> make_helper_transport(std::string helper, std::string ca_file = {});

// The queue of requests not yet delivered, oldest first, bounded by `max_bytes` of bodies. With a
// directory, each request is a file there (written whole, then renamed into place) and requests
// left by an earlier run are found again; without, the queue is in memory.
class PushSpool {
 public:
  PushSpool(std::string directory, std::uint64_t max_bytes);

  // Queues `request`; returns the descriptions of the requests dropped to stay within the bound
  // (the oldest first, or `request` itself when it alone exceeds the bound).
  std::vector<std::string> add(HttpRequest request);
  struct Queued {
    std::uint64_t sequence = 0;
    HttpRequest request;
  };
  // The oldest request; nullopt when empty. A spool file that cannot be read is dropped and
  // reported in `problems`.
  std::optional<Queued> front(std::vector<std::string>& problems);
  // Removes the request `sequence` (delivered or rejected), if the bound has not dropped it yet.
  void remove(std::uint64_t sequence);
  std::size_t size() const noexcept { return entries_.size(); }
  std::uint64_t bytes() const noexcept { return bytes_; }
  const std::string& directory() const noexcept { return directory_; }
  std::uint64_t max_bytes() const noexcept { return max_bytes_; }

 private:
  struct Entry {
    std::uint64_t sequence = 0;
    std::uint64_t bytes = 0;
    std::string description;
    std::optional<HttpRequest> request;  // in memory; for a spool directory, read when sent
  };
  std::string path_of(std::uint64_t sequence) const;
  void erase_file(const Entry& entry);

  std::string directory_;
  std::uint64_t max_bytes_;
  std::deque<Entry> entries_;
  std::uint64_t bytes_ = 0;
  std::uint64_t next_sequence_ = 1;
};

struct PushClientOptions {
  std::string base_url;       // where every request goes, spooled ones included
  std::string authorization;  // the Authorization header's value; empty: none
  int timeout_seconds = 30;   // per request
  std::chrono::milliseconds first_retry{500};
  std::chrono::milliseconds max_retry{30000};
};

struct PushStats {
  std::uint64_t delivered = 0;
  std::uint64_t rejected = 0;  // answered 4xx (other than 408 and 429): retrying cannot help
  std::uint64_t dropped = 0;   // pushed out of the bounded queue
  std::uint64_t failed_attempts = 0;
};

class PushClient {
 public:
  // `report` receives one line per event worth telling (a failure, a recovery, a drop).
  PushClient(std::unique_ptr<HttpTransport> transport, PushSpool spool, PushClientOptions options,
             std::function<void(const std::string&)> report);
  ~PushClient();
  PushClient(const PushClient&) = delete;
  PushClient& operator=(const PushClient&) = delete;

  void enqueue(HttpRequest request);
  // Sends what is queued, oldest first, retrying with backoff, until nothing is left (true) or
  // `deadline` passes (false). Not while the background thread runs.
  bool deliver(std::chrono::steady_clock::time_point deadline);
  // Delivery on a thread of its own (every signal blocked there), as requests are queued.
  void start_background();
  // Stops the thread after it delivered what is queued or at `deadline`, whichever is first;
  // returns true when nothing is left.
  bool stop_background(std::chrono::steady_clock::time_point deadline);

  PushStats stats() const;
  std::size_t pending() const;
  std::uint64_t pending_bytes() const;
  const std::string& spool_directory() const noexcept { return spool_.directory(); }

 private:
  enum class Outcome { empty, delivered, rejected, failed };
  Outcome attempt();
  void background_loop();

  std::unique_ptr<HttpTransport> transport_;
  PushSpool spool_;
  PushClientOptions options_;
  std::function<void(const std::string&)> report_;
  mutable std::mutex mutex_;  // spool_, stats_, the schedule below
  std::condition_variable wake_;
  PushStats stats_;
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point next_attempt_{};
  bool failing_ = false;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point stop_deadline_{};
  std::thread thread_;
};

}  // namespace perfscope
