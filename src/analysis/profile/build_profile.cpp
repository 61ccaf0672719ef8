// build_profile: a recording's records, in perf's order, through one ProfileBuilder per worker
// (--threads), their parts merged into one Profile (profile_parts.hpp).
#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/profile/profile_parts.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/analysis_threads.hpp"
#include "perfscope/analysis/perf_data/feature_codec.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/profile/profile_builder.hpp"
#include "perfscope/analysis/symbols/symbolizer.hpp"

namespace perfscope {

namespace {

// A builder of the recording's events, carried files, sample clock and recorded build ids.
void prepare_builder(ProfileBuilder& builder, const PerfDataReader& reader) {
  for (const auto& event : reader.events()) {
    std::string name = event.name.empty()
                           ? fmt::format("{}:{:#x}", event.attr.type, event.attr.config)
                           : event.name;
    builder.add_event(std::move(name), event.config);
  }
  const PerfDataFeatures& features = reader.features();
  builder.set_recording_files(features);
  std::vector<abi::PerfEventAttr> attrs;
  for (const auto& event : reader.events()) attrs.push_back(event.attr);
  builder.set_sample_clock(attrs);
  for (const auto& entry : features.build_ids) {
    if (entry.filename.size() > 4000) continue;
    std::vector<std::byte> bytes = build_id_record(entry);
    RecordView view;
    std::memcpy(&view.header, bytes.data(), sizeof view.header);
    view.bytes = bytes;
    builder.observe(view, 0);
  }
}

// The summary's parts that come from the file's header, and the reader's notes and the walk's
// error before the other warnings.
void add_recording_summary(Profile& profile, const PerfDataReader& reader,
                           const std::optional<PerfDataError>& error) {
  const PerfDataFeatures& features = reader.features();
  ProfileSummary& summary = profile.summary;
  summary.hostname = features.hostname.value_or("");
  summary.os_release = features.osrelease.value_or("");
  summary.arch = features.arch.value_or("");
  summary.cpu_description = features.cpudesc.value_or("");
  if (features.clock_data) {
    summary.clockid = static_cast<std::int32_t>(features.clock_data->clockid);
    summary.wall_clock_ns = features.clock_data->wall_clock_at_zero();
  }
  if (features.cmdline) {
    for (const auto& word : *features.cmdline) {
      if (!summary.command_line.empty()) summary.command_line.push_back(' ');
      summary.command_line += word;
    }
  }
  std::vector<std::string> warnings = reader.notes();
  if (error) {
    summary.partial_data = partial_data_warning(reader, *error);
    warnings.push_back(summary.partial_data);
  }
  warnings.insert(warnings.end(), summary.warnings.begin(), summary.warnings.end());
  summary.warnings = std::move(warnings);
}

// build_profile's work on `workers` threads (one: the calling thread alone): each worker's
// builder takes the samples of the chunks of the walk it took and every other record, and the
// parts are merged. `samples_left_out` (asked once the walk is done) counts the samples the sieve
// left out.
Profile build_profile_on(
    const PerfDataReader& reader, const ProfileOptions& options, std::size_t workers,
    const std::function<std::optional<PerfDataError>(const PerfDataReader::ChunkVisitor&)>& walk,
    const std::function<std::uint64_t()>& samples_left_out) {
  std::vector<std::unique_ptr<ProfileBuilder>> builders;
  ProfileOptions worker_options = options;
  if (workers > 1) worker_options.symbols.shared_kernel = make_shared_kernel_symbols();
  for (std::size_t i = 0; i < workers; ++i) {
    builders.push_back(std::make_unique<ProfileBuilder>(worker_options));
    prepare_builder(*builders.back(), reader);
  }
  constexpr std::uint64_t no_chunk = ~std::uint64_t{0};
  std::vector<std::uint64_t> current_chunk(workers, no_chunk);
  auto error =
      walk([&](std::size_t worker, std::uint64_t chunk, bool owned, const PerfDataRecord& record) {
        if (record.view.header.type == static_cast<std::uint32_t>(abi::RecordType::sample)) {
          if (!owned) return;
          if (current_chunk[worker] != chunk) {
            current_chunk[worker] = chunk;
            builders[worker]->begin_chunk(chunk);
          }
        }
        builders[worker]->observe(record.view, static_cast<std::uint32_t>(record.event));
      });
  std::vector<ProfilePart> parts;
  for (auto& builder : builders) parts.push_back(builder->finish_part());
  builders.clear();
  parts.front().profile.summary.samples_read += samples_left_out();
  Profile profile = merge_profile_parts(std::move(parts), options);
  add_recording_summary(profile, reader, error);
  return profile;
}

}  // namespace

Profile build_profile(const PerfDataReader& reader, const ProfileOptions& options,
                      const PerfDataReader::RecordSieve& keep) {
  std::size_t workers = analysis_threads(options.threads, reader);
  // Counted on the walk's thread, read once it is done.
  std::uint64_t left_out = 0;
  PerfDataReader::RecordSieve sieve;
  if (keep) {
    sieve = [&](const PerfDataRecord& record) {
      if (keep(record)) return true;
      ++left_out;
      return false;
    };
  }
  return build_profile_on(
      reader, options, workers,
      [&](const PerfDataReader::ChunkVisitor& visit) -> std::optional<PerfDataError> {
        if (workers > 1) return reader.for_each_record_ordered_fanned_out(workers, visit, sieve);
        // One worker: the walk on a second thread where the file is large enough to gain.
        return reader.for_each_record_ordered_pipelined(
            [&](const PerfDataRecord& record) { visit(0, 0, true, record); },
            options.threads == 1 ? ~std::uint64_t{0} : PerfDataReader::pipelined_min_bytes, sieve);
      },
      [&] { return left_out; });
}

Profile build_profile(const PerfDataReader& reader, const ProfileOptions& options,
                      const RecordWalk& walk, std::uint64_t samples_left_out) {
  return build_profile_on(
      reader, options, 1,
      [&](const PerfDataReader::ChunkVisitor& visit) {
        return walk([&](const PerfDataRecord& record) { visit(0, 0, true, record); });
      },
      [&] { return samples_left_out; });
}

}  // namespace perfscope
