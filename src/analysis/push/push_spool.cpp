#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "perfscope/analysis/push/push_client.hpp"
#include "perfscope/sys/kernel_files.hpp"

namespace perfscope {

namespace {

constexpr std::string_view spool_magic = "perfscope-push 1\n";
constexpr std::string_view spool_suffix = ".push";

// "endpoint E\ncontent-type T\ndescription D\n\nBODY": the request as the next run sends it, less
// the credentials, which are never written down.
std::string encode(const HttpRequest& request) {
  std::string text(spool_magic);
  text += "endpoint " + request.endpoint + "\n";
  text += "content-type " + request.content_type + "\n";
  text += "description " + request.description + "\n\n";
  text += request.body;
  return text;
}

std::optional<HttpRequest> decode(const std::string& text) {
  if (text.compare(0, spool_magic.size(), spool_magic) != 0) return std::nullopt;
  std::size_t end = text.find("\n\n", spool_magic.size());
  if (end == std::string::npos) return std::nullopt;
  HttpRequest request;
  std::size_t at = spool_magic.size();
  while (at < end) {
    std::size_t line_end = text.find('\n', at);
    std::string_view line(text.data() + at, line_end - at);
    auto take = [&](std::string_view key, std::string& into) {
      if (line.substr(0, key.size()) != key) return false;
      into = std::string(line.substr(key.size()));
      return true;
    };
    if (!take("endpoint ", request.endpoint) && !take("content-type ", request.content_type) &&
        !take("description ", request.description)) {
      return std::nullopt;
    }
    at = line_end + 1;
  }
  if (request.endpoint.empty() || request.content_type.empty()) return std::nullopt;
  request.body = text.substr(end + 2);
  return request;
}

}  // namespace

PushSpool::PushSpool(std::string directory, std::uint64_t max_bytes)
    : directory_(std::move(directory)), max_bytes_(max_bytes) {
  if (max_bytes_ == 0) {
    throw std::invalid_argument("the push queue's size bound is 0: give a positive size");
  }
  if (directory_.empty()) return;
  if (int error = sys::create_private_directories(directory_); error != 0) {
    throw std::invalid_argument(
        fmt::format("--push-spool {}: cannot create it: {}", directory_, std::strerror(-error)));
  }
  if (::access(directory_.c_str(), W_OK | X_OK) != 0) {
    throw std::invalid_argument(
        fmt::format("--push-spool {}: not writable: {}", directory_, std::strerror(errno)));
  }
  // Requests an earlier run left: sent first, in their order.
  std::vector<std::uint64_t> found;
  for (const std::string& name : sys::list_directory(directory_)) {
    if (name.size() <= spool_suffix.size() || !name.ends_with(spool_suffix)) continue;
    std::string digits = name.substr(0, name.size() - spool_suffix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    found.push_back(std::stoull(digits));
  }
  std::sort(found.begin(), found.end());
  for (std::uint64_t sequence : found) {
    auto size = sys::regular_file_size(path_of(sequence));
    if (!size) continue;
    entries_.push_back({sequence, *size, fmt::format("spooled request {}", sequence), {}});
    bytes_ += *size;
    next_sequence_ = sequence + 1;
  }
}

std::string PushSpool::path_of(std::uint64_t sequence) const {
  return fmt::format("{}/{:020}{}", directory_, sequence, spool_suffix);
}

void PushSpool::erase_file(const Entry& entry) {
  if (!directory_.empty()) ::unlink(path_of(entry.sequence).c_str());
}

std::vector<std::string> PushSpool::add(HttpRequest request) {
  std::vector<std::string> dropped;
  Entry entry;
  entry.sequence = next_sequence_++;
  entry.description = request.description;
  std::string text;
  if (directory_.empty()) {
    entry.bytes = request.body.size() + request.endpoint.size() + request.content_type.size();
  } else {
    text = encode(request);
    entry.bytes = text.size();
  }
  if (entry.bytes > max_bytes_) {
    dropped.push_back(
        fmt::format("{}: larger than the queue's bound ({} bytes)", entry.description, max_bytes_));
    return dropped;
  }
  while (!entries_.empty() && bytes_ + entry.bytes > max_bytes_) {
    const Entry& oldest = entries_.front();
    dropped.push_back(oldest.description);
    erase_file(oldest);
    bytes_ -= oldest.bytes;
    entries_.pop_front();
  }
  if (directory_.empty()) {
    entry.request = std::move(request);
  } else if (int error = sys::replace_private_file(path_of(entry.sequence), text); error != 0) {
    dropped.push_back(fmt::format("{}: cannot write it to the spool {}: {}", entry.description,
                                  directory_, std::strerror(-error)));
    return dropped;
  }
  bytes_ += entry.bytes;
  entries_.push_back(std::move(entry));
  return dropped;
}

std::optional<PushSpool::Queued> PushSpool::front(std::vector<std::string>& problems) {
  while (!entries_.empty()) {
    Entry& entry = entries_.front();
    if (entry.request) return Queued{entry.sequence, *entry.request};
    std::string path = path_of(entry.sequence);
    auto text = sys::read_regular_file(path);
    std::optional<HttpRequest> request = text ? decode(*text) : std::nullopt;
    if (request) return Queued{entry.sequence, std::move(*request)};
    problems.push_back(
        fmt::format("dropped {}: it is not a perfscope spool file (or unreadable)", path));
    bytes_ -= entry.bytes;
    erase_file(entry);
    entries_.pop_front();
  }
  return std::nullopt;
}

void PushSpool::remove(std::uint64_t sequence) {
  auto found = std::find_if(entries_.begin(), entries_.end(),
                            [&](const Entry& entry) { return entry.sequence == sequence; });
  if (found == entries_.end()) return;
  erase_file(*found);
  bytes_ -= found->bytes;
  entries_.erase(found);
}

}  // namespace perfscope
