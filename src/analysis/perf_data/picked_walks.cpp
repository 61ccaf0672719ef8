// PerfDataReader's walks over picked parts of the data, for a caller that walked the file once
// already (annotate's sieve): a guess at where a record starts, the samples between two records,
// the records at given offsets in perf's order.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include "analysis/perf_data/round_queue.hpp"
#include "analysis/perf_data/walk_tuning.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope {

namespace {
using perf_data::cache_line;
using perf_data::drop_step;
using perf_data::prefetch_distance;
using perf_data::type_of;
}  // namespace

std::optional<std::uint64_t> PerfDataReader::finished_round_after(std::uint64_t offset) const {
  constexpr std::uint64_t search = 8 << 20;
  abi::RecordHeader round{type_of(abi::UserRecordType::finished_round), 0, abi::record_header_size};
  std::uint64_t at = std::max(offset, data_begin_);
  at = data_begin_ + (at - data_begin_ + 7) / 8 * 8;
  for (std::uint64_t stop = std::min(data_end_, at + search); at + sizeof round <= stop; at += 8) {
    if (std::memcmp(bytes_.data() + at, &round, sizeof round) == 0) return at;
  }
  return std::nullopt;
}

std::optional<PerfDataError> PerfDataReader::plain_record_at(std::uint64_t offset,
                                                             PerfDataRecord& record,
                                                             std::uint64_t& next) const {
  if (auto error = record_at(offset, data_end_, record.view, next)) return error;
  std::uint32_t type = record.view.header.type;
  if (type == type_of(abi::UserRecordType::compressed) ||
      type == type_of(abi::UserRecordType::compressed2) ||
      reinterpret_cast<std::uintptr_t>(record.view.bytes.data()) % 8 != 0) {
    return PerfDataError(offset, "a compressed or unaligned record: the file needs the full walk");
  }
  record.offset = offset;
  record.event = event_of(record.view);
  record.time = time_of(record.view, record.event);
  return std::nullopt;
}

std::optional<PerfDataError> PerfDataReader::for_each_sample_between(std::uint64_t from,
                                                                     std::uint64_t to,
                                                                     const Visitor& visit) const {
  PerfDataRecord record;
  std::uint64_t next = 0;
  to = std::min(to, data_end_);
  std::uint64_t dropped = from, next_drop = from + drop_step;
  bool populate = map_.mapped();
  auto populate_step = [&](std::uint64_t at) {
    if (populate && map_.populate_pages(at, std::min(drop_step, to - at)) != 0) populate = false;
  };
  populate_step(from);
  std::uint64_t prefetched = from & ~(cache_line - 1);
  for (std::uint64_t offset = from; offset < to; offset = next) {
    prefetched = std::max(prefetched, offset & ~(cache_line - 1));
    for (std::uint64_t ahead = std::min(offset + prefetch_distance, to); prefetched < ahead;
         prefetched += cache_line) {
      __builtin_prefetch(bytes_.data() + prefetched);
    }
    if (offset >= next_drop && map_.mapped()) {
      map_.drop_pages(dropped, offset - dropped);
      dropped = offset;
      next_drop = offset + drop_step;
      populate_step(offset);
    }
    // Only the header and the size checks for the records that are not samples.
    if (auto error = record_at(offset, data_end_, record.view, next)) return error;
    std::uint32_t type = record.view.header.type;
    if (type == static_cast<std::uint32_t>(abi::RecordType::sample)) {
      if (reinterpret_cast<std::uintptr_t>(record.view.bytes.data()) % 8 != 0) {
        return PerfDataError(offset, "an unaligned record: the file needs the full walk");
      }
      record.offset = offset;
      record.event = event_of(record.view);
      record.time = time_of(record.view, record.event);
      visit(record);
    } else if (type == type_of(abi::UserRecordType::compressed) ||
               type == type_of(abi::UserRecordType::compressed2)) {
      return PerfDataError(offset, "a compressed record: the file needs the full walk");
    }
  }
  return std::nullopt;
}

std::optional<PerfDataError> PerfDataReader::for_each_record_ordered_at(
    std::span<const std::uint64_t> offsets, const Visitor& visit) const {
  perf_data::RoundQueue queue(bytes_);
  PerfDataRecord record;
  std::uint64_t next = 0;
  // As the full walk does: the pages behind the walk and the queue go back in large steps (the
  // records of a hot function lie on nearly every page: annotate's RSS was the file's size).
  std::uint64_t dropped = offsets.empty() ? 0 : offsets.front();
  std::uint64_t next_drop = dropped + drop_step;
  for (std::uint64_t offset : offsets) {
    if (offset >= next_drop && map_.mapped()) {
      std::uint64_t until = std::min(offset, queue.held());
      if (until > dropped) {
        map_.drop_pages(dropped, until - dropped);
        dropped = until;
      }
      next_drop = offset + drop_step;
    }
    if (auto error = plain_record_at(offset, record, next)) {
      queue.flush_all(visit);
      return error;
    }
    record.trailing =
        bytes_.subspan(offset + record.view.header.size, next - offset - record.view.header.size);
    queue.take(record, true, visit);
  }
  queue.flush_all(visit);
  return data_error_;
}

}  // namespace perfscope
