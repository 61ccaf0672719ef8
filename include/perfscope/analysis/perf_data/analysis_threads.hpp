// How many threads an analysis of a recording runs on (--threads).
#pragma once

#include <cstddef>
#include <cstdint>

namespace perfscope {

class PerfDataReader;

// Below this much data a recording is analysed on one thread when the user did not ask for a
// number: the workers' start and each one's own warm-up (symbol tables, address caches) cost
// more than they save. Measured with bench/parallel_analysis_benchmark.sh (docs/ARCHITECTURE.md).
inline constexpr std::uint64_t parallel_analysis_min_bytes = 16 << 20;

// The CPUs this process may run on (its affinity mask), at least 1.
std::size_t usable_cpus() noexcept;

// The most threads the default takes: the walk stays on one thread (about a fifth of one
// thread's work), so more workers than this gain nothing, and each holds its own tables.
inline constexpr std::size_t default_analysis_threads_limit = 16;

// `requested` threads (0: the usable CPUs up to default_analysis_threads_limit, or 1 below
// parallel_analysis_min_bytes of data); an explicit number is taken as it is.
std::size_t analysis_threads(std::size_t requested, std::uint64_t data_bytes) noexcept;

// The same for `reader`'s recording, its user stack copies (DWARF call graphs) weighed as the
// small part of the work they are: a perf `--call-graph dwarf` file of 37K samples (312 MiB)
// took 130 ms on one thread and 139 on two, the walk through its pages being most of it. Its
// data counts as if each sample were 128 bytes.
std::size_t analysis_threads(std::size_t requested, const PerfDataReader& reader) noexcept;

}  // namespace perfscope
