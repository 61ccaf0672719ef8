// The values perf record's options take, read as perf reads them, and the perf record options
// perfscope takes as perf does or refuses saying why (-z, -s, --user-regs): so that what a perf
// user types every day either works or says what to do instead.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace perfscope::cli {

struct RecordOptions;

// -F HZ|max: samples per second, or the kernel's maximum (kernel.perf_event_max_sample_rate).
// Throws CLI::ValidationError naming `option` for anything else.
std::uint64_t parse_frequency(const std::string& text, const char* option = "-F");

// -m DATA[,AUX] as perf takes it: pages, or a size with B, K, M or G ("-m 16M"); either part
// may be left out ("-m ,64"). A count that is not a power of two is rounded up to one, as perf
// does, and `rounded` says so ("-m 3: rounded up to 4 pages (16 KiB), as perf does").
std::pair<std::size_t, std::size_t> parse_mmap_pages(const std::string& text, std::string& rounded);

// -T, -d, -q, -N, -B/--no-buildid, --switch-events into `options`; -z, -s and --user-regs
// refused with the reason and what to do instead.
void add_perf_record_options(CLI::App& app, RecordOptions& options);

}  // namespace perfscope::cli
