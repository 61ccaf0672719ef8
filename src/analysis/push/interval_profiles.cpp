#include "perfscope/analysis/push/interval_profiles.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "perfscope/analysis/exporters/profile_exporters.hpp"
#include "profile.pb.h"

namespace perfscope {

namespace {

// Inflates a gzip stream, refusing more than `limit` bytes out (a pprof bomb).
std::optional<std::string> gunzip(const std::string& bytes, std::size_t limit) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK) return std::nullopt;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buffer[65536];
  int status = Z_OK;
  while (status == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    status = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - stream.avail_out);
    if (out.size() > limit) status = Z_MEM_ERROR;
  }
  inflateEnd(&stream);
  if (status != Z_STREAM_END) return std::nullopt;
  return out;
}

}  // namespace

IntervalProfileSink::IntervalProfileSink(ProfileOptions options, RecordingSink* forward)
    : builder_(std::move(options)), forward_(forward) {}

void IntervalProfileSink::record(const RecordView& view, std::size_t event,
                                 const ParseConfig& config) {
  if (forward_) forward_->record(view, event, config);
  builder_.observe(view, static_cast<std::uint32_t>(event));
}

void IntervalProfileSink::end_round() {
  if (forward_) forward_->end_round();
}

std::vector<std::pair<std::string, std::string>> push_labels(
    const Profile& profile, const std::string& host, const std::string& command,
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::string events;
  for (const ProfileEvent& event : profile.events) {
    if (!events.empty()) events.push_back('+');
    events += event.name;
  }
  std::vector<std::pair<std::string, std::string>> labels{
      {"host", host}, {"command", command}, {"event", events}};
  for (const auto& label : extra) {
    auto same = std::find_if(labels.begin(), labels.end(),
                             [&](const auto& known) { return known.first == label.first; });
    if (same != labels.end()) {
      same->second = label.second;  // the user's value wins
    } else {
      labels.push_back(label);
    }
  }
  return labels;
}

PushProfile make_push_profile(const Profile& profile,
                              std::vector<std::pair<std::string, std::string>> labels,
                              std::uint64_t from_seconds, std::uint64_t until_seconds,
                              std::uint64_t sample_rate) {
  PushProfile push;
  std::ostringstream bytes;
  write_pprof(profile, bytes);
  push.pprof = std::move(bytes).str();
  push.labels = std::move(labels);
  push.from_seconds = from_seconds;
  push.until_seconds = std::max(until_seconds, from_seconds + 1);
  push.sample_rate = sample_rate;
  return push;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> check_pprof(const std::string& bytes,
                                                                   const std::string& name) {
  constexpr std::size_t limit = 1024ull * 1024 * 1024;
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f ||
      static_cast<unsigned char>(bytes[1]) != 0x8b) {
    throw std::invalid_argument(fmt::format(
        "{}: neither a perf.data file nor a gzipped pprof profile (give a perf.data file, or a "
        ".pb.gz from `perfscope report --format pprof`)",
        name));
  }
  auto raw = gunzip(bytes, limit);
  if (!raw) {
    throw std::invalid_argument(
        fmt::format("{}: its gzip stream is damaged or inflates beyond 1 GiB", name));
  }
  perftools::profiles::Profile pb;
  if (!pb.ParseFromString(*raw) || pb.sample_type_size() == 0) {
    throw std::invalid_argument(fmt::format(
        "{}: gzipped, but not a pprof profile (profile.proto with sample types)", name));
  }
  if (pb.time_nanos() <= 0) return std::nullopt;
  auto from = static_cast<std::uint64_t>(pb.time_nanos()) / 1000000000u;
  auto until =
      (static_cast<std::uint64_t>(pb.time_nanos()) +
       static_cast<std::uint64_t>(std::max<std::int64_t>(pb.duration_nanos(), 0)) + 999999999u) /
      1000000000u;
  return std::make_pair(from, until);
}

std::string busiest_command(const Profile& profile) {
  std::vector<std::uint64_t> per_thread(profile.threads.size());
  for (const ProfileSample& sample : profile.samples) ++per_thread[sample.thread];
  for (const ProfileSampleGroup& group : profile.sample_groups) {
    per_thread[group.thread] += group.samples;
  }
  std::unordered_map<std::string, std::uint64_t> per_comm;
  std::string best;
  std::uint64_t most = 0;
  for (std::size_t i = 0; i < per_thread.size(); ++i) {
    std::uint64_t& total = per_comm[profile.threads[i].comm];
    total += per_thread[i];
    if (total > most) {
      most = total;
      best = profile.threads[i].comm;
    }
  }
  return best;
}

}  // namespace perfscope
