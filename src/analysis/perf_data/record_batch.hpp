// Records of the ordered walk handed from the walking thread to the threads that visit them, in
// batches: the pipelined walk's one visitor and the fanned-out walk's workers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "perfscope/abi/record_type.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"

namespace perfscope::detail {

// A record as it waits in a batch: half the size of a PerfDataRecord, whose header and span the
// visiting side rebuilds from the bytes (the batches then stay in the CPUs' caches).
struct BatchedRecord {
  std::uintptr_t where;  // the address of the file's bytes, or the offset of a copy in copies
  std::uint64_t offset;
  std::uint64_t time;
  std::uint32_t event;
  std::uint32_t copied;  // 1: `where` is an offset into the batch's copies
};

// Aligned apart: the walk fills one while workers read its neighbours, which must not share a
// cache line with it.
struct alignas(128) Batch {
  std::vector<BatchedRecord> records;
  // Bytes of the records that are not the file's (decompressed, realigned, queued copies).
  std::vector<std::byte> copies;
  // The lowest file offset a record of the batch points at: the walk gives back no mapped page
  // from there on until the batch has been visited (visiting it again would fault them in).
  std::uint64_t lowest = std::numeric_limits<std::uint64_t>::max();
  // The records that are not samples, by index: all a worker takes of another worker's chunk.
  std::vector<std::uint32_t> not_samples;

  // A record of the walk over `file`: pointed at when its bytes are the file's, else copied.
  void add(const PerfDataRecord& record, std::span<const std::byte> file) {
    const std::byte* at = record.view.bytes.data();
    BatchedRecord entry{reinterpret_cast<std::uintptr_t>(at), record.offset, record.time,
                        static_cast<std::uint32_t>(record.event), 0};
    if (at < file.data() || at + record.view.bytes.size() > file.data() + file.size()) {
      entry.where = copies.size();
      entry.copied = 1;
      copies.insert(copies.end(), record.view.bytes.begin(), record.view.bytes.end());
    } else {
      lowest = std::min(lowest, static_cast<std::uint64_t>(at - file.data()));
    }
    if (record.view.header.type != static_cast<std::uint32_t>(abi::RecordType::sample)) {
      not_samples.push_back(static_cast<std::uint32_t>(records.size()));
    }
    records.push_back(entry);
  }

  void clear() {
    records.clear();
    not_samples.clear();
    copies.clear();
    lowest = std::numeric_limits<std::uint64_t>::max();
  }

  // Calls `visit(const PerfDataRecord&)` with each record in order.
  template <class Visit>
  void visit_each(Visit&& visit) const {
    // The walking thread read these bytes on another core: asked for a few records ahead, they
    // are here when the visitor reads them.
    constexpr std::size_t prefetch_ahead = 8;
    PerfDataRecord record;
    for (std::size_t i = 0; i < records.size(); ++i) {
      if (i + prefetch_ahead < records.size())
        __builtin_prefetch(address_of(records[i + prefetch_ahead]));
      visit(rebuilt(records[i], record));
    }
  }
  // The same with the records that are not samples only.
  template <class Visit>
  void visit_not_samples(Visit&& visit) const {
    PerfDataRecord record;
    for (std::uint32_t i : not_samples) visit(rebuilt(records[i], record));
  }

 private:
  const std::byte* address_of(const BatchedRecord& entry) const {
    return entry.copied ? copies.data() + entry.where
                        : reinterpret_cast<const std::byte*>(entry.where);
  }
  const PerfDataRecord& rebuilt(const BatchedRecord& entry, PerfDataRecord& record) const {
    const std::byte* at = address_of(entry);
    std::memcpy(&record.view.header, at, sizeof record.view.header);
    record.view.bytes = std::span<const std::byte>(at, record.view.header.size);
    record.offset = entry.offset;
    record.time = entry.time;
    record.event = entry.event;
    return record;
  }
};

}  // namespace perfscope::detail
