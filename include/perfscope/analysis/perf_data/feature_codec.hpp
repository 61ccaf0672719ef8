// The feature sections of perf.data (HEADER_* features), both directions: the writer encodes the
// features perfscope writes; the reader decodes those and the ones perf writes. File mode keeps
// them in sections after the data, pipe mode in HEADER_FEATURE records: the contents are the same
// bytes either way, so one codec serves both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope {

// An event as EVENT_DESC (and the writer) describes it.
struct PerfDataEvent {
  abi::PerfEventAttr attr{};
  std::string name;
  std::vector<std::uint64_t> ids;
};

// Encodes the feature sections the writer writes (also used for pipe-mode HEADER_FEATURE
// records): the contents of one feature, or empty when `features` lacks it.
std::vector<std::byte> encode_feature(unsigned bit, const PerfDataFeatures& features,
                                      const std::vector<PerfDataEvent>& events,
                                      std::uint32_t attr_size);

// One build id: a BUILD_ID feature entry or a HEADER_BUILD_ID record (the same layout), from its
// head and the file name bytes after it.
BuildIdEntry build_id_entry(const perf_data::BuildIdHead& head, std::span<const std::byte> name);
// The inverse: a BUILD_ID entry as the PERF_RECORD_HEADER_BUILD_ID record pipe mode carries
// (its size a multiple of 8).
std::vector<std::byte> build_id_record(const BuildIdEntry& entry);

// Where a decoded feature's contents go.
struct FeatureDecodeTarget {
  PerfDataFeatures& features;
  std::vector<PerfDataEvent>& event_desc;  // EVENT_DESC's events, in its order
  std::vector<std::string>& notes;         // what was worked around, one sentence each
};

// Decodes the feature `bit` from `size` bytes at `offset` of `file` (offsets in errors are the
// file's). Throws PerfDataError when the contents do not fit their layout. Features perfscope
// does not decode leave nothing but their bit in features.present (the caller's).
void decode_feature(unsigned bit, std::span<const std::byte> file, std::uint64_t offset,
                    std::uint64_t size, const FeatureDecodeTarget& into);

}  // namespace perfscope
