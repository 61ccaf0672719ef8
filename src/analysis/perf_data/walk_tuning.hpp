// How the reader's walks go through a mapped file: the step in which pages are mapped and given
// back, how far ahead cache lines are asked for. Shared by the walks in perf_data_reader.cpp and
// picked_walks.cpp.
#pragma once

#include <cstdint>

#include "perfscope/abi/record_type.hpp"

namespace perfscope::perf_data {

// How much of a mapped file a walk reads before giving the pages behind it back.
inline constexpr std::uint64_t drop_step = 8 << 20;
// How far ahead of the record being read the walk asks for the file's cache lines: the hardware
// prefetcher stops at each 4 KiB page, and a walk that waited for every line spent a fifth of a
// report's time in the first load of a record.
inline constexpr std::uint64_t prefetch_distance = 2048;
inline constexpr std::uint64_t cache_line = 64;

constexpr std::uint32_t type_of(abi::UserRecordType type) {
  return static_cast<std::uint32_t>(type);
}

}  // namespace perfscope::perf_data
