#include "perfscope/analysis/push/push_client.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>

#include "perfscope/core/safe_text.hpp"

namespace perfscope {

namespace {

// 408 (timeout) and 429 (slow down) say "later"; other 4xx say the request itself is wrong
// (format, credentials, limits), which no retry changes.
bool permanent(long status) {
  return status >= 400 && status < 500 && status != 408 && status != 429;
}

std::string response_text(const HttpResponse& response) {
  if (!response.reached) return response.error;
  std::string body = response.body.substr(0, 300);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  return body.empty() ? fmt::format("HTTP {}", response.status)
                      : fmt::format("HTTP {}: {}", response.status, terminal_safe(body));
}

}  // namespace

PushClient::PushClient(std::unique_ptr<HttpTransport> transport, PushSpool spool,
                       PushClientOptions options, std::function<void(const std::string&)> report)
    : transport_(std::move(transport)),
      spool_(std::move(spool)),
      options_(std::move(options)),
      report_(std::move(report)) {}

PushClient::~PushClient() {
  if (thread_.joinable()) stop_background(std::chrono::steady_clock::now());
}

void PushClient::enqueue(HttpRequest request) {
  std::vector<std::string> dropped;
  {
    std::lock_guard lock(mutex_);
    dropped = spool_.add(std::move(request));
    stats_.dropped += dropped.size();
  }
  for (const auto& what : dropped) {
    report_(fmt::format("the push queue is full ({:.1f} MB bound{}): dropped {}",
                        static_cast<double>(spool_.max_bytes()) / 1e6,
                        spool_.directory().empty() ? "" : " of spool " + spool_.directory(), what));
  }
  wake_.notify_all();
}

PushClient::Outcome PushClient::attempt() {
  std::optional<PushSpool::Queued> queued;
  std::vector<std::string> problems;
  {
    std::lock_guard lock(mutex_);
    queued = spool_.front(problems);
  }
  for (const auto& problem : problems) report_(problem);
  if (!queued) return Outcome::empty;
  queued->request.url = push_url(options_.base_url, queued->request);
  std::string where = queued->request.url.substr(0, queued->request.url.find('?'));
  HttpResponse response =
      transport_->post(queued->request, options_.authorization, options_.timeout_seconds);
  std::lock_guard lock(mutex_);
  if (response.reached && response.status >= 200 && response.status < 300) {
    spool_.remove(queued->sequence);
    ++stats_.delivered;
    if (failing_) {
      report_(fmt::format("{} answers again: delivered {}, {} still queued", where,
                          queued->request.description, spool_.size()));
    }
    failing_ = false;
    backoff_ = std::chrono::milliseconds(0);
    return Outcome::delivered;
  }
  if (response.reached && permanent(response.status)) {
    spool_.remove(queued->sequence);
    ++stats_.rejected;
    report_(fmt::format("the backend rejected {} ({}); not retried", queued->request.description,
                        response_text(response)));
    return Outcome::rejected;
  }
  ++stats_.failed_attempts;
  backoff_ =
      backoff_.count() == 0 ? options_.first_retry : std::min(backoff_ * 2, options_.max_retry);
  next_attempt_ = std::chrono::steady_clock::now() + backoff_;
  report_(fmt::format("push of {} to {} failed ({}); retrying in {:.1f} s, {} queued{}",
                      queued->request.description, where, response_text(response),
                      static_cast<double>(backoff_.count()) / 1e3, spool_.size(),
                      spool_.directory().empty() ? "" : " in " + spool_.directory()));
  failing_ = true;
  return Outcome::failed;
}

bool PushClient::deliver(std::chrono::steady_clock::time_point deadline) {
  // At least one attempt, however close the deadline: a retry time of 0 means "try once".
  for (bool first = true;; first = false) {
    {
      std::unique_lock lock(mutex_);
      if (spool_.size() == 0) return true;
      auto now = std::chrono::steady_clock::now();
      if (next_attempt_ > now) {
        if (next_attempt_ > deadline) return false;
        lock.unlock();
        std::this_thread::sleep_until(next_attempt_);
      }
    }
    if (!first && std::chrono::steady_clock::now() > deadline) return pending() == 0;
    if (attempt() == Outcome::empty) return true;
  }
}

void PushClient::start_background() {
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  try {
    thread_ = std::thread([this] { background_loop(); });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

void PushClient::background_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    if (stopping_ && (spool_.size() == 0 || now >= stop_deadline_ ||
                      (failing_ && next_attempt_ > stop_deadline_))) {
      return;
    }
    if (spool_.size() == 0) {
      wake_.wait(lock);
      continue;
    }
    if (next_attempt_ > now) {
      wake_.wait_until(lock, stopping_ ? std::min(next_attempt_, stop_deadline_) : next_attempt_);
      continue;
    }
    lock.unlock();
    attempt();
    lock.lock();
  }
}

bool PushClient::stop_background(std::chrono::steady_clock::time_point deadline) {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    stop_deadline_ = deadline;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  return pending() == 0;
}

PushStats PushClient::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::size_t PushClient::pending() const {
  std::lock_guard lock(mutex_);
  return spool_.size();
}

std::uint64_t PushClient::pending_bytes() const {
  std::lock_guard lock(mutex_);
  return spool_.bytes();
}

}  // namespace perfscope
