// The values perf record's options take, read as perf reads them, and the perf record options
// perfscope takes as perf does or refuses saying why (-z, -s, --user-regs): so that what a perf
// user types every day either works or says what to do instead.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"

namespace perfscope::cli {

// -F HZ|max: samples per second, or the kernel's maximum (kernel.perf_event_max_sample_rate).
// Throws CLI::ValidationError naming `option` for anything else.
std::uint64_t parse_frequency(const std::string& text, const char* option = "-F");

// -m DATA[,AUX] as perf takes it: pages, or a size with B, K, M or G ("-m 16M"); either part
// may be left out ("-m ,64"). A count that is not a power of two is rounded up to one, as perf
// does, and `rounded` says so ("-m 3: rounded up to 4 pages (16 KiB), as perf does").
std::pair<std::size_t, std::size_t> parse_mmap_pages(const std::string& text, std::string& rounded);

// -k NAME|NUMBER as perf: monotonic, monotonic_raw, realtime, boottime, tai, their short
// names (mono, raw, real, boot), with or without CLOCK_, any case; or a clockid number.
int parse_clockid(const std::string& text);

// --synth as perf takes it: no (none), all, or task, mmap (task too) and cgroup, comma-separated,
// any case. Throws CLI::ValidationError naming --synth for anything else.
RecordOptions::Synthesis parse_synthesis(const std::string& text);

// A size as perf's --max-size: bytes, or with B, K, M or G. Throws CLI::ValidationError.
std::uint64_t parse_size(const std::string& text, const char* option);

// The --filter (and --exclude-perf) options of a parsed record command paired with the -e each
// follows, as perf pairs them: a filter is for every event of the -e list before it.
// `count_events` says how many events a list holds. Throws std::invalid_argument for a --filter
// with no -e before it.
std::vector<RecordOptions::EventFilter> event_filters_in_order(
    const CLI::App& app, const std::function<std::size_t(const std::string&)>& count_events);

// Sets each filter on the events of its -e (record's and stat's): perf's refusal for an event
// that is not a tracepoint (std::invalid_argument).
void apply_event_filters(std::vector<EventGroupSpec>& groups,
                         const std::vector<RecordOptions::EventFilter>& filters);

// -I/--intr-regs and --user-regs: perf's register names, any case, comma-separated; empty: every
// general register; "?" throws the list. Throws CLI::ValidationError naming `option`.
std::uint64_t parse_register_list(const std::string& text, const char* option);

// -j as perf: its branch filter names (any, any_call, ..., u, k, hv) into PERF_SAMPLE_BRANCH_*
// bits; privilege levels alone mean every taken branch at them.
std::uint64_t parse_branch_filter(const std::string& text);

// perf record's everyday options into `options` (-T, -d, -q, -N, -B, --switch-events, -P, -k,
// --all-user, --all-kernel, --user/kernel-callchains, -R, --sample-identifier, --no-buffering,
// --dry-run, --timestamp-filename, --max-size, the sample fields (-I, --user-regs,
// --phys-data, --data/code-page-size, -W, --transaction, --all-cgroups, --buildid-mmap, -b, -j),
// --group, --exclude-perf, -r; --filter is read by event_filters_in_order); -z, -s and the BPF
// compiler's options refused with the reason and what to do instead.
void add_perf_record_options(CLI::App& app, RecordOptions& options);

}  // namespace perfscope::cli
